#!/usr/bin/env bash
# tests/dist/two_hosts.sh BUILD_DIR - data-parallel training across two (simulated) hosts, over TCP, with the faults a
# network has (a ctest test; the rig is tests/dist/two_hosts_rig.sh: two network + UTS namespaces joined by a veth link,
# OpenMPI started through a launch agent in place of ssh, TCP only). Exit 77 (skipped) where the rig cannot be made.
#   1. test_dist across the hosts: shards equal one process, ZeRO-1 equals plain data-parallel, replicas stay identical,
#      a killed run resumes with 2 ranks (exactly) and with 1 process, the evaluation split equals one process
#   2. lra_benchmark, classify, fpt and pretrained_convs cells across the hosts: the same metrics as the same 2-rank
#      cell on one host (bit for bit: the sums of two ranks do not depend on the transport), results written once
#   3. the link cut mid-training: the job ends within the collective timeout, rank 0 naming rank 1 and host1, and no
#      process is left on host1 (with the link still down: the daemons' keepalive, see the rig); the last
#      checkpoint is intact; with the link back, --resume on 2 hosts ends with the metrics of an uninterrupted run, and
#      --resume by one process goes on from the cut's checkpoint: the curve up to the resumed step is the 2-host
#      run's, bit for bit (it did not start again), and its next point's training loss is within 10% of the
#      uninterrupted run's. Only that close: one process sums the same gradients in another order, and this small LSTM
#      amplifies the difference (the mean loss of the 100 steps after the resume differed by 0.17% in one run and by
#      2.7% in the next; by step 3000, trained to a loss of 0.003, the two end on different models: 0.328 against
#      0.391 test accuracy on 128 examples, which failed the 3-point check this replaced). That a one-process resume
#      equals the 2-rank run within the reduction tolerance is test_dist's KilledRunResumesWithTheSameRanksAndWithOne.
#   4. a rank SIGKILLed mid-run on host1: the job fails, naming the rank, within the timeout
#   5. a slow link (a 20 Mbit/s token bucket: this kernel has no netem for delay or loss): the same metrics
#   6. every kept checkpoint of a 2-host job damaged: --resume starts the phase again from step 0 on both ranks, keeps
#      the damaged files aside, and ends with the uninterrupted run's metrics
set -uo pipefail
build=$1
here=$(cd "$(dirname "$0")" && pwd)
source "$here/two_hosts_rig.sh"
rig_up
rc=$?
[ $rc = 0 ] || exit $rc
trap rig_down EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=1
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell}
tmp=$build/test_tmp/two_hosts
rm -rf "$tmp" && mkdir -p "$tmp"
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAILED: $1"; fail=1; fi; }
metrics() { grep -A4 '"metrics"' "$1/results.json"; }
wait_for() { for _ in $(seq 600); do [ -e "$1" ] && return 0; sleep 0.1; done; return 1; }
local_mpirun() { mpirun --allow-run-as-root -np 2 -x OMP_NUM_THREADS=1 -x OPENBLAS_CORETYPE "$@"; }
# the process of rank R in namespace NS (rank_in NS R)
rank_in() { ip netns pids "$1" | while read -r p; do
  tr '\0' '\n' < /proc/$p/environ 2> /dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2" && echo "$p"; done | head -1; }
host1_rank() { rank_in "$RIG_NS1" 1; }

# 1. the data-parallel tests, their two ranks on two hosts
rig_mpirun -np 2 "$build/test_dist" > "$tmp/test_dist.log" 2>&1
check "test_dist across two hosts (see $tmp/test_dist.log)" "[ $? = 0 ] && grep -q 'PASSED' $tmp/test_dist.log"

# 2. each app's cell: across the hosts = the same 2-rank cell on one host
largs=(cell --task listops --model s4d --regime scratch --seed 0 --threads 1 --quiet --set seq_len=64 --set train_size=256
       --set val_size=64 --set test_size=64 --set d_model=16 --set layers=1 --set steps=40 --set eval_every=20)
cargs=(cell --task listops --layer lstm --seed 0 --threads 1 --quiet --set seq_len=64 --set train_size=500 --set test_size=128
       --set d_model=16 --set lr=0.004 --set steps=60)
fargs=(cell --task bit_xor --arm full --seed 0 --threads 1 --quiet --set steps=40 --set train_size=256 --set val_size=64
       --set test_size=64 --set layers=1 --set d_model=16 --set dropout=0.0)
pargs=(cell --task sentiment --model lightconv --regime scratch --seed 0 --threads 1 --quiet --set steps=40 --set d_model=16
       --set d_ff=32 --set layers=1 --set decoder_layers=1 --set eval_every=40 --set eval_examples=32 --set checkpoint_every=40)
for app in lra_benchmark classify fpt pretrained_convs; do
  case $app in
    lra_benchmark) a=("${largs[@]}") ;; classify) a=("${cargs[@]}") ;; fpt) a=("${fargs[@]}") ;; *) a=("${pargs[@]}") ;;
  esac
  local_mpirun "$build/$app" "${a[@]}" --out "$tmp/${app}_local" > "$tmp/${app}_local.log" 2>&1
  rig_mpirun -np 2 "$build/$app" "${a[@]}" --out "$tmp/${app}_hosts" > "$tmp/${app}_hosts.log" 2>&1
  check "$app: the 2-host cell exits 0" "[ $? = 0 ]"
  check "$app: its result records 2 ranks" "grep -q '\"ranks\": 2' $tmp/${app}_hosts/results.json"
  check "$app: 2 hosts give the metrics of 2 ranks on one host" \
    "[ -n \"\$(metrics $tmp/${app}_local)\" ] && [ \"\$(metrics $tmp/${app}_local)\" = \"\$(metrics $tmp/${app}_hosts)\" ]"
done

# 3. the link cut mid-training, then resumed on 2 hosts and by one process
long=("${cargs[@]}" --set steps=3000)
rig_mpirun -np 2 "$build/classify" "${long[@]}" --out "$tmp/whole" > "$tmp/whole.log" 2>&1
check "uninterrupted 2-host run exits 0" "[ $? = 0 ]"
RIG_TIMEOUT=120 rig_mpirun -np 2 -x DL_COMM_TIMEOUT=5 "$build/classify" "${long[@]}" --out "$tmp/cut" > "$tmp/cut.log" 2>&1 &
mp=$!
ckpt=$tmp/cut/cells/listops__lstm__seed0/train/checkpoint.json
wait_for "$ckpt"
sleep 1
rig_link down
start=$(date +%s)
wait $mp
rc=$?
took=$(($(date +%s) - start))
for left in $(seq 30); do [ -z "$(ip netns pids "$RIG_NS1")" ] && break; sleep 1; done  # the link still down
stayed=$(ip netns pids "$RIG_NS1" | wc -l)
rig_link up
check "link cut: the job fails (status $rc) within 60 s (took $took s)" "[ $rc != 0 ] && [ $took -lt 60 ]"
check "link cut: nothing is left running on host1 ($stayed processes, $left s after the job)" "[ $stayed = 0 ]"
check "link cut: rank 0 names rank 1 on host1" "grep -q 'rank 1 (host host1) did not reach it' $tmp/cut.log"
check "link cut: the checkpoint manifest is intact JSON" "python3 -c 'import json,sys; json.load(open(sys.argv[1]))' $ckpt"
cp -r "$tmp/cut" "$tmp/cut_alone"
resumed=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["history"][0]["step"])' "$ckpt" 2> /dev/null)
rig_mpirun -np 2 "$build/classify" "${long[@]}" --out "$tmp/cut" --resume > "$tmp/cut_resume.log" 2>&1
check "link cut: --resume on 2 hosts ends with the uninterrupted run's metrics" \
  "[ -n \"\$(metrics $tmp/whole)\" ] && [ \"\$(metrics $tmp/whole)\" = \"\$(metrics $tmp/cut)\" ]"
"$build/classify" "${long[@]}" --out "$tmp/cut_alone" --resume > "$tmp/cut_alone.log" 2>&1
# the training loss of a run's curve point at step $2 ("at") or its first one after it ("after")
loss_at() {
  python3 -c 'import json,sys; c=json.load(open(sys.argv[1]+"/results.json"))["cells"][0]["curve"]; s=int(sys.argv[3])
print(next((repr(p["train_loss"]) for p in c if (p["step"] == s if sys.argv[2] == "at" else p["step"] > s)), ""))' \
    "$1" "$2" "$3" 2> /dev/null
}
w0=$(loss_at "$tmp/whole" at "${resumed:-0}")
c0=$(loss_at "$tmp/cut_alone" at "${resumed:-0}")
check "link cut: the one-process resume kept the 2-host curve up to step ${resumed:-none} (it did not start again)" \
  "[ -n '$resumed' ] && [ -n '$w0' ] && [ '$w0' = '$c0' ]"
a=$(loss_at "$tmp/whole" after "${resumed:-0}")
b=$(loss_at "$tmp/cut_alone" after "${resumed:-0}")
check "link cut: --resume by one process goes on from step ${resumed:-none} (next loss ${b:-none} vs ${a:-none})" \
  "[ -n '$resumed' ] && [ -n '$a' ] && [ -n '$b' ] && awk 'BEGIN { d = $a - $b; if (d < 0) d = -d; exit !(d <= 0.1 * $a) }'"

# 4. a rank killed on host1
RIG_TIMEOUT=120 rig_mpirun -np 2 -x DL_COMM_TIMEOUT=5 "$build/classify" "${long[@]}" --out "$tmp/dead" > "$tmp/dead.log" 2>&1 &
mp=$!
wait_for "$tmp/dead/cells/listops__lstm__seed0/train/checkpoint.json"
victim=$(host1_rank)
check "rank 1 runs in host1's namespace" "[ -n '$victim' ]"
[ -n "$victim" ] && kill -KILL "$victim"
start=$(date +%s)
wait $mp
rc=$?
check "rank killed on host1: the job fails (status $rc) within 60 s" "[ $rc != 0 ] && [ \$(( \$(date +%s) - start )) -lt 60 ]"
check "rank killed on host1: the error names rank 1" "grep -q 'rank 1' $tmp/dead.log"

# 6. every kept checkpoint of a 2-host job damaged: --resume starts the phase again, keeping the files aside
RIG_TIMEOUT=120 rig_mpirun -np 2 "$build/classify" "${long[@]}" --out "$tmp/bad" > "$tmp/bad.log" 2>&1 &
mp=$!
wait_for "$tmp/bad/cells/listops__lstm__seed0/train/checkpoint.json"
kill -TERM "$(rank_in "$RIG_NS0" 0)" "$(rank_in "$RIG_NS1" 1)"
wait $mp
python3 - "$tmp/bad/cells/listops__lstm__seed0/train" << 'EOF_PY'
import json, os, sys
d = sys.argv[1]
for e in json.load(open(os.path.join(d, "checkpoint.json")))["history"]:
    open(os.path.join(d, e["state"]), "r+b").truncate(10)  # every kept training state cut short (a disk fault)
EOF_PY
rig_mpirun -np 2 "$build/classify" "${long[@]}" --out "$tmp/bad" --resume > "$tmp/bad_resume.log" 2>&1
check "damaged checkpoints, 2 hosts: --resume exits 0" "[ $? = 0 ]"
check "damaged checkpoints, 2 hosts: it says it starts again" "grep -q 'starting this phase again from step 0' $tmp/bad_resume.log"
check "damaged checkpoints, 2 hosts: the files are kept aside" "ls -d $tmp/bad/cells/listops__lstm__seed0/train/damaged_* > /dev/null"
check "damaged checkpoints, 2 hosts: the uninterrupted run's metrics" \
  "[ -n \"\$(metrics $tmp/whole)\" ] && [ \"\$(metrics $tmp/whole)\" = \"\$(metrics $tmp/bad)\" ]"

# 5. a slow link
if rig_slow 20mbit; then
  rig_mpirun -np 2 "$build/classify" "${cargs[@]}" --out "$tmp/slow" > "$tmp/slow.log" 2>&1
  check "slow link: the run exits 0" "[ $? = 0 ]"
  check "slow link: the same metrics" "[ \"\$(metrics $tmp/classify_hosts)\" = \"\$(metrics $tmp/slow)\" ]"
  rig_slow off
else
  echo "skipped: slow link (tc tbf is not available in this kernel)"
fi

[ $fail = 0 ] && echo "two_hosts: all passed"
exit $fail
