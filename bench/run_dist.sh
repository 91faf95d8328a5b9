#!/usr/bin/env bash
# bench/run_dist.sh - data-parallel scaling on this machine: training steps/s of lra_benchmark cells at
#   1 rank x 2 threads, 1 rank x 1 thread and 2 ranks x 1 thread (mpirun), and the time each 2-rank step waits on
#   the gradient buckets' all-reduce after the backward (the part that did not overlap it; PhaseResult::comm_seconds).
#   With -z also 2 ranks x 1 thread with --zero1 (ZeRO-1: reduce-scatter of the buckets, then an all-gather of the
#   updated parameters; its comm ms/step counts both waits).
#   With -H also across two simulated hosts (tests/dist/two_hosts_rig.sh: network namespaces joined by a veth link,
#   MPI over TCP; needs root): 2 hosts x 1 rank x 1 thread with the default 25 MiB gradient buckets (one bucket for
#   these models: its all-reduce starts after the whole backward) and with 64 KiB buckets (DL_BUCKET_BYTES: buckets
#   all-reduced while the backward still runs), so the overlap's effect shows in the comm ms/step.
#   -L RATE slows the rig's link to RATE (a token bucket, e.g. 100mbit), where overlap has something to hide.
#   bash bench/run_dist.sh [-b build] [-s steps] [-r repeats] [-z] [-H [-L rate]]
# Workloads (the shapes of bench/bench_workloads.cpp's reference steps, through the harness's own training loop):
#   transformer_listops  ListOps at length 512, d_model 128, 2 layers, 4 heads, batch 32
#   s4d                  ListOps at length 1024, S4D d_model 128, 2 layers, d_state 64, batch 32
# Prints a markdown table (median of the repeats) and the raw JSON lines.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build steps=40 repeats=3 modes="1x2 2x1 1x1"
slow=""
while getopts b:s:r:zHL: o; do
  case $o in
    b) build=$OPTARG ;; s) steps=$OPTARG ;; r) repeats=$OPTARG ;; z) modes="$modes 2x1z" ;; H) modes="$modes 2h 2hs" ;;
    L) slow=$OPTARG ;;
    *) exit 2 ;;
  esac
done
if [[ $modes == *2h* ]]; then
  source tests/dist/two_hosts_rig.sh
  rig_up || exit 1
  trap rig_down EXIT
  if [ -n "$slow" ]; then rig_slow "$slow" || exit 1; fi
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell} OMP_WAIT_POLICY=PASSIVE
tmp=$(mktemp -d)
common=(cell --task listops --regime scratch --seed 0 --quiet --set steps=$steps --set warmup=5 --set eval_every=0
        --set checkpoint_every=0 --set train_size=2000 --set val_size=32 --set test_size=32 --set test_batches=1
        --set d_model=128 --set layers=2 --set dropout=0.0 --set batch=32)
declare -A extra=([transformer_listops]="--model transformer --set seq_len=512 --set heads=4"
                  [s4d]="--model s4d --set seq_len=1024 --set d_state=64")
run() {  # run NAME MODE OUT
  local name=$1 mode=$2 out=$3
  # shellcheck disable=SC2086
  case $mode in
    1x2) "$build/lra_benchmark" "${common[@]}" ${extra[$name]} --threads 2 --out "$out" > /dev/null ;;
    1x1) "$build/lra_benchmark" "${common[@]}" ${extra[$name]} --threads 1 --out "$out" > /dev/null ;;
    2x1) mpirun -np 2 -x OMP_NUM_THREADS=1 -x OPENBLAS_CORETYPE "$build/lra_benchmark" "${common[@]}" ${extra[$name]} --threads 1 --out "$out" > /dev/null ;;
    2x1z) mpirun -np 2 -x OMP_NUM_THREADS=1 -x OPENBLAS_CORETYPE "$build/lra_benchmark" "${common[@]}" ${extra[$name]} --threads 1 --zero1 --out "$out" > /dev/null ;;
    2h) rig_mpirun -np 2 "$build/lra_benchmark" "${common[@]}" ${extra[$name]} --threads 1 --out "$out" > /dev/null ;;
    2hs) rig_mpirun -np 2 -x DL_BUCKET_BYTES=65536 "$build/lra_benchmark" "${common[@]}" ${extra[$name]} --threads 1 --out "$out" > /dev/null ;;
  esac
  python3 - "$out/results.json" "$name" "$mode" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["cells"][0]
print(json.dumps({"workload": sys.argv[2], "mode": sys.argv[3], "steps_per_s": round(c["steps_per_s"], 3),
                  "comm_ms_per_step": round(1000 * c["extra"].get("comm_s_per_step", 0), 2), "params": c["params"]}))
PY
}
lines=()
for rep in $(seq "$repeats"); do
  for name in transformer_listops s4d; do
    for mode in $modes; do
      lines+=("$(run $name $mode "$tmp/$name-$mode-$rep")")
    done
  done
done
printf '%s\n' "${lines[@]}" > "$tmp/all.jsonl"
python3 - "$tmp/all.jsonl" <<'PY'
import json, sys, statistics as st
rows = [json.loads(l) for l in open(sys.argv[1])]
def med(w, m, k): return st.median(r[k] for r in rows if r["workload"] == w and r["mode"] == m)
zero = any(r["mode"] == "2x1z" for r in rows)
hosts = any(r["mode"] == "2h" for r in rows)
head = "| workload | params | 1 rank x 2 threads steps/s | 2 ranks x 1 thread steps/s | ratio | 1 rank x 1 thread steps/s | 2-rank comm ms/step |"
print(head + (" ZeRO-1 2 ranks steps/s | ZeRO-1 comm ms/step |" if zero else "") +
      (" 2 hosts steps/s | 2 hosts comm ms/step | 2 hosts, 64 KiB buckets steps/s | comm ms/step |" if hosts else ""))
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |" + (" ---: | ---: |" if zero else "") +
      (" ---: | ---: | ---: | ---: |" if hosts else ""))
for w in ["transformer_listops", "s4d"]:
    p = next(r["params"] for r in rows if r["workload"] == w)
    a, b, c = med(w, "1x2", "steps_per_s"), med(w, "2x1", "steps_per_s"), med(w, "1x1", "steps_per_s")
    z = f" {med(w, '2x1z', 'steps_per_s'):.2f} | {med(w, '2x1z', 'comm_ms_per_step'):.1f} |" if zero else ""
    h = "".join(f" {med(w, m, 'steps_per_s'):.2f} | {med(w, m, 'comm_ms_per_step'):.1f} |" for m in ["2h", "2hs"]) if hosts else ""
    print(f"| {w} | {p} | {a:.2f} | {b:.2f} | {b / a:.2f} | {c:.2f} | {med(w, '2x1', 'comm_ms_per_step'):.1f} |" + z + h)
PY
echo; cat "$tmp/all.jsonl"
rm -rf "$tmp"
