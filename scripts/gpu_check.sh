#!/usr/bin/env bash
# scripts/gpu_check.sh - on a machine with an NVIDIA GPU: configure, build and run the CUDA checks, and
# write a summary of figures.
#
#   scripts/gpu_check.sh [OUTDIR]        OUTDIR defaults to $OUT, else ./gpu_check_out
#
# Steps (each timed; a failing step is recorded and the script goes on to the next):
#   1. nvidia-smi and nvcc versions
#   2. configure build-gpu/ (Release, Ninja, DL_CUDA_ARCHS=native unless DL_CUDA_ARCHS is set: one
#      architecture compiles twice as fast as the default 90;80)
#   3. build test_cuda, test_cuda_logic, test_nccl, bench_cuda, lra_benchmark with all cores
#   4. test_cuda_logic (the device functors and every device branch on the CPU, through the host twin of the
#      backend), test_cuda (device vs CPU, op by op, and one training step of a tiny Transformer and S4D),
#      test_nccl under `mpirun -np 1` (NCCL collectives on device buffers, a data-parallel AdamW step on the device
#      vs the one-process step) and, with two GPUs or more, under `mpirun -np 2` (one GPU per rank), bench_cuda
#   5. lra_benchmark cell --device cuda, then the same cell on the CPU: ListOps, Transformer and S4D from scratch,
#      40 steps on a cut-down tiny preset (DL_GPU_LRA_STEPS), seed 0; steps/s and accuracies into the summary;
#      with two GPUs or more also the Transformer cell data-parallel on 2 GPUs (`mpirun -np 2 ... --comm nccl`)
#   6. fpt and pretrained_convs: tiny cells on generated data (nothing to download) with --device cuda, then the same
#      cell on the CPU, DL_GPU_APP_STEPS (40) steps each: FPT's bit XOR with the full arm and with the frozen
#      language-pretrained arm (its byte LM pretrained for the same number of steps first, on the same device, in a
#      data cache of each run's own), pretrained_convs' compositional task with lightconv and the T5 Transformer from scratch; the wall
#      time of each run and its training steps/s, cuda beside cpu, and the accuracies (close, not equal: the GPU's
#      summation order differs; tests/cuda_logic/test_app_cells.cpp checks equality on the host twin)
# Files in OUTDIR: summary.txt (the figures: tests passed/failed/skipped, every failing test's name,
# the benchmark table, the LRA cells' steps/s and accuracies), build.log, test_cuda.log, test_cuda_logic.log,
# bench_cuda.json, lra_<model>_<device>.log (the cells' folders under lra_<model>_<device>/), test_nccl_<n>ranks.log,
# app_<app>_<cell>_<device>.log (and folders) for step 6.
# Sized for ~8 minutes on a 16-core H200 box (the build dominates). Dependencies the build needs
# besides the CUDA toolkit: GTest, Google Benchmark, CLI11, a BLAS. If they are not installed there,
# put their .deb files in the folder named by DL_GPU_DEBS (e.g. from `apt-get download` on a machine
# with the same distribution): they are unpacked under /tmp/dl_deps and found through CMAKE_PREFIX_PATH.
# DL_GPU_SKIP_BUILD=1 DL_GPU_BUILD=<folder> skips steps 2-3 and runs what that folder holds.
set -u
cd "$(dirname "$0")/.."
OUTDIR=${1:-${OUT:-$PWD/gpu_check_out}}
mkdir -p "$OUTDIR"
SUMMARY=$OUTDIR/summary.txt
BUILD=${DL_GPU_BUILD:-build-gpu}
JOBS=$(nproc)
: >"$SUMMARY"

note() { echo "$*" | tee -a "$SUMMARY"; }
elapsed() { echo $(($(date +%s) - $1)); }

# Runs "$@" with its output in OUTDIR/$log, records status and seconds in the summary.
step() {
  local name=$1 log=$2
  shift 2
  local t0
  t0=$(date +%s)
  "$@" >"$OUTDIR/$log" 2>&1
  local rc=$?
  note "$(printf '%-22s rc %3d  %4d s  (%s)' "$name" "$rc" "$(elapsed "$t0")" "$log")"
  return $rc
}

# gtest's closing lines: how many passed, failed and skipped, and the failing tests' names.
gtest_figures() {
  local log=$1
  grep -E '^\[  PASSED  \]|^\[  FAILED  \]|^\[  SKIPPED \] [0-9]+ test' "$OUTDIR/$log" | sed 's/^/    /' | tee -a "$SUMMARY"
}

T_START=$(date +%s)
note "gpu_check $(date -u +%FT%TZ) on $(hostname), $JOBS cores, commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
note "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo 'nvidia-smi failed')"
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
note "nvcc: $("$NVCC" --version 2>/dev/null | tail -1 || echo 'not found')"

PREFIX_ARGS=()
if [ -n "${DL_GPU_DEBS:-}" ] && [ -d "$DL_GPU_DEBS" ]; then
  mkdir -p /tmp/dl_deps
  for deb in "$DL_GPU_DEBS"/*.deb; do dpkg -x "$deb" /tmp/dl_deps; done
  PREFIX_ARGS=(-DCMAKE_PREFIX_PATH="/tmp/dl_deps/usr;/tmp/dl_deps/usr/lib/x86_64-linux-gnu/cmake")
  export LD_LIBRARY_PATH=/tmp/dl_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
  note "deps: unpacked $(ls "$DL_GPU_DEBS"/*.deb | wc -l) .deb files from $DL_GPU_DEBS"
fi

if [ -n "${DL_GPU_SKIP_BUILD:-}" ]; then  # reuse an existing build folder as it is (e.g. to try this script without a GPU)
  note "build: skipped (DL_GPU_SKIP_BUILD), using $BUILD as it is"
else
step configure configure.log cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDL_BUILD_BENCH=ON \
  -DDL_CUDA_ARCHS="${DL_CUDA_ARCHS:-native}" "${PREFIX_ARGS[@]}" || {
  tail -20 "$OUTDIR/configure.log" | sed 's/^/    /' | tee -a "$SUMMARY"
  note "total $(elapsed "$T_START") s: configure failed, nothing built"
  exit 1
}
grep -E 'dl: CUDA backend' "$OUTDIR/configure.log" | sed 's/^/    /' | tee -a "$SUMMARY"

step build build.log cmake --build "$BUILD" --target test_cuda_logic test_cuda test_nccl bench_cuda lra_benchmark fpt \
  pretrained_convs -j "$JOBS" ||
  grep -E 'error' "$OUTDIR/build.log" | head -20 | sed 's/^/    /' | tee -a "$SUMMARY"
fi

if [ -x "$BUILD/test_cuda_logic" ]; then
  step test_cuda_logic test_cuda_logic.log "$BUILD/test_cuda_logic"
  gtest_figures test_cuda_logic.log
fi
if [ -x "$BUILD/test_cuda" ]; then
  step test_cuda test_cuda.log timeout 300 "$BUILD/test_cuda"
  gtest_figures test_cuda.log
  grep -E 'no CUDA device' -m1 "$OUTDIR/test_cuda.log" >/dev/null && note "    WARNING: test_cuda skipped tests with 'no CUDA device'"
fi
# NCCL: one rank per GPU. mpirun as root and with one rank per core or more needs these flags (docs/distributed.md).
GPUS=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)
MPIRUN=()
command -v mpirun >/dev/null && MPIRUN=(mpirun --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS=1)
if [ -x "$BUILD/test_nccl" ]; then
  grep -E 'dl: NCCL' "$OUTDIR/configure.log" 2>/dev/null | sed 's/^/    /' | tee -a "$SUMMARY"
  if [ ${#MPIRUN[@]} -gt 0 ]; then
    step "test_nccl 1 rank" test_nccl_1ranks.log timeout 180 "${MPIRUN[@]}" -np 1 "$BUILD/test_nccl"
  else
    step "test_nccl 1 rank" test_nccl_1ranks.log timeout 180 "$BUILD/test_nccl"  # no mpirun: a one-rank MPI job
  fi
  gtest_figures test_nccl_1ranks.log
  grep -E 'built without NCCL|no CUDA device' -m1 "$OUTDIR/test_nccl_1ranks.log" >/dev/null &&
    note "    WARNING: test_nccl skipped its device tests (no device or no NCCL in the build)"
  if [ "$GPUS" -ge 2 ] && [ ${#MPIRUN[@]} -gt 0 ]; then
    step "test_nccl 2 ranks" test_nccl_2ranks.log timeout 240 "${MPIRUN[@]}" -np 2 "$BUILD/test_nccl"
    gtest_figures test_nccl_2ranks.log
  else
    note "    test_nccl 2 ranks: not run ($GPUS GPU(s), mpirun: ${MPIRUN[0]:-none})"
  fi
fi
if [ -x "$BUILD/bench_cuda" ]; then
  step bench_cuda bench_cuda.log timeout 180 "$BUILD/bench_cuda" --benchmark_out="$OUTDIR/bench_cuda.json" \
    --benchmark_out_format=json
  grep -E '^(BM_|sgemm|softmax|fft)' "$OUTDIR/bench_cuda.log" | sed 's/^/    /' | tee -a "$SUMMARY"
fi
# 5. the app on the device, then the same cell on the CPU (same seed: the curves should be close, not identical)
if [ -x "$BUILD/lra_benchmark" ]; then
  LRA_STEPS=${DL_GPU_LRA_STEPS:-40}
  for model in transformer s4d; do
    for dev in cuda cpu; do
      rm -rf "$OUTDIR/lra_${model}_$dev"
      step "lra $model $dev" "lra_${model}_$dev.log" timeout 240 "$BUILD/lra_benchmark" cell --preset tiny --task listops \
        --model "$model" --regime scratch --seed 0 --device "$dev" --threads "$JOBS" --quiet --out "$OUTDIR/lra_${model}_$dev" \
        --set steps="$LRA_STEPS" --set eval_every="$LRA_STEPS" --set checkpoint_every="$LRA_STEPS" --set eval_batches=2 \
        --set train_size=512 --set val_size=64 --set test_size=64 ||
        tail -5 "$OUTDIR/lra_${model}_$dev.log" | sed 's/^/    /' | tee -a "$SUMMARY"
      f=$(find "$OUTDIR/lra_${model}_$dev" -name result.json 2>/dev/null | head -1)
      [ -n "$f" ] && python3 -c "import json,sys; r=json.load(open(sys.argv[1])); m=r.get('metrics',{}); \
g=lambda d, k: -1 if d.get(k) is None else d[k]; \
print('    steps/s %.2f  val_acc %.3f  test_acc %.3f' % (g(r, 'steps_per_s'), g(m, 'val_acc'), g(m, 'test_acc')))" \
        "$f" | tee -a "$SUMMARY"
    done
  done
  if [ "$GPUS" -ge 2 ] && [ ${#MPIRUN[@]} -gt 0 ]; then  # data-parallel on 2 GPUs: the gradients reduced by NCCL
    rm -rf "$OUTDIR/lra_transformer_nccl2"
    step "lra transformer nccl2" lra_transformer_nccl2.log timeout 300 "${MPIRUN[@]}" -np 2 "$BUILD/lra_benchmark" cell \
      --preset tiny --task listops --model transformer --regime scratch --seed 0 --device cuda --comm nccl --threads 1 \
      --out "$OUTDIR/lra_transformer_nccl2" --set steps="$LRA_STEPS" --set eval_every="$LRA_STEPS" \
      --set checkpoint_every="$LRA_STEPS" --set eval_batches=2 --set train_size=512 --set val_size=64 --set test_size=64 ||
      tail -5 "$OUTDIR/lra_transformer_nccl2.log" | sed 's/^/    /' | tee -a "$SUMMARY"
    grep -E '^comm: ' "$OUTDIR/lra_transformer_nccl2.log" | sed 's/^/    /' | tee -a "$SUMMARY"
    f=$(find "$OUTDIR/lra_transformer_nccl2" -name result.json 2>/dev/null | head -1)
    [ -n "$f" ] && python3 -c "import json,sys; r=json.load(open(sys.argv[1])); m=r.get('metrics',{}); \
print('    steps/s %s  val_acc %s  test_acc %s  ranks %s' % (r.get('steps_per_s'), m.get('val_acc'), m.get('test_acc'), \
r.get('extra', {}).get('ranks', r.get('ranks'))))" "$f" | tee -a "$SUMMARY"
  fi
fi
# 6. the other apps on the device, then the same cell on the CPU: one line per cell with both devices' figures
APP_STEPS=${DL_GPU_APP_STEPS:-40}
# app_cell NAME EXE ARGS...: NAME's cell with --device cuda and --device cpu; its summary line holds, per device, the
# wall seconds of the run, the training steps/s and the validation / test accuracies from result.json
app_cell() {
  local name=$1 exe=$2
  shift 2
  [ -x "$BUILD/$exe" ] || return 0
  local line="$name:" dev t0 rc f
  for dev in cuda cpu; do
    rm -rf "$OUTDIR/app_${name}_$dev"
    t0=$(date +%s)
    # a data cache of its own per run (generated tasks need nothing from it): fpt's arm fpt pretrains on each device
    DL_DATA_DIR="$OUTDIR/app_${name}_${dev}_cache" timeout 300 "$BUILD/$exe" cell "$@" --seed 0 --device "$dev" --threads "$JOBS" --quiet --out "$OUTDIR/app_${name}_$dev" \
      --set steps="$APP_STEPS" --set eval_every="$APP_STEPS" --set checkpoint_every="$APP_STEPS" \
      >"$OUTDIR/app_${name}_$dev.log" 2>&1
    rc=$?
    line="$line  $dev rc $rc $(elapsed "$t0") s"
    f=$(find "$OUTDIR/app_${name}_$dev" -name result.json 2>/dev/null | head -1)
    [ -n "$f" ] && line="$line $(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); m=r.get('metrics',{}); \
g=lambda d, k: -1 if d.get(k) is None else d[k]; \
print('%.2f steps/s val %.3f test %.3f' % (g(r, 'steps_per_s'), g(m, 'val_acc'), g(m, 'test_acc')))" "$f")"
    [ $rc -ne 0 ] && tail -3 "$OUTDIR/app_${name}_$dev.log" | sed "s/^/    [$name $dev] /" | tee -a "$SUMMARY"
  done
  note "$line"
}
note "apps on the device ($APP_STEPS steps; wall seconds include data and, for fpt's arm fpt, its LM pretraining):"
app_cell fpt_bit_xor_full fpt --task bit_xor --arm full --set train_size=2000 --set val_size=256 --set test_size=256
app_cell fpt_bit_xor_fpt fpt --task bit_xor --arm fpt --set lm_steps="$APP_STEPS" --set train_size=2000 --set val_size=256 \
  --set test_size=256
app_cell pconv_compositional_lightconv pretrained_convs --task compositional --model lightconv --regime scratch \
  --set train_size=512 --set val_size=64 --set test_size=64 --set eval_examples=64
app_cell pconv_compositional_transformer pretrained_convs --task compositional --model transformer --regime scratch \
  --set train_size=512 --set val_size=64 --set test_size=64 --set eval_examples=64
note "total $(elapsed "$T_START") s"
