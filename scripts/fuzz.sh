#!/usr/bin/env bash
# Fuzzes the parsers with libFuzzer + ASan + UBSan (tests/fuzz):
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default 600 s, every target)
# Configures and builds ${RLX_FUZZ_BUILD_DIR:-build-fuzz} with clang (RLX_CLANG_VERSION, default
# 15; Debian 12: clang-15, whose libclang-common-15-dev has libFuzzer), makes the seed corpora (tests/fuzz/make_seeds.sh),
# first replays tests/corpus/<target>/ and the seeds, then runs each target in turn for
# SECONDS. Jobs: RLX_JOBS (default nproc). Leaves, per target:
#   build-fuzz/crashes/<target>/   crash-*, leak-*, timeout-*, oom-* inputs (if any)
#   build-fuzz/fuzz-work/<target>/ corpus grown during the run, and the libFuzzer log
# and prints a summary (seconds, execs, execs/s, cov, ft, corpus, crashes); build-fuzz/
# fuzz-summary.txt has the same. Exits nonzero if any target crashed.
# A crash input that is fixed goes to tests/corpus/<target>/ (ctest fuzz_regress_<target>).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
secs=${1:-600}
shift || true
build="${RLX_FUZZ_BUILD_DIR:-$root/build-fuzz}"
jobs="${RLX_JOBS:-$(nproc)}"
ver="${RLX_CLANG_VERSION:-15}"
# The targets and their -max_len: the set(RLX_FUZZ_MAXLEN_<target> N) lines of
# tests/fuzz/CMakeLists.txt.
maxlens=$(sed -n 's/^set(RLX_FUZZ_MAXLEN_\([a-z_]*\) \([0-9]*\))$/\1 \2/p' \
  "$root/tests/fuzz/CMakeLists.txt")
mapfile -t all < <(cut -d' ' -f1 <<< "$maxlens")
maxlen() { awk -v t="$1" '$1 == t { print $2 }' <<< "$maxlens"; }
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")

if [ ! -f "$build/CMakeCache.txt" ]; then
  cc=$(command -v "clang-$ver" || command -v clang || true)
  cxx=$(command -v "clang++-$ver" || command -v clang++ || true)
  [ -n "$cxx" ] || { echo "fuzz.sh: clang++-$ver not found (scripts/setup-deps.sh installs clang-15)" >&2; exit 2; }
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  CC=$cc CXX=$cxx cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DRLX_FUZZ=ON -DRLX_BUILD_TESTS=ON -DRLX_VULKAN=OFF -DRLX_CUDA=OFF -DRLX_ROCM=OFF
fi
cmake --build "$build" -j "$jobs" --target "${targets[@]}"

seeds="$build/tests/fuzz/seeds"
"$root/tests/fuzz/make_seeds.sh" "$seeds"

summary="$build/fuzz-summary.txt"
: > "$summary"
printf '%-22s %6s %10s %8s %6s %6s %7s %8s\n' target secs execs exec/s cov ft corpus crashes \
  | tee -a "$summary"
failed=0
for t in "${targets[@]}"; do
  bin="$build/bin/$t"
  work="$build/fuzz-work/$t"
  crashes="$build/crashes/$t"
  rm -rf "$work" "$crashes"  # this run's inputs only
  mkdir -p "$work" "$crashes"
  # Replay first: a known crash shows up at once, whatever the time budget.
  if ! "$root/tests/fuzz/run_fuzzer.sh" "$bin" 0 "$(maxlen "$t")" "$work/replay" \
      "$root/tests/corpus/$t" "$seeds/$t" > "$work/replay.log" 2>&1; then
    echo "fuzz.sh: $t: a corpus/seed input fails (see $work/replay.log)" | tee -a "$summary"
    cp -f "$work/replay/crashes/"* "$crashes/" 2>/dev/null || true
    failed=1
    continue
  fi
  start=$(date +%s)
  rc=0
  "$root/tests/fuzz/run_fuzzer.sh" "$bin" "$secs" "$(maxlen "$t")" "$work" \
    "$root/tests/corpus/$t" "$seeds/$t" > /dev/null 2>&1 || rc=$?
  took=$(( $(date +%s) - start ))
  cp -f "$work/crashes/"* "$crashes/" 2>/dev/null || true
  log="$work/log"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<< "$last")
  n=$(find "$crashes" -type f | wc -l)
  printf '%-22s %6s %10s %8s %6s %6s %7s %8s\n' "$t" "$took" "${execs:-?}" "${rate:-?}" \
    "${cov:-?}" "${ft:-?}" "${corp:-?}" "$n" | tee -a "$summary"
  if [ "$rc" -ne 0 ] || [ "$n" -gt 0 ]; then
    echo "fuzz.sh: $t: exit $rc; inputs in $crashes; log $log" | tee -a "$summary"
    grep -m3 -E 'ERROR: |runtime error|SUMMARY' "$log" | sed 's/^/  /' | tee -a "$summary" || true
    failed=1
  fi
done
exit $failed
