#!/usr/bin/env bash
# The cuda backend on a lent GPU machine (one NVIDIA H200, see /work/.library/device/), in ONE
# device call. First, here (Debian, with the -dev packages): `bash scripts/device-bundle.sh`
# (makes .devdeps/, the dependencies that machine lacks: header-only C++ packages, PCRE2 and
# utf8proc as static archives with relocatable pkg-config files, a python3 pkg-config for a
# machine without one). Then the call:
#
#   run(command="bash scripts/device-check.sh", carry=[".devdeps"], timeout_s=560)
#
# and, for a short rerun on the still-warm machine (build-device/ and the models are kept):
#
#   run(command="bash scripts/device-check.sh --quick", carry=[".devdeps"], timeout_s=400)
#
# Steps, each timed; a failing step is FAIL in the table and the next steps still run where they
# can (a step that needs the build is SKIP without one). The whole run keeps to a budget (default
# 465 s, under 8 minutes): a step only gets the time left, less what the bench needs.
#   info         nvidia-smi, nvcc, compiler, cmake, pkg-config, glibc versions
#   build        build-device/: -DRLX_CUDA=ON -DRLX_CUDA_ARCHS=90, only the targets needed; with
#                .devdeps/: -DCMAKE_PREFIX_PATH=.devdeps, PKG_CONFIG_PATH=.devdeps/lib/pkgconfig:...
#                and -DPKG_CONFIG_EXECUTABLE= the machine's pkg-config/pkgconf, else
#                .devdeps/bin/pkg-config (python3)
#   bandwidth    scripts/device/bandwidth.cu: copy and streaming-read GB/s (the decode roofline)
#   devices      `rlx devices` lists cuda:0
#   conformance  rlx-conformance --backend cuda (every op against float64 and against cpu)
#   parity*      tests/models/parity.py --device cuda: tiny models against the float64 reference
#                (f32/bf16/quantized unpacked; packed GGUF blocks with int8 activations; packed
#                with f32 activations and no tensor cores)
#   models       waits for the bench models, generated in the background from the start:
#                Llama-3.2-1B and Qwen3-0.6B shapes (random weights, std 0.02), Q4_K and Q8_0
#   bench        `rlx bench --device cuda --packed` pp512 / tg128, 3 reps, per model
# Then ONE markdown table (stdout and $OUT/device-check.md): step, status, seconds, detail, and
# per model the weight bytes, pp512 and tg128 tok/s, decode GB/s = weight bytes x tg tok/s, and
# that as % of the measured read bandwidth (goal: >= 70% for the 1B Q4_K model).
# Files in $OUT (when set; else the work folder): device-check.md, device-check.log (every
# step's full output), bench.json, bandwidth.txt.
#
# Options:  --quick   conformance of a few ops only, no Q8_0 models, no exact-path parity
# Environment (mostly for a dry run without a GPU; see the end of this comment):
#   RLX_DEVICE_CHECK_DEVICE=cuda     the rlx device under test (cudaemu, cpu for a dry run)
#   RLX_DEVICE_CHECK_BUILD=DIR       use this existing build (bin/rlx ...); no build step
#   RLX_DEVICE_CHECK_TINY=1          tiny stand-in models (and a short bench) instead of 1B/0.6B
#   RLX_DEVICE_CHECK_BUDGET=465      seconds for the whole run
#   RLX_DEVICE_CHECK_WORK=/tmp/rlx-device-check   models, logs, parity work
#   RLX_DEVICE_CHECK_JOBS=$(nproc)   build jobs
#   RLX_DEVICE_CHECK_LIMIT_SCALE=1   multiplies each step's time limit (the emulator is slow)
#   RLX_DEVICE_CHECK_PP / _TG / _REPS  bench sizes (default 512 / 128 / 3; tiny: 32 / 8 / 3)
#   PYTHON=python3                   a python3 with numpy
# Dry run here, on the emulated backend:
#   RLX_DEVICE_CHECK_DEVICE=cudaemu RLX_DEVICE_CHECK_BUILD=build RLX_DEVICE_CHECK_TINY=1 \
#     RLX_DEVICE_CHECK_BUDGET=3000 RLX_DEVICE_CHECK_LIMIT_SCALE=4 bash scripts/device-check.sh --quick
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

quick=0
for a in "$@"; do
  case $a in
    --quick) quick=1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "device-check: unknown argument '$a' (--quick, --help)" >&2; exit 2 ;;
  esac
done

now_ms() { date +%s%3N; }
T0=$(now_ms)
DEV=${RLX_DEVICE_CHECK_DEVICE:-cuda}
TINY=${RLX_DEVICE_CHECK_TINY:-0}
BUDGET=${RLX_DEVICE_CHECK_BUDGET:-465}
W=${RLX_DEVICE_CHECK_WORK:-/tmp/rlx-device-check}
JOBS=${RLX_DEVICE_CHECK_JOBS:-$(nproc)}
PY=${PYTHON:-python3}
LIMIT_SCALE=${RLX_DEVICE_CHECK_LIMIT_SCALE:-1}
DEADLINE=$((T0 + BUDGET * 1000))
RES=${OUT:-$W}                     # where the results go
BUILD=${RLX_DEVICE_CHECK_BUILD:-$root/build-device}
[[ $BUILD == /* ]] || BUILD=$root/$BUILD
RLX=$BUILD/bin/rlx
CONF=$BUILD/bin/rlx-conformance
LOG=$RES/device-check.log
STEPS=$W/steps.tsv
mkdir -p "$W/logs" "$W/models" "$RES"
: >"$LOG"
: >"$STEPS"
rm -f "$W"/bench-*.json "$W/bandwidth.txt" "$W"/logs/*.log "$W"/logs/*.detail
# The plugins next to the binaries only; default log level.
export RLX_PLUGIN_PATH=
unset RLX_LOG_LEVEL
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
# nvcc lives in /usr/local/cuda/bin, which a fresh shell's PATH may lack.
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH=$PATH:/usr/local/cuda/bin
fi
# .devdeps (scripts/device-bundle.sh): its .pc files before any of the machine's (also for the
# re-configure a build may run); where it holds a shared library (no static archive was there to
# bundle), that folder for the loader too.
if [[ -d $root/.devdeps ]]; then
  export PKG_CONFIG_PATH=$root/.devdeps/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  if compgen -G "$root/.devdeps/lib/*.so*" >/dev/null; then
    export LD_LIBRARY_PATH=$root/.devdeps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  fi
fi
export root DEV TINY W JOBS PY BUILD RLX CONF quick

say() { printf '%s\n' "$*" | tee -a "$LOG"; }
elapsed() { echo $((($(now_ms) - T0) / 1000)); }
have_gpu() { command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; }

# ---- bench models: generated in the background from the start (python + numpy, one core each)
models=()
if [[ $TINY == 1 ]]; then
  llama_shape="--family llama32 --dim 256 --layers 2 --heads 4 --kv-heads 2 --ffn 512 --vocab 2048 --tied"
  qwen_shape="--family qwen3 --dim 256 --layers 2 --heads 4 --kv-heads 2 --head-dim 64 --ffn 512 --vocab 2048 --tied"
  llama_name=llama-tiny qwen_name=qwen3-tiny
  PP=${RLX_DEVICE_CHECK_PP:-32} TG=${RLX_DEVICE_CHECK_TG:-8}
else
  # Llama-3.2-1B and Qwen3-0.6B (config.json shapes), tied embeddings, random N(0, 0.02) weights.
  llama_shape="--family llama32 --dim 2048 --layers 16 --heads 32 --kv-heads 8 --ffn 8192 --vocab 128256 --tied"
  qwen_shape="--family qwen3 --dim 1024 --layers 28 --heads 16 --kv-heads 8 --head-dim 128 --ffn 3072 --vocab 151936 --tied"
  llama_name=llama-1b qwen_name=qwen3-0.6b
  PP=${RLX_DEVICE_CHECK_PP:-512} TG=${RLX_DEVICE_CHECK_TG:-128}
fi
REPS=${RLX_DEVICE_CHECK_REPS:-3}
export PP TG REPS
dtypes=(q4_k)
((quick)) || dtypes+=(q8_0)
declare -A shape_of=()
for dt in "${dtypes[@]}"; do
  models+=("$llama_name-$dt" "$qwen_name-$dt")
  shape_of[$llama_name-$dt]="$llama_shape --dtype $dt"
  shape_of[$qwen_name-$dt]="$qwen_shape --dtype $dt"
done
gen_pids=()
for m in "${models[@]}"; do
  f=$W/models/$m.gguf
  rcf=$W/logs/gen-$m.rc
  # A file from an earlier run on this machine is complete (the generator renames at the end).
  if [[ -f $f && -f $rcf ]] && [[ $(cut -d' ' -f1 "$rcf") == 0 ]]; then continue; fi
  rm -f "$rcf"
  # shellcheck disable=SC2086  # the shape is a list of flags
  (
    s=$(now_ms)
    rc=0
    nice -n 5 "$PY" scripts/make_test_model.py ${shape_of[$m]} --std 0.02 --seed 7 --quiet \
      --out "$f" >"$W/logs/gen-$m.out" 2>&1 || rc=$?
    echo "$rc $((($(now_ms) - s) / 1000))" >"$rcf"
  ) &
  gen_pids+=($!)
done

# ---- steps
# step <id> <label> <max seconds> <reserve seconds> <function> [args...]
# Runs the function in its own bash (set -euo pipefail) under timeout, with its output in
# $W/logs/<id>.log; the function may write a one-line detail to $W/logs/<id>.detail and exit 77
# for SKIP. The limit is the max, or the budget left less the reserve if that is smaller.
step() {
  local id=$1 label=$2 max=$3 reserve=$4
  shift 4
  max=$((max * LIMIT_SCALE))
  local left=$(((DEADLINE - $(now_ms)) / 1000 - reserve))
  local limit=$((max < left ? max : left))
  local log=$W/logs/$id.log det=$W/logs/$id.detail status rc=0 s t detail
  if ((limit < 5)); then
    printf '%s\t%s\t%s\t%s\t%s\n' "$id" "$label" SKIP 0 "no time left in the ${BUDGET}s budget" >>"$STEPS"
    say "[$(elapsed)s] $label: SKIP (no time left)"
    return 0
  fi
  say "[$(elapsed)s] $label: running (limit ${limit}s)"
  s=$(now_ms)
  timeout -k 10 "$limit" bash -c 'set -euo pipefail; "$@"' "$id" "$@" >"$log" 2>&1 || rc=$?
  t=$(((($(now_ms) - s) + 50) / 100))
  t="$((t / 10)).$((t % 10))"
  case $rc in
    0) status=PASS ;;
    77) status=SKIP ;;
    124 | 137) status=TIMEOUT ;;
    *) status=FAIL ;;
  esac
  detail=
  [[ -f $det ]] && detail=$(tr '\t\n' '  ' <"$det")
  detail=${detail% }
  [[ $status == TIMEOUT ]] && detail="killed after ${limit}s; $detail"
  [[ $status == FAIL && -z $detail ]] && detail="exit $rc: $(grep -v '^\s*$' "$log" | tail -n 1 | cut -c1-150)"
  printf '%s\t%s\t%s\t%s\t%s\n' "$id" "$label" "$status" "$t" "$detail" >>"$STEPS"
  say "[$(elapsed)s] $label: $status in ${t}s${detail:+ - $detail}"
  { echo "==== $label ($status, ${t}s): $log"; cat "$log"; echo; } >>"$LOG"
  if [[ $status == FAIL || $status == TIMEOUT ]]; then
    say "---- last lines of $log:"
    tail -n 15 "$log" | cut -c1-300 | tee -a "$LOG"
  fi
}
detail() { printf '%s\n' "$*" >"$W/logs/$STEP_ID.detail"; }
need_rlx() { [[ -x $RLX ]] || { detail "no rlx binary ($RLX)"; exit 77; }; }

s_info() {
  set +e
  echo "== host: $(uname -srm), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
  grep PRETTY_NAME /etc/os-release 2>/dev/null
  ldd --version 2>&1 | head -n 1
  echo "== nvidia-smi"; nvidia-smi -L 2>&1
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv 2>&1
  echo "== nvcc"; nvcc --version 2>&1
  echo "== c++"; c++ --version 2>&1 | head -n 1
  echo "== cmake / ninja"; cmake --version 2>&1 | head -n 1; ninja --version 2>&1
  echo "== pkg-config"; command -v pkg-config pkgconf 2>&1; pkg-config --version 2>&1
  echo "== python"; "$PY" -c 'import sys, numpy; print(sys.version.split()[0], "numpy", numpy.__version__)' 2>&1
  set -e
  local gpu nv cxx cm glibc
  gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1 || true)
  nv=$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p' || true)
  cxx=$(c++ -dumpfullversion 2>/dev/null || true)
  cm=$(cmake --version 2>/dev/null | sed -n '1s/cmake version //p' || true)
  glibc=$(ldd --version 2>&1 | sed -n '1s/.* //p' || true)
  detail "gpu ${gpu:-none}; nvcc ${nv:-none}; c++ ${cxx:-?}; cmake ${cm:-none}; glibc ${glibc:-?}"
}

s_build() {
  local gen=() prefix=() targets pc=
  command -v cmake >/dev/null || { detail "no cmake"; exit 1; }
  command -v ninja >/dev/null && gen=(-G Ninja)
  if [[ -d $root/.devdeps ]]; then
    prefix=(-DCMAKE_PREFIX_PATH="$root/.devdeps")
    # core/ finds PCRE2 and utf8proc with pkg_check_modules: the machine's pkg-config if it has
    # one (PKG_CONFIG_PATH puts .devdeps first), else the bundle's python3 one. (Without the
    # option, find_program would take .devdeps/bin/pkg-config anyway, from CMAKE_PREFIX_PATH.)
    pc=$(command -v pkg-config || command -v pkgconf || true)
    [[ -n $pc ]] || pc=$root/.devdeps/bin/pkg-config
    prefix+=(-DPKG_CONFIG_EXECUTABLE="$pc")
  fi
  if [[ ! -f $BUILD/CMakeCache.txt ]]; then
    cmake -S "$root" -B "$BUILD" "${gen[@]}" "${prefix[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DRLX_CUDA=ON -DRLX_CUDA_ARCHS=90 -DRLX_VULKAN=OFF -DRLX_ROCM=OFF -DRLX_BUILD_TESTS=ON \
      -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
  fi
  grep -E '^(fmt|spdlog|cxxopts|tomlplusplus|nlohmann_json|Boost|Catch2)_DIR:' "$BUILD/CMakeCache.txt" || true
  grep -E '^(PKG_CONFIG_EXECUTABLE|pkgcfg_lib_[A-Z0-9]+_[^:]+):' "$BUILD/CMakeCache.txt" || true
  targets=(rlx rlx-conformance rlx-backend-cuda rlx-model-llama32 rlx-model-qwen3 rlx-backend-cpu-generic)
  if [[ $(uname -m) == x86_64 ]]; then
    targets+=(rlx-backend-cpu-avx2 rlx-backend-cpu-avx512 rlx-backend-cpu-avx512vnni)
  fi
  cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}"
  detail "${#targets[@]} targets, -j$JOBS${prefix:+, deps from .devdeps}${pc:+, pkg-config $pc}"
}

s_bandwidth() {
  local nvcc bin=$W/bandwidth gib=4
  [[ $DEV == cuda ]] || { detail "device $DEV: not measured"; exit 77; }
  have_gpu || { detail "no NVIDIA GPU (nvidia-smi -L)"; exit 77; }
  nvcc=$(command -v nvcc) || { detail "no nvcc"; exit 1; }
  "$nvcc" -O3 -arch=sm_90 -o "$bin" "$root/scripts/device/bandwidth.cu"
  ((quick)) && gib=2
  "$bin" --gib "$gib" --reps 10 | tee "$W/bandwidth.txt"
  local rd cp
  rd=$(sed -n 's/^bandwidth.read_gbs=//p' "$W/bandwidth.txt")
  cp=$(sed -n 's/^bandwidth.copy_gbs=//p' "$W/bandwidth.txt")
  detail "read ${rd} GB/s; D2D copy ${cp} GB/s (read+write)"
  grep -q '^bandwidth.read_check=ok' "$W/bandwidth.txt"
}

s_devices() {
  need_rlx
  "$RLX" devices | tee "$W/devices.txt"
  local line
  line=$(grep -E "^ +$DEV:0 " "$W/devices.txt" | head -n 1 | sed -E 's/^ +//; s/ +/ /g' | cut -c1-110 || true)
  if [[ -z $line ]]; then
    detail "no $DEV:0; $(grep -E "backend-$DEV(-[a-z0-9]+)?\.so" "$W/devices.txt" | tail -n 1 | sed 's/^ *//' | cut -c1-160)"
    exit 1
  fi
  detail "$line"
}

s_conformance() {
  [[ -x $CONF ]] || { detail "no rlx-conformance ($CONF)"; exit 77; }
  local args=(--backend "$DEV") rc=0
  ((quick)) && args+=(--op matmul --op attention --op rms_norm --op embed)
  "$CONF" "${args[@]}" || rc=$?
  local sum
  sum=$(grep -E '^conformance: ' "$W/logs/$STEP_ID.log" | tail -n 1 || true)
  detail "${sum:-no summary line}$( ((quick)) && echo ' (quick: matmul, attention, rms_norm, embed)')"
  if grep -qE "(backend|variant) $DEV.*no device here" "$W/logs/$STEP_ID.log"; then
    detail "no $DEV device: nothing tested"
    exit 1
  fi
  exit "$rc"
}

# s_parity <work name> [parity.py args...]
s_parity() {
  need_rlx
  local name=$1 rc=0
  shift
  rm -rf "${W:?}/$name"
  "$PY" "$root/tests/models/parity.py" --rlx "$RLX" --work "$W/$name" --quick --device "$DEV" \
    --timeout 120 "$@" || rc=$?
  local sum bad
  sum=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$W/logs/$STEP_ID.log" | tail -n 1 || true)
  bad=$(grep -E '^FAIL ' "$W/logs/$STEP_ID.log" | head -n 3 | cut -c1-80 | tr '\n' ';' || true)
  detail "${sum:-no summary line}${bad:+; $bad}"
  exit "$rc"
}

s_models() {
  local m rcf missing=() parts=()
  while :; do
    missing=()
    for m in "$@"; do [[ -f $W/logs/gen-$m.rc ]] || missing+=("$m"); done
    ((${#missing[@]} == 0)) && break
    sleep 1
  done
  local bad=0
  for m in "$@"; do
    rcf=$W/logs/gen-$m.rc
    read -r rc secs <"$rcf"
    if [[ $rc == 0 ]]; then
      parts+=("$m $(du -m "$W/models/$m.gguf" | cut -f1) MB ${secs}s")
    else
      parts+=("$m FAILED (exit $rc)")
      bad=1
      cat "$W/logs/gen-$m.out"
    fi
  done
  local IFS=';'
  detail "${parts[*]} (generated in parallel, from the start)"
  exit "$bad"
}

s_bench() {
  need_rlx
  local m=$1 f=$W/models/$1.gguf
  [[ -f $f ]] || { detail "no model (generation failed or unfinished)"; exit 77; }
  "$RLX" bench --weights "$f" --device "$DEV" --packed --pp "$PP" --tg "$TG" --reps "$REPS" \
    --output json >"$W/bench-$m.json"
  cat "$W/bench-$m.json"
  "$PY" - "$W/bench-$m.json" >"$W/logs/$STEP_ID.detail" <<'EOF'
import json, sys
recs = json.load(open(sys.argv[1]))
print(", ".join(f"{r['test']} {r['avg_ts']:.1f} t/s" for r in recs))
EOF
}
export -f step detail need_rlx have_gpu s_info s_build s_bandwidth s_devices s_conformance \
  s_parity s_models s_bench
export W

run() { STEP_ID=$1 step "$@"; }  # STEP_ID reaches the function (its detail file)
export STEP_ID
nm=${#models[@]}
bench_reserve=$((nm * 25 + 10))   # what the models and the bench are guaranteed

say "device-check: device $DEV, budget ${BUDGET}s, $( ((quick)) && echo quick || echo full), models: ${models[*]}"
run info "info" 30 "$bench_reserve" s_info
if [[ -n ${RLX_DEVICE_CHECK_BUILD:-} ]]; then
  printf '%s\t%s\t%s\t%s\t%s\n' build build SKIP 0 "using $BUILD" >>"$STEPS"
  say "[$(elapsed)s] build: SKIP (using $BUILD)"
else
  run build "build" 330 "$bench_reserve" s_build
fi
run bandwidth "bandwidth" 60 "$bench_reserve" s_bandwidth
run devices "devices" 30 "$bench_reserve" s_devices
run conformance "conformance" 150 "$bench_reserve" s_conformance
run parity "parity" 120 "$bench_reserve" s_parity parity
run parity-packed "parity packed q8-act" 120 "$bench_reserve" s_parity parity-packed \
  --only q --rlx-arg=--packed --quant-thresh 6e-2
if ((!quick)); then
  # f32 activations, SIMT GEMM (the cpu's own switch too, for a dry run on cpu).
  RLX_CUDA_QUANT_ACT=f32 RLX_CUDA_TENSOR_CORES=0 RLX_CPU_QUANT_ACT=f32 \
    run parity-exact "parity packed exact" 90 "$bench_reserve" s_parity parity-exact \
    --only q --rlx-arg=--packed
fi
run models "models" 400 $((nm * 20)) s_models "${models[@]}"
for m in "${models[@]}"; do
  bench_reserve=$((bench_reserve - 25))
  run "bench-$m" "bench $m" 100 $((bench_reserve > 0 ? bench_reserve : 0)) s_bench "$m"
done

# Generators still running (out of time): ours, by pid (the python under each subshell too).
for p in "${gen_pids[@]}"; do
  pkill -P "$p" 2>/dev/null || true
  kill "$p" 2>/dev/null || true
done

# ---- the table
total=$(elapsed)
[[ -f $W/bandwidth.txt ]] && cp "$W/bandwidth.txt" "$RES/bandwidth.txt"
if compgen -G "$W/bench-*.json" >/dev/null; then
  "$PY" -c 'import json, sys; print(json.dumps([r for f in sys.argv[1:] for r in json.load(open(f))], indent=1))' \
    "$W"/bench-*.json >"$RES/bench.json" 2>/dev/null || true
fi
table=$RES/device-check.md
if ! "$PY" "$root/scripts/device/summarize.py" --steps "$STEPS" --work "$W" --device "$DEV" \
  --total "$total" --budget "$BUDGET" --quick "$quick" --goal-model "$llama_name-q4_k" >"$table" 2>>"$LOG"; then
  { echo "| step | status | s | detail |"; echo "| --- | --- | ---: | --- |"
    awk -F'\t' '{printf "| %s | %s | %s | %s |\n", $2, $3, $4, $5}' "$STEPS"; } >"$table"
fi
say ""
tee -a "$LOG" <"$table"
[[ $RES == "$W" ]] || cp "$table" "$W/device-check.md"
say ""
say "device-check: total ${total}s; table $table, log $LOG"
if cut -f3 "$STEPS" | grep -qE 'FAIL|TIMEOUT'; then exit 1; fi
