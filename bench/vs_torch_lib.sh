# bench/vs_torch_lib.sh - what bench/run_vs_torch.sh and bench/run_lra_vs_torch.sh share; sourced, not run.
#
#   JEMALLOC        the path of libjemalloc.so.2, or empty when libjemalloc2 is not installed (a note on stderr)
#   TORCH_BEST_ENV  the environment of PyTorch's best setting on this machine: jemalloc preloaded keeping its memory
#                   (retain, no decay) on transparent huge pages, and OMP_WAIT_POLICY=PASSIVE
#   run_tagged OUT ERR VARIANT FAILED_JSON COMMAND...
#                   runs COMMAND; its last stdout line (a JSON object) gets "variant": VARIANT and is appended to OUT
#                   and echoed. When the command fails or prints nothing, FAILED_JSON (an object naming the run) gets
#                   "variant" and "failed": true and is appended instead, and the command's last stderr lines (kept
#                   in ERR) are reported.

JEMALLOC=""
for p in /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/lib/libjemalloc.so.2; do [ -e "$p" ] && JEMALLOC=$p && break; done
TORCH_BEST_ENV=(OMP_WAIT_POLICY=PASSIVE)
if [ -n "$JEMALLOC" ]; then
  TORCH_BEST_ENV+=(LD_PRELOAD="$JEMALLOC" MALLOC_CONF="retain:true,dirty_decay_ms:-1,muzzy_decay_ms:-1,thp:always,metadata_thp:always")
else
  echo "$(basename "$0" .sh): libjemalloc2 not installed; PyTorch's best setting runs without it (apt-get install libjemalloc2)" >&2
fi

run_tagged() {
  local out=$1 err=$2 variant=$3 failed=$4
  shift 4
  local line
  if line=$("$@" 2>"$err" | tail -1) && [ -n "$line" ]; then
    echo "$line" | python3 -c "import json,sys; d=json.loads(sys.stdin.read()); d['variant']=sys.argv[1]; print(json.dumps(d))" \
      "$variant" >> "$out"
    echo "$line"
  else
    echo "$failed" | python3 -c "import json,sys; d=json.loads(sys.stdin.read()); d.update(variant=sys.argv[1], failed=True); print(json.dumps(d))" \
      "$variant" >> "$out"
    echo "$(basename "$0" .sh): $variant $failed failed: $(tail -2 "$err")" >&2
  fi
}
