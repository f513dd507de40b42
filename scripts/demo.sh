#!/usr/bin/env bash
# The one command to try rlx on a fresh machine: dependencies if missing, build, make a small
# demo model if missing (synthetic random weights, Llama-3.2-shaped, Q8_0), then generate.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${RLX_BUILD_DIR:-$root/build}"
model="${RLX_DEMO_MODEL:-$build/demo/demo-llama32-q8_0.gguf}"

"$root/scripts/setup-deps.sh"
"$root/scripts/build.sh"

if [ ! -f "$model" ]; then
  mkdir -p "$(dirname "$model")"
  echo "demo: making $model"
  python3 "$root/scripts/make_test_model.py" --family llama32 --dtype q8_0 --out "$model" \
    --dim 512 --layers 4 --heads 8 --kv-heads 2 --ffn 1536 --vocab 4096 --std 0.05 --seed 1
fi

echo
"$build/bin/rlx" --version
"$build/bin/rlx" devices | sed -n '/^plugins:/,/^$/p'
echo "demo: rlx run --weights $model --prompt-ids 1,2,3 --max-tokens 16 --seed 1"
"$build/bin/rlx" run --weights "$model" --prompt-ids 1,2,3 --max-tokens 16 --seed 1
