#!/usr/bin/env bash
# Configures and builds rlx into ${RLX_BUILD_DIR:-build} (Release, Ninja, ccache when present).
# Extra arguments go to the CMake configure step, e.g. -DRLX_VULKAN=OFF.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${RLX_BUILD_DIR:-$root/build}"
jobs="${RLX_JOBS:-$(nproc)}"

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "$@"
elif [ $# -gt 0 ]; then
  cmake -S "$root" -B "$build" "$@"
fi
cmake --build "$build" -j "$jobs"
