#!/usr/bin/env bash
# The whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer (GCC):
#   scripts/sanitize.sh [CTEST ARGS...]       e.g. scripts/sanitize.sh -R model_parity
# Builds ${RLX_SANITIZE_BUILD_DIR:-build-asan} (RelWithDebInfo, every C/C++ file instrumented:
# core, CLI, cpu / vulkan / null / cudaemu plugins, tests) and runs ctest there. Any ASan
# report (overflow, use-after-free, leak), any UBSan report, fails the test that hit it.
# The cuda and rocm plugins are left out: nvcc / hipcc do not take these flags (their host
# code is the cudaemu plugin's, which is instrumented, and the kernels run there too).
# Jobs: RLX_JOBS (default nproc). Takes about 4x the plain test suite's time.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${RLX_SANITIZE_BUILD_DIR:-$root/build-asan}"

"$root/scripts/setup-deps.sh"
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
RLX_BUILD_DIR="$build" "$root/scripts/build.sh" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_C_FLAGS=$san" "-DCMAKE_CXX_FLAGS=$san" "-DCMAKE_EXE_LINKER_FLAGS=$san" \
  "-DCMAKE_SHARED_LINKER_FLAGS=$san" "-DCMAKE_MODULE_LINKER_FLAGS=$san" \
  -DRLX_CUDA=OFF -DRLX_ROCM=OFF

# The first report ends the process with a failure exit status. allocator_may_return_null: an
# impossible allocation returns null, as without ASan, so its error message is what is tested.
# intercept_tls_get_addr=0: GCC 12's LeakSanitizer otherwise records a bogus dynamic-TLS range
# after plugins are loaded around forked probes, and its exit-time leak scan then crashes
# ("Tracer caught signal 11 ... DTLS 7 at 0x74f-0x500001851"); a sanitizer runtime bug.
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:intercept_tls_get_addr=0:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$root/scripts/sanitize.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
cd "$build"
env -u RLX_PLUGIN_PATH ctest --output-on-failure -j "${RLX_JOBS:-$(nproc)}" --timeout 2400 "$@"
