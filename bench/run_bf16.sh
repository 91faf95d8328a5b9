#!/usr/bin/env bash
# bench/run_bf16.sh - the bfloat16 benchmark of issue 41 in one command: the machine's ceilings and the bf16 GEMM
# (build/bench_kernels_bf16), then each reference workload's training step in float32 and in bf16, ours
# (bench_workloads --precision) against PyTorch's best setting (bench/torch_workloads.py with jemalloc as in
# run_vs_torch.sh, float32 and torch.autocast bf16), both sides at the same threads.
#
#   bench/run_bf16.sh [-n REPEATS] [-s STEPS] [-T THREADS] [-b BUILD_DIR] [-o RESULTS.jsonl] [workload ...]
#   e.g. bench/run_bf16.sh -n 3 transformer_listops gpt_char s4d lstm_bits     (the default list)
#
# Each repeat runs the four processes of a workload back to back, so slow drifts of the machine's load hit all alike.
# The table: medians over repeats of ms/step; "ours bf16 / ours fp32" is our speed-up; "vs torch best" divides
# PyTorch's faster setting (fp32 or autocast) by ours in the same precision and in our best one; cpu_ms_per_step of
# ours (all threads' CPU time) is shown too, since on a shared machine the wall clock also counts other jobs' time.
set -euo pipefail
cd "$(dirname "$0")/.."

REPEATS=1
STEPS=3
BUILD=build
THREADS=2
OUT=""
while getopts "n:s:T:b:o:h" opt; do
  case $opt in
    n) REPEATS=$OPTARG ;;
    s) STEPS=$OPTARG ;;
    T) THREADS=$OPTARG ;;
    b) BUILD=$OPTARG ;;
    o) OUT=$OPTARG ;;
    *) sed -n 2,13p "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
WORKLOADS=("$@")
[ ${#WORKLOADS[@]} -eq 0 ] && WORKLOADS=(transformer_listops gpt_char s4d lstm_bits)
OUT=${OUT:-runs/bench_bf16_$(date -u +%Y%m%d_%H%M%S).jsonl}
mkdir -p "$(dirname "$OUT")"
: > "$OUT"
export OPENBLAS_CORETYPE=Haswell
source bench/vs_torch_lib.sh
ERR=$(mktemp)
trap 'rm -f "$ERR"' EXIT

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=$THREADS "$BUILD/bench_kernels_bf16" --benchmark_format=json 2>/dev/null |
  python3 -c '
import json, sys
for b in json.load(sys.stdin)["benchmarks"]:
    print("%-45s %8.1f GFLOP/s wall  %8.1f GFLOP/s cpu" % (b["name"], b.get("GFLOP/s", 0), b.get("GFLOP/s_cpu", b.get("GFLOP/s", 0))))
' | tee -a "${OUT%.jsonl}_kernels.txt"

for r in $(seq "$REPEATS"); do
  for w in "${WORKLOADS[@]}"; do
    for p in fp32 bf16; do
      run_tagged "$OUT" "$ERR" "ours_$p" "{\"workload\": \"$w\"}" \
        env OMP_WAIT_POLICY=PASSIVE "$BUILD/bench_workloads" "$w" --steps "$STEPS" --threads "$THREADS" --precision "$p"
      run_tagged "$OUT" "$ERR" "torch_best_$p" "{\"workload\": \"$w\"}" \
        env "${TORCH_BEST_ENV[@]}" /usr/bin/python3 bench/torch_workloads.py "$w" --steps "$STEPS" --threads "$THREADS" \
        --precision "$p"
    done
  done
done

python3 - "$OUT" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def med(w, v, key="ms_per_step"):
    xs = [r[key] for r in rows if r.get("workload") == w and r.get("variant") == v and key in r and not r.get("failed")]
    return statistics.median(xs) if xs else None
f = lambda x: "-" if x is None else "%.0f" % x
g = lambda x: "-" if x is None else "%.2fx" % x
div = lambda a, b: None if a is None or b is None else a / b
print("| workload | ours fp32 ms | ours bf16 ms | ours cpu ms fp32 / bf16 | torch fp32 ms | torch autocast ms "
      "| ours bf16 / ours fp32 | vs torch best, fp32 | vs torch best, bf16 |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for w in dict.fromkeys(r["workload"] for r in rows):
    o32, o16, t32, t16 = (med(w, v) for v in ("ours_fp32", "ours_bf16", "torch_best_fp32", "torch_best_bf16"))
    best = min(x for x in (t32, t16) if x is not None) if (t32 or t16) else None
    print(f"| {w} | {f(o32)} | {f(o16)} | {f(med(w, 'ours_fp32', 'cpu_ms_per_step'))} / "
          f"{f(med(w, 'ours_bf16', 'cpu_ms_per_step'))} | {f(t32)} | {f(t16)} | {g(div(o32, o16))} | {g(div(best, o32))} "
          f"| {g(div(best, o16))} |")
EOF
echo "results: $OUT"
