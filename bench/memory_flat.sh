#!/usr/bin/env bash
# bench/memory_flat.sh - does resident memory stay flat over a long run? Trains one small cell of an app for many
# steps (default 10,000; evaluations and checkpoints every 500, as in a real run), alone or as 2 ranks under mpirun,
# and samples each process's resident set (VmRSS in /proc/<pid>/status) every 0.2 s. Reports, per process, the RSS
# after warm-up (the end of the first 20% of the run), near the end (at 95% of the run: the last 5% holds the final
# evaluation on the whole test split, whose buffers are a one-off at exit), the maximum, the growth from warm-up to
# near the end in percent, and the least-squares slope between them in MB per 1,000 steps (steps taken as
# proportional to time after warm-up). Issue 18's bar: growth under 1% after warm-up.
#
#   bash bench/memory_flat.sh [-a app] [-n ranks] [-b build] [-s steps] [-m model] [-o out.tsv]
#     -a  lra_benchmark (default), classify, fpt or pretrained_convs
#     -n  1 (default) or 2: 2 ranks under mpirun (data-parallel, the all-reduce in every step)
#     -m  the model axis: lra_benchmark's model, classify's layer, fpt's arm, pretrained_convs' model
# Writes the samples (seconds, then RSS MB per process) to out.tsv (default runs/memory_flat_<app>.tsv) and a
# gnuplot PNG beside it; the last line printed is the summary, one "rank r: ..." part per process.
set -euo pipefail
cd "$(dirname "$0")/.."
app=lra_benchmark ranks=1 build=build steps=10000 model="" out=""
while getopts a:n:b:s:m:o: o; do
  case $o in a) app=$OPTARG ;; n) ranks=$OPTARG ;; b) build=$OPTARG ;; s) steps=$OPTARG ;; m) model=$OPTARG ;;
             o) out=$OPTARG ;; *) exit 2 ;; esac
done
out=${out:-runs/memory_flat_${app}.tsv}
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell} OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1
every=(--set eval_every=500 --set checkpoint_every=500)
case $app in
  lra_benchmark)
    args=(--task listops --model "${model:-transformer}" --regime scratch --set seq_len=64 --set d_model=32
          --set layers=1 --set batch=8 --set train_size=2000 --set val_size=64 --set test_size=64) ;;
  classify)  # checkpoints at each evaluation
    args=(--task listops --layer "${model:-lstm}" --set seq_len=64 --set d_model=32 --set layers=1 --set batch=8
          --set train_size=2000 --set val_size=64 --set test_size=64)
    every=(--set eval_every=500) ;;
  fpt)
    args=(--task bit_xor --arm "${model:-full}" --set layers=1 --set d_model=32 --set batch=8 --set train_size=2000
          --set val_size=64 --set test_size=64) ;;
  pretrained_convs)
    args=(--task sentiment --model "${model:-lightconv}" --regime scratch --set d_model=32 --set d_ff=64 --set layers=1
          --set decoder_layers=1 --set batch=8 --set eval_examples=32) ;;
  *) echo "memory_flat: unknown app '$app' (lra_benchmark, classify, fpt, pretrained_convs)" >&2; exit 2 ;;
esac
launch=()
if [ "$ranks" != 1 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  launch=(mpirun -np "$ranks" --bind-to none)
fi
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d)
"${launch[@]}" "$build/$app" cell "${args[@]}" --seed 0 --quiet --threads 1 --out "$tmp" --set steps="$steps" \
  "${every[@]}" >"$tmp/log" 2>&1 &
pid=$!
pids() {  # the training processes: the app itself, or mpirun's children in rank order
  if [ "$ranks" = 1 ]; then echo "$pid"; return; fi
  for r in $(seq 0 $((ranks - 1))); do
    for p in $(pgrep -P "$pid"); do
      tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qx "OMPI_COMM_WORLD_RANK=$r" && echo "$p"
    done
  done
}
t0=$(date +%s.%N)
: >"$out"
while kill -0 "$pid" 2>/dev/null; do
  row=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') n=0
  for p in $(pids); do
    rss=$(awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$p/status" 2>/dev/null || true)
    [ -n "$rss" ] && row="$row	$rss" n=$((n + 1))
  done
  [ "$n" = "$ranks" ] && echo "$row" >>"$out"   # only rows with every rank
  sleep 0.2
done
wait "$pid" || { echo "memory_flat: the run failed:" >&2; tail -5 "$tmp/log" >&2; exit 1; }
rm -rf "$tmp"
awk -F'\t' -v steps="$steps" -v app="$app" -v ranks="$ranks" '
  { t[NR] = $1; for (c = 2; c <= NF; c++) r[NR, c] = $c; nc = NF }
  END {
    w = int(NR / 5) + 1; if (w > NR) w = NR
    e = int(NR * 0.95); if (e < w) e = NR
    printf "%s, %d process(es), %d steps: %d samples over %.1f s;", app, ranks, steps, NR, t[NR]
    for (c = 2; c <= nc; c++) {
      max = 0; sx = sy = sxx = sxy = 0; k = 0
      for (i = 1; i <= NR; i++) if (r[i, c] > max) max = r[i, c]
      for (i = w; i <= e; i++) { x = t[i]; y = r[i, c]; sx += x; sy += y; sxx += x * x; sxy += x * y; k++ }
      slope = (k > 1 && k * sxx - sx * sx > 0) ? (k * sxy - sx * sy) / (k * sxx - sx * sx) : 0   # MB per second
      per1k = slope * (t[NR] - t[w]) / (steps * 0.8) * 1000                                     # MB per 1,000 steps
      printf " rank %d: after warm-up %.1f MB, near the end %.1f MB, max %.1f MB, growth %+.2f%%, slope %+.3f MB per 1k steps;",
             c - 2, r[w, c], r[e, c], max, 100 * (r[e, c] - r[w, c]) / r[w, c], per1k
    }
    printf "\n" }' "$out"
if command -v gnuplot >/dev/null; then
  cols=$(awk -F'\t' 'NR == 1 {print NF}' "$out")
  plot=$(for c in $(seq 2 "$cols"); do printf "'%s' using 1:%d with lines title 'rank %d'," "$out" "$c" $((c - 2)); done)
  gnuplot -e "set terminal pngcairo size 800,400; set output '${out%.tsv}.png'; set xlabel 'seconds'; set ylabel 'RSS (MB)';
              set title '$app cell ($ranks process(es)), $steps steps: resident memory' noenhanced; set key bottom right;
              plot ${plot%,}" 2>/dev/null ||
    gnuplot -e "set terminal png size 800,400; set output '${out%.tsv}.png'; set xlabel 'seconds'; set ylabel 'RSS (MB)';
                plot ${plot%,}"
fi
