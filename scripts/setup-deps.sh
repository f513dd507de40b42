#!/usr/bin/env bash
# Installs every Debian package rlx needs to build and test. Idempotent and non-interactive:
# packages already present are not touched, and apt-get runs only when something is missing.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  libboost-dev          # Boost.DLL (header-only) for plugin loading
  libfmt-dev libspdlog-dev libcxxopts-dev libtomlplusplus-dev
  nlohmann-json3-dev    # JSON: safetensors headers, config.json
  catch2                # Catch2 v2
  libpcre2-dev          # tokenizer: pre-tokenizer regexes (PCRE2, Unicode classes, JIT)
  libutf8proc-dev       # tokenizer: NFC normalization (Qwen)
  python3 python3-numpy # test-model maker and float64 references
  # Vulkan backend: loader + headers, the GLSL->SPIR-V compiler, and mesa's lavapipe (a CPU
  # Vulkan device, so the backend builds and its conformance runs without a GPU)
  libvulkan-dev glslc mesa-vulkan-drivers
  # rocm backend: Debian's HIP compiler and runtime (builds for AMD GPUs; none is needed to
  # build or to load the plugin). The cuda backend uses the CUDA toolkit in /usr/local/cuda.
  hipcc libamdhip64-dev
  # fuzzing (scripts/fuzz.sh, the CI fuzz smoke): clang with libFuzzer and the sanitizers
  clang-15 libclang-common-15-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
echo "setup-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
