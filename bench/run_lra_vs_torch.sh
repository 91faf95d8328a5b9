#!/usr/bin/env bash
# bench/run_lra_vs_torch.sh - steps/s of every task x model of an LRA preset, ours beside PyTorch's.
#
#   bench/run_lra_vs_torch.sh [-n REPEATS] [-s STEPS] [-b BUILD_DIR] [-o RESULTS.jsonl] [--preset tiny|small|FILE]
#   e.g. bench/run_lra_vs_torch.sh -n 3 --preset small -b build-perf
#
# For each repeat and cell, two processes run back to back (alternating, so slow drifts of the machine's load hit
# both alike), each timing STEPS training steps of the cell's scratch fine-tuning configuration after 2 warm-up ones:
#   ours   `lra_benchmark speed` with OMP_WAIT_POLICY=PASSIVE (libgomp's spinning workers lose their core to
#          other jobs on a shared machine; PASSIVE costs ~nothing on a quiet one)
#   torch  bench/torch_lra.py with the best setting bench/run_vs_torch.sh found for it: jemalloc preloaded keeping
#          its memory (retain, no decay) on transparent huge pages, OMP_WAIT_POLICY=PASSIVE
# torch_lra.py gets the task's shape from our JSON line (it cannot read our datasets). The table shows the medians
# over repeats of ms/step, steps/s and peak RSS, the ratio ours/torch of steps/s (> 1: ours is faster) and whether
# the parameter counts agree. OPENBLAS_CORETYPE=Haswell stays set for every run (as run_vs_torch.sh).
# Dependencies: python3 with python3-torch (Debian); optional: libjemalloc2 (without it torch runs with only
# OMP_WAIT_POLICY=PASSIVE and says so).
set -euo pipefail
cd "$(dirname "$0")/.."

REPEATS=3
STEPS=5
BUILD=build
OUT=""
PRESET=tiny
while [ $# -gt 0 ]; do
  case $1 in
    -n) REPEATS=$2; shift 2 ;;
    -s) STEPS=$2; shift 2 ;;
    -b) BUILD=$2; shift 2 ;;
    -o) OUT=$2; shift 2 ;;
    --preset) PRESET=$2; shift 2 ;;
    *) sed -n 2,18p "$0"; exit 0 ;;
  esac
done

BIN=$BUILD/lra_benchmark
[ -x "$BIN" ] || { echo "run_lra_vs_torch: $BIN not built (cmake --build $BUILD --target lra_benchmark)" >&2; exit 1; }
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell}
source bench/vs_torch_lib.sh  # JEMALLOC, TORCH_BEST_ENV, run_tagged

# The cells: every task x model the preset lists ("task model" per line).
PRESET_FILE=$PRESET
[[ $PRESET == */* || $PRESET == *.json ]] || PRESET_FILE=apps/lra_benchmark/presets/$PRESET.json
mapfile -t CELLS < <(python3 -c "import json,sys; p=json.load(open(sys.argv[1]))
for t in p['tasks']:
    for m in p['models']: print(t, m)" "$PRESET_FILE")

OUT=${OUT:-$(mktemp /tmp/run_lra_vs_torch.XXXXXX.jsonl)}
: > "$OUT"
ERR=$(mktemp /tmp/run_lra_vs_torch.XXXXXX.err)
run() {  # run <variant> <task> <model> <command...>: append its JSON line, tagged with the variant; echo the line
  local variant=$1 task=$2 model=$3
  shift 3
  run_tagged "$OUT" "$ERR" "$variant" "{\"task\": \"$task\", \"model\": \"$model\"}" "$@"
}

echo "# $(date -u '+%F %T UTC'); $(nproc) cpus; load $(cut -d' ' -f1-3 /proc/loadavg); preset $PRESET; repeats $REPEATS; steps $STEPS; results $OUT" >&2
for r in $(seq 1 "$REPEATS"); do
  for cell in "${CELLS[@]}"; do
    read -r task model <<< "$cell"
    echo "# repeat $r: $task/$model (load $(cut -d' ' -f1 /proc/loadavg))" >&2
    ours=$(run ours "$task" "$model" env OMP_WAIT_POLICY=PASSIVE "$BIN" speed --preset "$PRESET" --tasks "$task" \
           --models "$model" --steps "$STEPS" --threads 2)
    [ -z "$ours" ] && continue
    shape=$(echo "$ours" | python3 -c "import json,sys; print(json.dumps(json.loads(sys.stdin.read())['shape']))")
    run torch "$task" "$model" env "${TORCH_BEST_ENV[@]}" /usr/bin/python3 bench/torch_lra.py --preset "$PRESET" --task "$task" \
        --model "$model" --shape "$shape" --steps "$STEPS" --threads 2 > /dev/null
  done
done
echo "# done $(date -u '+%F %T UTC'); load $(cut -d' ' -f1-3 /proc/loadavg)" >&2

python3 - "$OUT" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
cells = list(dict.fromkeys((r["task"], r["model"]) for r in rows))
def pick(task, model, variant):
    return [r for r in rows if (r["task"], r["model"]) == (task, model) and r["variant"] == variant and not r.get("failed")]
def med(rs, field):
    return statistics.median(r[field] for r in rs) if rs else None
def f(x, fmt="{:.0f}"):
    return fmt.format(x) if x is not None else "-"
print("| task | model | batch | seq_len | params ours | params torch | params | ours ms | torch ms | ours steps/s "
      "| torch steps/s | ours/torch | ours peak MB | torch peak MB | torch computes |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for task, model in cells:
    o, t = pick(task, model, "ours"), pick(task, model, "torch")
    po, pt = med(o, "params"), med(t, "params")
    check = "-" if po is None or pt is None else "equal" if po == pt else "DIFFER"
    so, st = med(o, "steps_per_s"), med(t, "steps_per_s")
    ratio = f(so / st, "{:.2f}x") if so and st else "-"
    ref = o[0] if o else t[0] if t else {}
    notes = "; ".join(sorted({n for r in t for n in r.get("notes", [])})) or "the same algorithm"
    print(f"| {task} | {model} | {ref.get('batch', '-')} | {ref.get('seq_len', '-')} | {f(po)} | {f(pt)} | {check} | "
          f"{f(med(o, 'ms_per_step'))} | {f(med(t, 'ms_per_step'))} | {f(so, '{:.2f}')} | {f(st, '{:.2f}')} | {ratio} | "
          f"{f(med(o, 'peak_rss_mb'))} | {f(med(t, 'peak_rss_mb'))} | {notes} |")
EOF
