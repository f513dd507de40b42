#!/usr/bin/env bash
# rlx's last-position logits against llama.cpp's on the benchmark kit's big models (issue 6's
# correctness check). Needs ../shared/bench set up (setup.sh, models.sh --only big); not part
# of CI. Usage: scripts/compare-logits.sh [MODEL ...]   (default: the six big models)
# Tolerances are about twice llama.cpp's own batch-vs-token noise floor (../shared/bench/README.md).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kit="$root/../shared/bench"
W="${RLX_BENCH_DIR:-$HOME/.cache/rlx-bench}"
rlx="${RLX:-$root/build/bin/rlx}"
py=/usr/bin/python3
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(llama1b-q8_0 llama1b-q4_0 llama1b-q4_k qwen3-0.6b-q8_0 qwen3-0.6b-q4_0 qwen3-0.6b-q4_k)
# The kit's fixed 64-id prompt, with BOS first for the llama shapes.
ids=$(seq 0 63 | awk '{printf "%s%d", (NR>1?",":""), ($1*7919+13)%4096}')
status=0
for m in "${models[@]}"; do
  case "$m" in
    llama1b-q4_k) tol=0.15; prompt="128000,$ids" ;;
    llama1b-*) tol=0.1; prompt="128000,$ids" ;;
    *) tol=0.05; prompt="$ids" ;;
  esac
  out="$W/out/logits/rlx-$m.f32"
  mkdir -p "$W/out/logits"
  "$rlx" run --weights "$W/models/$m.gguf" --prompt-ids "$prompt" --max-tokens 1 \
    --temperature 0 --threads 2 --logits-out "$out" >/dev/null 2>&1
  echo "== $m (rel RMS <= $tol)"
  "$py" "$kit/logits.py" "$m" --tokens "$prompt" --compare "$out" --max-rel-rms "$tol" \
    2>&1 | grep -Ev "^\[" || status=1
done
exit $status
