#!/usr/bin/env bash
# bench/bf16_ratio.sh - our bf16 training step against our float32 one, measured as issue 41's 1.6x asks, on a
# machine whose speed drifts: N pairs of runs back to back (float32, then bf16), the ratio taken within each pair, and
# the mean +- standard error of the N ratios by the wall clock and by CPU time (all threads). Three five-step repeats
# of bench/run_bf16.sh scattered 1.47-1.70 for the same binary on the 2-core Intel VM of docs/performance.md; eight
# pairs of eight steps gave +- 0.01.
#
#   bench/bf16_ratio.sh [-n PAIRS] [-s STEPS] [-T THREADS] [-b BUILD_DIR] [-B BASE_BUILD_DIR] [-o RAW.txt] [workload]
#   e.g. bench/bf16_ratio.sh -n 8 -s 8 transformer_listops      (the defaults)
#        bench/bf16_ratio.sh -n 6 -s 6 -B build-base             (a change against the binary without it)
#
# Prints one line per pair and the summary; RAW.txt (if given) keeps "precision ms_per_step cpu_ms_per_step" lines.
# With -B, each round runs a pair from BUILD_DIR and then one from BASE_BUILD_DIR, so the two binaries see the same
# minutes of the machine (the VM's speed moved 20% within minutes on 2026-12-07; a before/after measured an hour apart
# says little), and the summary is given for each; RAW.txt's lines then start with "head" or "base".
set -euo pipefail
cd "$(dirname "$0")/.."

PAIRS=8
STEPS=8
THREADS=2
BUILD=build
BASE=""
RAW=""
while getopts "n:s:T:b:B:o:h" opt; do
  case $opt in
    n) PAIRS=$OPTARG ;;
    s) STEPS=$OPTARG ;;
    T) THREADS=$OPTARG ;;
    b) BUILD=$OPTARG ;;
    B) BASE=$OPTARG ;;
    o) RAW=$OPTARG ;;
    *) sed -n 2,15p "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
WORKLOAD=${1:-transformer_listops}
for d in "$BUILD" ${BASE:+"$BASE"}; do
  [ -x "$d/bench_workloads" ] || { echo "bf16_ratio: $d/bench_workloads not found (build it first)" >&2; exit 1; }
done
[ "$PAIRS" -ge 2 ] || { echo "bf16_ratio: -n must be at least 2 (a standard error needs two pairs)" >&2; exit 2; }
export OPENBLAS_CORETYPE=Haswell OMP_WAIT_POLICY=PASSIVE
TMP=$(mktemp)
trap 'rm -f "$TMP"' EXIT

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) (cpu family $(grep -m1 'cpu family' /proc/cpuinfo |
  cut -d: -f2 | xargs)), $(nproc) CPUs; $(date -u '+%Y-%m-%d %H:%M UTC'); commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "$WORKLOAD, $STEPS steps a run, $THREADS threads, $PAIRS pairs (float32 then bf16)${BASE:+, each beside a pair from $BASE}"
# one run of build $1 in precision $2: "ms_per_step cpu_ms_per_step" from the JSON line bench_workloads prints last
one() {
  "$1/bench_workloads" "$WORKLOAD" --threads "$THREADS" --precision "$2" --steps "$STEPS" 2>/dev/null | tail -1 |
    sed -n 's/.*"ms_per_step": \([0-9.]*\).*"cpu_ms_per_step": \([0-9.]*\).*/\1 \2/p'
}
# one pair from build $2, its lines tagged $1 ("" without -B: the raw file's lines as they always were)
pair() {
  local tag=$1 dir=$2 i=$3 f b
  f=$(one "$dir" fp32)
  b=$(one "$dir" bf16)
  [ -n "$f" ] && [ -n "$b" ] || { echo "bf16_ratio: a run printed no ms_per_step (see $dir/bench_workloads $WORKLOAD)" >&2; exit 1; }
  echo "${tag:+$tag }fp32 $f" >> "$TMP"
  echo "${tag:+$tag }bf16 $b" >> "$TMP"
  echo "$i $f $b" | awk -v t="${tag:+$tag }" '{printf "%spair %d: float32 %.1f ms (cpu %.1f), bf16 %.1f ms (cpu %.1f): %.3fx wall, %.3fx cpu\n",
    t, $1, $2, $3, $4, $5, $2 / $4, $3 / $5}'
}
for i in $(seq "$PAIRS"); do
  pair "${BASE:+head}" "$BUILD" "$i"
  [ -z "$BASE" ] || pair base "$BASE" "$i"
done
[ -n "$RAW" ] && cp "$TMP" "$RAW"
# the summary of the lines tagged $1 (all lines without -B)
summary() {
  if [ -n "$1" ]; then grep "^$1 " "$TMP" | cut -d' ' -f2-; else cat "$TMP"; fi | paste - - | awk -v t="${1:+$1: }" '
  { w[NR] = $2 / $5; c[NR] = $3 / $6; fw += $2; bw += $5 }
  function stats(x, n, name,   i, m, s) {
    for (i = 1; i <= n; i++) m += x[i]; m /= n
    for (i = 1; i <= n; i++) s += (x[i] - m) ^ 2
    printf "%sbf16 over float32 by %s: %.3f +- %.3f (mean +- SE over %d pairs)\n", t, name, m, sqrt(s / (n - 1) / n), n
  }
  END { printf "%smean ms: float32 %.1f, bf16 %.1f\n", t, fw / NR, bw / NR; stats(w, NR, "the wall clock"); stats(c, NR, "CPU time") }'
}
if [ -z "$BASE" ]; then
  summary ""
else
  summary head
  summary base
fi
