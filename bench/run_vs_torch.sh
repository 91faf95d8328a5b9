#!/usr/bin/env bash
# bench/run_vs_torch.sh - our training steps against PyTorch's, side by side, on this machine.
#
#   bench/run_vs_torch.sh [-n REPEATS] [-s STEPS] [-x OOTB_REPEATS] [-t] [-p] [-T THREADS] [-b BUILD_DIR] [-o RESULTS.jsonl] [workload[:len] ...]
#   e.g. bench/run_vs_torch.sh -n 3 transformer_listops s4d lstm_bits gpt_char transformer_listops:1024
#   s4d_official: our s4d step against the PyTorch twin written as state-spaces/s4's models/s4/s4d.py (and example.py)
#   write it: (B, H, L) layout between layers, 1x1 Conv1d + GLU output; the same parameter count.
#
# For each repeat and workload, three processes run back to back (alternating, so slow drifts of the machine's
# load hit all three alike):
#   ours        bench_workloads with OMP_WAIT_POLICY=PASSIVE (-p: out of the box). On a machine shared with other jobs
#               libgomp's spinning workers lose their core to them; PASSIVE costs ~nothing on a quiet machine.
#   torch       bench/torch_workloads.py out of the box
#   torch_best  the same with its best setting found: jemalloc preloaded keeping its memory (retain, no decay) and
#               backing it with transparent huge pages (thp:always), OMP_WAIT_POLICY=PASSIVE
# and the table shows the medians over repeats of ms/step, tokens/s and peak RSS, and the ratios.
# -x N runs PyTorch out of the box only in the first N repeats (it is 2.5-7x slower; its ratio is not a target).
# -T N gives both sides N threads (default: each program's default, 2), e.g. -T 1 beside another job on the other core.
# -t skips PyTorch altogether for workloads with a len >= 2000 (it does not fit in 24 GB there; issue 7).
# OPENBLAS_CORETYPE=Haswell stays set for every run (older OpenBLAS builds misbehave on these processors).
# Dependencies: python3 with python3-torch (Debian); optional: libjemalloc2 (apt) for torch_best (without it,
# torch_best runs with only OMP_WAIT_POLICY=PASSIVE and says so).
set -euo pipefail
cd "$(dirname "$0")/.."

REPEATS=3
STEPS=5
BUILD=build-perf
OUT=""
OOTB=1000000
SKIP_LONG=0
OURS_ENV=(OMP_WAIT_POLICY=PASSIVE)
THREADS=""
while getopts "n:s:x:tpT:b:o:h" opt; do
  case $opt in
    p) OURS_ENV=() ;;
    n) REPEATS=$OPTARG ;;
    x) OOTB=$OPTARG ;;
    t) SKIP_LONG=1 ;;
    s) STEPS=$OPTARG ;;
    T) THREADS=$OPTARG ;;
    b) BUILD=$OPTARG ;;
    o) OUT=$OPTARG ;;
    *) sed -n 2,20p "$0"; exit 0 ;;
  esac
done
shift $((OPTIND - 1))
WORKLOADS=("$@")
[ ${#WORKLOADS[@]} -eq 0 ] && WORKLOADS=(transformer_listops s4d lstm_bits gpt_char)

BIN=$BUILD/bench_workloads
[ -x "$BIN" ] || { echo "run_vs_torch: $BIN not built (cmake --build $BUILD --target bench_workloads)" >&2; exit 1; }
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell}
source bench/vs_torch_lib.sh  # JEMALLOC, TORCH_BEST_ENV, run_tagged

OUT=${OUT:-$(mktemp /tmp/run_vs_torch.XXXXXX.jsonl)}
: > "$OUT"
ERR=$(mktemp /tmp/run_vs_torch.XXXXXX.err)
run() {  # run <variant> <workload> <len> <command...>: append the JSON line, tagged with the variant
  local variant=$1 wl=$2 len=$3
  shift 3
  run_tagged "$OUT" "$ERR" "$variant" "{\"workload\": \"$wl\", \"len\": ${len:-0}}" "$@" > /dev/null
}

echo "# $(date -u '+%F %T UTC'); $(nproc) cpus; threads ${THREADS:-default}; load $(cut -d' ' -f1-3 /proc/loadavg); repeats $REPEATS; steps $STEPS; results $OUT" >&2
for r in $(seq 1 "$REPEATS"); do
  for spec in "${WORKLOADS[@]}"; do
    wl=${spec%%:*}
    len=""
    [[ $spec == *:* ]] && len=${spec##*:}
    largs=()
    [ -n "$len" ] && largs=(--len "$len")
    [ -n "$THREADS" ] && largs+=(--threads "$THREADS")
    echo "# repeat $r: $spec (load $(cut -d' ' -f1 /proc/loadavg))" >&2
    if [ "$wl" = s4d_official ]; then  # our s4d step against the twin written as state-spaces' s4d.py
      run ours "$wl" "$len" env "${OURS_ENV[@]}" "$BIN" s4d --steps "$STEPS" "${largs[@]}"
      sed -i '$ s/"workload": "s4d"/"workload": "s4d_official"/' "$OUT"
    else
      run ours "$wl" "$len" env "${OURS_ENV[@]}" "$BIN" "$wl" --steps "$STEPS" "${largs[@]}"
    fi
    [ "$SKIP_LONG" = 1 ] && [ -n "$len" ] && [ "$len" -ge 2000 ] && continue
    [ "$r" -le "$OOTB" ] && run torch "$wl" "$len" /usr/bin/python3 bench/torch_workloads.py "$wl" --steps "$STEPS" "${largs[@]}"
    run torch_best "$wl" "$len" env "${TORCH_BEST_ENV[@]}" /usr/bin/python3 bench/torch_workloads.py "$wl" --steps "$STEPS" "${largs[@]}"
  done
done

python3 - "$OUT" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
keys = []
for r in rows:
    if r.get("failed"): continue
    k = (r["workload"], r.get("len", 0))
    if k not in keys: keys.append(k)
def med(wl, ln, variant, field):
    v = [r[field] for r in rows if r["workload"] == wl and r.get("len", 0) == ln and r["variant"] == variant
         and not r.get("failed") and field in r]
    return statistics.median(v) if v else None
def f(x, fmt="{:.0f}"):
    return fmt.format(x) if x is not None else "-"
print("| workload | len | params ours/torch | ours ms | torch best ms | torch ms | best/ours | torch/ours | ours tok/s "
      "| ours GFLOP/s | ours peak MB | best peak MB | torch peak MB | ours minflt/step |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for wl, ln in keys:
    if not ln:
        ln = next((r.get("len") for r in rows if r["workload"] == wl and r.get("len")), 0)
    o, b, t = (med(wl, ln, v, "ms_per_step") for v in ("ours", "torch_best", "torch"))
    po, pt = med(wl, ln, "ours", "params"), med(wl, ln, "torch", "params")
    ratio = lambda a: f(a / o if a and o else None, "{:.2f}x")
    print(f"| {wl} | {ln} | {f(po)}/{f(pt)} | {f(o)} | {f(b)} | {f(t)} | {ratio(b)} | {ratio(t)} | "
          f"{f(med(wl, ln, 'ours', 'tokens_per_s'))} | {f(med(wl, ln, 'ours', 'gflops'), '{:.1f}')} | "
          f"{f(med(wl, ln, 'ours', 'peak_rss_mb'))} | {f(med(wl, ln, 'torch_best', 'peak_rss_mb'))} | "
          f"{f(med(wl, ln, 'torch', 'peak_rss_mb'))} | {f(med(wl, ln, 'ours', 'minflt_per_step'))} |")
EOF
