#!/usr/bin/env bash
# tests/dist/mpirun_apps.sh BUILD_DIR MPIRUN - the apps under mpirun as a user runs them (a ctest test):
#   1. a 2-rank cell writes its results once, records 2 ranks, and reaches the accuracy of the 1-process run
#   2. SIGTERM to the ranks mid-run: they checkpoint at the same step and exit 130; --resume with 2 ranks ends with
#      the metrics and curve of an uninterrupted 2-rank run
#   3. a rank killed with SIGKILL ends the job with an error naming the rank (mpirun's own report)
#   4. a hung rank (SIGSTOP) ends the job after the collective timeout, rank 0 naming the rank that did not arrive
#   5. ranks started with different configs stop at once with an error naming the rank
#   6. fpt and pretrained_convs cells under mpirun: results once with 2 ranks, accuracy as their 1-process run's
set -uo pipefail
build=$1
mpirun=$2
exe=$build/classify
tmp=$build/test_tmp/mpirun_apps
rm -rf "$tmp" && mkdir -p "$tmp"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=1
args=(cell --task listops --layer lstm --seed 0 --threads 1 --quiet --set seq_len=64 --set train_size=1000 --set test_size=256
      --set d_model=32 --set lr=0.004)
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAILED: $1"; fail=1; fi; }
metric() { grep -o "\"$2\": *[0-9.e+-]*" "$1/results.json" | head -1 | sed 's/.*: *//'; }
rank_pid() {  # rank_pid MPIRUN_PID RANK: the process of that rank
  for p in $(pgrep -P "$1"); do
    tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2" && echo "$p" && return
  done
}
wait_for() { for _ in $(seq 600); do [ -e "$1" ] && return 0; sleep 0.1; done; return 1; }

# 1. results once, 2 ranks recorded, accuracy as the 1-process run's (within 3 points: AdamW rounding)
"$exe" "${args[@]}" --set steps=200 --out "$tmp/one" > /dev/null
"$mpirun" -np 2 "$exe" "${args[@]}" --set steps=200 --out "$tmp/two" > "$tmp/two.log" 2>&1
check "2-rank cell exits 0" "[ $? = 0 ]"
check "2-rank result records 2 ranks" "grep -q '\"ranks\": 2' $tmp/two/results.json"
check "the table is printed once" "[ \$(grep -c '^| listops | lstm' $tmp/two.log) = 1 ]"
a=$(metric "$tmp/one" test_acc); b=$(metric "$tmp/two" test_acc)
check "2-rank test accuracy $b vs 1-process $a" "awk 'BEGIN { d = $a - $b; exit !(d < 0.03 && d > -0.03 && $b > 0.28) }'"

# 2. SIGTERM to both ranks, then --resume with 2 ranks
"$mpirun" -np 2 "$exe" "${args[@]}" --set steps=3000 --set d_model=16 --out "$tmp/whole" > /dev/null 2>&1
"$mpirun" -np 2 "$exe" "${args[@]}" --set steps=3000 --set d_model=16 --out "$tmp/part" > "$tmp/part.log" 2>&1 &
mp=$!
wait_for "$tmp/part/cells/listops__lstm__seed0/train/checkpoint.json"
kill -TERM $(rank_pid $mp 0) $(rank_pid $mp 1)
wait $mp; rc=$?
check "SIGTERM: the job exits 130 (was $rc)" "[ $rc = 130 ]"
check "SIGTERM: no result yet" "[ ! -e $tmp/part/cells/listops__lstm__seed0/result.json ]"
"$mpirun" -np 2 "$exe" "${args[@]}" --set steps=3000 --set d_model=16 --out "$tmp/part" --resume > /dev/null 2>&1
check "resumed 2-rank run ends with the uninterrupted metrics" \
  "[ \"\$(grep -A3 '\"metrics\"' $tmp/whole/results.json)\" = \"\$(grep -A3 '\"metrics\"' $tmp/part/results.json)\" ]"

# 3. a dead rank
"$mpirun" -np 2 "$exe" "${args[@]}" --set steps=100000 --out "$tmp/dead" > "$tmp/dead.log" 2>&1 &
mp=$!
wait_for "$tmp/dead/cells/listops__lstm__seed0/train/checkpoint.json"
kill -KILL $(rank_pid $mp 1)
wait $mp; rc=$?
check "dead rank: the job fails (status $rc)" "[ $rc != 0 ]"
check "dead rank: the error names rank 1" "grep -q 'rank 1' $tmp/dead.log"

# 4. a hung rank
DL_COMM_TIMEOUT=3 "$mpirun" -np 2 -x DL_COMM_TIMEOUT "$exe" "${args[@]}" --set steps=100000 --out "$tmp/hung" > "$tmp/hung.log" 2>&1 &
mp=$!
wait_for "$tmp/hung/cells/listops__lstm__seed0/train/checkpoint.json"
hung=$(rank_pid $mp 1)
kill -STOP "$hung"
start=$(date +%s)
wait $mp; rc=$?
kill -KILL "$hung" 2>/dev/null
check "hung rank: the job fails (status $rc) within 60 s" "[ $rc != 0 ] && [ \$(( \$(date +%s) - start )) -lt 60 ]"
check "hung rank: rank 0 names rank 1 and its host" "grep -q 'rank 1 (host [^)]*) did not reach it' $tmp/hung.log"

# 5. configs that differ between ranks
"$mpirun" -np 2 bash -c '
  extra=""; [ "$OMPI_COMM_WORLD_RANK" = 1 ] && extra="--set lr=0.1"
  exec "$0" "$@" $extra' "$exe" "${args[@]}" --set steps=10 --set warmup=2 --out "$tmp/mismatch" > "$tmp/mismatch.log" 2>&1
rc=$?
check "config mismatch: the job fails (status $rc)" "[ $rc != 0 ]"
check "config mismatch: named" "grep -q 'differs between ranks: rank 1' $tmp/mismatch.log"

# 6. the other apps through the same harness: fpt (the fully trained transformer arm, no language model to build,
#    dropout off so the ranks' dropout streams do not matter) and pretrained_convs (lightconv from scratch)
fargs=(cell --task bit_xor --arm full --seed 0 --threads 1 --quiet --set steps=150 --set train_size=1000 --set val_size=128
       --set test_size=256 --set layers=1 --set d_model=32 --set dropout=0.0)
pargs=(cell --task sentiment --model lightconv --regime scratch --seed 0 --threads 1 --quiet --set steps=300 --set d_model=32
       --set d_ff=64 --set layers=1 --set decoder_layers=1 --set eval_every=300 --set eval_examples=64 --set checkpoint_every=300)
for app in fpt pretrained_convs; do
  if [ $app = fpt ]; then a_args=("${fargs[@]}"); floor=0.7; else a_args=("${pargs[@]}"); floor=0.52; fi
  "$build/$app" "${a_args[@]}" --out "$tmp/${app}_one" > /dev/null 2>&1
  "$mpirun" -np 2 "$build/$app" "${a_args[@]}" --out "$tmp/${app}_two" > "$tmp/${app}_two.log" 2>&1
  check "$app: 2-rank cell exits 0" "[ $? = 0 ]"
  check "$app: 2-rank result records 2 ranks" "grep -q '\"ranks\": 2' $tmp/${app}_two/results.json"
  a=$(metric "$tmp/${app}_one" test_acc); b=$(metric "$tmp/${app}_two" test_acc)
  check "$app: 2-rank test accuracy $b vs 1-process $a" "awk 'BEGIN { d = $a - $b; exit !(d < 0.03 && d > -0.03 && $b > $floor) }'"
done

[ $fail = 0 ] && echo "mpirun_apps: all passed"
exit $fail
