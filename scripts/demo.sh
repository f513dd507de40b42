#!/usr/bin/env bash
# The one command to try rlx on a fresh machine: dependencies if missing, build, then show what
# the runtime found. (Generation from a demo model arrives with the model plugins.)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${RLX_BUILD_DIR:-$root/build}"

"$root/scripts/setup-deps.sh"
"$root/scripts/build.sh"
echo
"$build/bin/rlx" --version
"$build/bin/rlx" devices
