#!/usr/bin/env bash
# The one command to test rlx on a fresh machine: dependencies if missing, build, ctest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${RLX_BUILD_DIR:-$root/build}"

"$root/scripts/setup-deps.sh"
"$root/scripts/build.sh" "$@"
cd "$build"
# Each test sets its own plugin path; a user's environment must not leak in.
env -u RLX_PLUGIN_PATH ctest --output-on-failure -j "${RLX_JOBS:-$(nproc)}" --timeout 900
