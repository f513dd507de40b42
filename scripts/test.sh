#!/usr/bin/env bash
# The one command to test rlx on a fresh machine: dependencies if missing, build, ctest
# (and, with RLX_FUZZ_SMOKE=<seconds>, a short fuzz run; see the end).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${RLX_BUILD_DIR:-$root/build}"

"$root/scripts/setup-deps.sh"
"$root/scripts/build.sh" "$@"
cd "$build"
# Each test sets its own plugin path; a user's environment must not leak in.
env -u RLX_PLUGIN_PATH ctest --output-on-failure -j "${RLX_JOBS:-$(nproc)}" --timeout 900
# The fuzz smoke, when RLX_FUZZ_SMOKE=<seconds> is set (CI sets 60): each fuzz target that long
# in a clang + libFuzzer build of its own (build-fuzz/; scripts/fuzz.sh, tests/fuzz/README.md).
if [ -n "${RLX_FUZZ_SMOKE:-}" ]; then
  "$root/scripts/fuzz.sh" "$RLX_FUZZ_SMOKE"
fi
