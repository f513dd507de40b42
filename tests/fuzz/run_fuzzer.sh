#!/usr/bin/env bash
# Runs one libFuzzer target.
#   run_fuzzer.sh BINARY SECONDS MAX_LEN WORK_DIR [INPUT_DIR...]
# SECONDS = 0: regression: every file in the input dirs runs once (-runs=0); a crash fails.
# SECONDS > 0: fuzz that long from the input dirs; new corpus entries go to WORK_DIR/corpus
# (the input dirs are only read), crash inputs to WORK_DIR/crashes/, the log to WORK_DIR/log.
# Input dirs that do not exist are skipped. Exit status: libFuzzer's (nonzero on a crash).
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: $0 BINARY SECONDS MAX_LEN WORK_DIR [INPUT_DIR...]" >&2; exit 2; }
bin=$1 secs=$2 maxlen=$3 work=$4
shift 4
inputs=()
for d in "$@"; do [ -d "$d" ] && inputs+=("$d"); done
mkdir -p "$work/corpus" "$work/crashes"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export RLX_LOG_LEVEL=off
common=(-max_len="$maxlen" -rss_limit_mb=2048 -timeout=20 -artifact_prefix="$work/crashes/"
  -print_final_stats=1)
if [ "$secs" = 0 ]; then
  # Each input as a file argument: libFuzzer runs them once and never writes to the dirs.
  files=()
  for d in "${inputs[@]}"; do
    while IFS= read -r -d '' f; do files+=("$f"); done < <(find "$d" -type f ! -name '.*' -print0)
  done
  if [ ${#files[@]} -eq 0 ]; then echo "run_fuzzer: no inputs"; exit 0; fi
  echo "run_fuzzer: $(basename "$bin"): ${#files[@]} inputs"
  exec "$bin" "${common[@]}" "${files[@]}"
fi
"$bin" "${common[@]}" -max_total_time="$secs" "$work/corpus" "${inputs[@]}" 2>&1 | tee "$work/log"
exit "${PIPESTATUS[0]}"
