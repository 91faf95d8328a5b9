#!/usr/bin/env bash
# bench/memory_flat.sh - does resident memory stay flat over a long run? Trains one small lra_benchmark cell for
# many steps (default 10,000; evaluations and checkpoints on, as in a real run) and samples the process's resident
# set (VmRSS in /proc/<pid>/status) every 0.2 s, then reports the RSS after warm-up (the first 20% of the run), at the end,
# the maximum, and the growth from warm-up to the end in percent. Issue 18's bar: growth under 1% after warm-up.
#
#   bash bench/memory_flat.sh [-b build] [-s steps] [-m model] [-o out.tsv]
# Writes the samples (seconds, RSS MB) to out.tsv (default runs/memory_flat.tsv) and a gnuplot PNG beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build steps=10000 model=transformer out=runs/memory_flat.tsv
while getopts b:s:m:o: o; do case $o in b) build=$OPTARG ;; s) steps=$OPTARG ;; m) model=$OPTARG ;; o) out=$OPTARG ;; *) exit 2 ;; esac; done
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell} OMP_WAIT_POLICY=PASSIVE
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d)
"$build/lra_benchmark" cell --task listops --model "$model" --regime scratch --seed 0 --quiet --threads 1 --out "$tmp" \
  --set seq_len=64 --set d_model=32 --set layers=1 --set batch=8 --set train_size=2000 --set val_size=64 \
  --set test_size=64 --set steps="$steps" --set eval_every=500 --set checkpoint_every=500 >/dev/null 2>&1 &
pid=$!
t0=$(date +%s.%N)
: >"$out"
while kill -0 "$pid" 2>/dev/null; do
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
  [ -n "$rss" ] && echo -e "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')\t$(awk -v k="$rss" 'BEGIN {printf "%.1f", k / 1024}')" >>"$out"
  sleep 0.2
done
wait "$pid" || { echo "memory_flat: the run failed" >&2; exit 1; }
rm -rf "$tmp"
awk -F'\t' '{ t[NR] = $1; r[NR] = $2; if ($2 > max) max = $2 }
  END { w = int(NR / 5) + 1; if (w > NR) w = NR
        printf "samples %d over %.1f s (%s steps); RSS after warm-up (sample %d) %.1f MB, at the end %.1f MB, max %.1f MB; growth %.2f%%\n",
               NR, t[NR], "'"$steps"'", w, r[w], r[NR], max, 100 * (r[NR] - r[w]) / r[w] }' "$out"
if command -v gnuplot >/dev/null; then
  gnuplot -e "set terminal pngcairo size 800,400; set output '${out%.tsv}.png'; set xlabel 'seconds'; set ylabel 'RSS (MB)';
              set title 'lra_benchmark cell, $steps steps: resident memory' noenhanced; set key bottom right; plot '$out' using 1:2 with lines title 'VmRSS'" 2>/dev/null ||
  gnuplot -e "set terminal png size 800,400; set output '${out%.tsv}.png'; set xlabel 'seconds'; set ylabel 'RSS (MB)';
              plot '$out' using 1:2 with lines title 'VmRSS'"
fi
