#!/usr/bin/env bash
# scripts/gpu_check.sh - the CUDA checks on a GPU machine, run from an unpacked bundle (scripts/gpu_bundle.sh): no
# build, no install, nothing that only needs a CPU. docs/cuda.md, "When a device is lent", says how to call it.
#
#   bash dl_gpu_bundle/scripts/gpu_check.sh [OUTDIR]      OUTDIR defaults to $OUT, else ./gpu_check_out
#
# Steps, each capped by the time left of one global deadline (DL_GPU_BUDGET_S, 480 s; the device tool allows 600 s a
# command):
#   1. preflight (seconds): the GPU, its driver and free memory (nvidia-smi), glibc, the CPU against the one the bundle
#      was built on, and where libcuda / libcublas / libcublasLt / libcufft / libnccl were found (the sonames the
#      binaries need, MANIFEST.txt); their folders go on LD_LIBRARY_PATH. No GPU: the no-device mode (every device
#      step says "skipped: no device"). A GPU without a library the binaries need: the summary names it and the check
#      stops there.
#   2. gpu_smoke: each raw kernel, cuBLAS GEMM per transpose pair, the backend's matmul, the cuFFT convolution, the
#      caching allocator, single-rank NCCL, the attention primitive (tiles and rows) and the norms against host
#      references, and the attention tiles' speed against the rows' (smoke.tsv); then the raw kernels once more under
#      compute-sanitizer --tool racecheck (their block reductions share memory), and the attention and norm items under
#      racecheck and synccheck (one warp's scratch in shared memory), when it is there
#   3. the tests through scripts/gpu_tests.py (results.tsv: binary, test, status, seconds, rerun, note): test_cuda and
#      test_nccl whole, test_autograd filtered to '*AgreesOnDevice*' (every OpCase), test_onnx to '*SameFile*' (an ONNX
#      export from a model on the GPU is byte-identical to the CPU's); a crash or a hang costs one test,
#      failures rerun with CUDA_LAUNCH_BLOCKING=1 and under compute-sanitizer memcheck. test_nccl runs as one process:
#      a one-rank MPI job (OpenMPI from the bundle, no mpirun) under NCCL. Without a device only test_nccl's host tests
#      run, to keep this runner honest.
#   4. bench_cuda (sgemm, row softmax, FFT convolution alone), then
#      bench_workloads --device cuda beside bench/torch_workloads.py --device cuda (PyTorch with SDPA) at GPU sizes
#      (DL_GPU_BENCH: transformer_listops 64 x 1024, s4d 64 x 4096, lstm_bits 256 x 256, gpt_char 64 x 512, and the
#      Transformer and GPT again in bf16 beside torch.autocast; 5 steps
#      after 2 warm-up) into bench.jsonl; then one 20-step cell of each app (scripts/gpu_cells.sh) with --device cuda,
#      its steps/s and peak GPU memory, its loss curve against the CPU reference in the bundle (cells.tsv)
#   5. where the time goes: one training step of transformer_listops (its layer's device path: the attention tiles, then
#      the attention rows, then composed) and of
#      s4d at the GPU sizes, op by op
#      (bench_workloads --profile: each op's row waits for the device, autograd/profile.h), the top rows in the
#      summary; then the LRA paper preset's ListOps Transformer (6 layers, width 512, batch 32, length 2000) timed by
#      `lra_benchmark speed --device cuda` against issue 44's 5 steps/s
# DL_GPU_STEPS (default "smoke tests bench cells profile") picks steps 2-5 for a second call within one lease, e.g.
# DL_GPU_STEPS="bench cells" after a first call spent its time on the tests; the preflight always runs.
# OUTDIR receives at most 6 files: summary.txt (written as the steps go, completed by an EXIT trap whatever happens,
# and printed last), results.tsv, smoke.tsv, bench.jsonl, cells.tsv and logs.tar.gz (every process's output).
# Exit status: 0 when nothing failed (also in the no-device mode), 1 when something failed, 2 when stopped in preflight.
set -u
B=$(cd "$(dirname "$0")/.." && pwd)
OUTDIR=${1:-${OUT:-$PWD/gpu_check_out}}
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
T_START=$(date +%s)
DEADLINE=$((T_START + ${DL_GPU_BUDGET_S:-480}))
WORK=$(mktemp -d /tmp/gpu_check.XXXXXX)
LOGS=$WORK/logs
mkdir -p "$LOGS" "$WORK/cells"
SUMMARY=$OUTDIR/summary.txt SMOKE=$OUTDIR/smoke.tsv RESULTS=$OUTDIR/results.tsv BENCH=$OUTDIR/bench.jsonl CELLS=$OUTDIR/cells.tsv
: >"$SUMMARY"
: >"$BENCH"
printf 'binary\ttest\tstatus\tseconds\trerun\tnote\n' >"$RESULTS"
printf 'cell\tsteps_per_s\tcpu_steps_per_s\tmax_rel_train_loss\tmax_rel_val_loss\tval_acc\tcpu_val_acc\tverdict\trc\twall_s\tpeak_gpu_mib\n' >"$CELLS"
# PyTorch (the benchmarks' reference) runs with the library path this machine gave us: the folders the preflight puts
# first for our binaries (the toolkit's lib64) hold another cuDNN than the one PyTorch's wheel brings, and PyTorch
# refuses to start on it (the first run, 2026-12-05: "cuDNN version incompatibility ... (9, 19, 0) ... (9, 14, 0)").
LD_MACHINE=${LD_LIBRARY_PATH-}
source "$B/scripts/gpu_env.sh"
source "$B/scripts/gpu_cells.sh"
REPORT=("${PYTHON:-python3}" "$B/scripts/gpu_check_report.py")
NO_DEVICE="" STOPPED="" FAILED=""

note() { echo "$*" >>"$SUMMARY"; }
STEPS=" ${DL_GPU_STEPS:-smoke tests bench cells profile} "
wanted() { [[ $STEPS == *" $1 "* ]] || { note ""; note "$2: not asked for (DL_GPU_STEPS=${DL_GPU_STEPS:-})"; return 1; }; }
now() { date +%s; }
# seconds a step may take: at most WANT, and never past the deadline less RESERVE (what the later steps need)
cap() { local want=$1 reserve=${2:-20} l; l=$((DEADLINE - $(now) - reserve)); [ "$l" -lt "$want" ] && want=$l; echo $((want > 0 ? want : 0)); }
step() { note ""; note "$1"; STEP_T0=$(now); }
tiles_failed_rows_passed() {  # SMOKE_TSV: an attention.tiles.* item FAIL and an attention.rows.* item PASS
  awk -F'\t' '$1 ~ /^attention\.tiles\./ && $2 == "FAIL" {f = 1} $1 ~ /^attention\.rows\./ && $2 == "PASS" {p = 1}
    END {exit !(f && p)}' "$1" 2>/dev/null
}
step_end() { note "  (step: $(($(now) - STEP_T0)) s)"; }

finish() {
  local rc=$?
  trap - EXIT INT TERM
  [ -n "${MEMW:-}" ] && kill "$MEMW" 2>/dev/null  # a memory watch left by a step that was cut short
  note ""
  [ -n "$NO_DEVICE" ] && note "mode: no device ($NO_DEVICE): the device steps were skipped"
  [ -n "$STOPPED" ] && note "STOPPED: $STOPPED"
  [ -n "$FAILED" ] && note "FAILED:$FAILED"
  note "total $(($(now) - T_START)) s of ${DL_GPU_BUDGET_S:-480}; files in $OUTDIR: $(ls "$OUTDIR" | tr '\n' ' ')logs.tar.gz"
  cp "$B/MANIFEST.txt" "$LOGS/" 2>/dev/null
  (cd "$WORK" && find cells -name '*_data' -prune -o \( -name '*.json' -o -name '*.csv' -o -name '*.md' \) -print |
    tar -czf "$OUTDIR/logs.tar.gz" logs -T - 2>/dev/null) ||
    tar -czf "$OUTDIR/logs.tar.gz" -C "$WORK" logs 2>/dev/null
  rm -rf "$WORK"
  echo "==================== gpu_check summary ($SUMMARY) ===================="
  cat "$SUMMARY"
  if [ -n "$STOPPED" ]; then exit 2; elif [ -n "$FAILED" ] || [ "$rc" -ne 0 ]; then exit 1; else exit 0; fi
}
trap finish EXIT
trap 'note "interrupted by a signal"; FAILED="$FAILED interrupted"; exit 1' INT TERM

# peak GPU memory while a command runs (nvidia-smi, the whole GPU: this process is alone on it); MiB or ""
gpu_mem_watch() {
  [ -n "$NO_DEVICE" ] && return
  (while :; do nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -1; sleep 0.5; done) >"$WORK/mem.txt" &
  MEMW=$!
}
gpu_mem_peak() { [ -n "${MEMW:-}" ] && kill "$MEMW" 2>/dev/null && wait "$MEMW" 2>/dev/null; MEMW=""; sort -n "$WORK/mem.txt" 2>/dev/null | tail -1; }

manifest() { sed -n "s/^$1 *//p" "$B/MANIFEST.txt" 2>/dev/null | head -1; }
note "gpu_check $(date -u +%FT%TZ) on $(hostname): bundle of commit $(manifest commit), packed $(manifest date); budget ${DL_GPU_BUDGET_S:-480} s"

# ---- 1. preflight ---------------------------------------------------------------------------------------------------
step "1 preflight"
if ! command -v nvidia-smi >/dev/null; then
  NO_DEVICE="nvidia-smi not found"
elif ! gpu=$(timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total,memory.free,compute_cap --format=csv,noheader 2>&1); then
  NO_DEVICE="nvidia-smi: $(echo "$gpu" | head -1)"
elif [ -z "$gpu" ]; then
  NO_DEVICE="nvidia-smi lists no GPU"
else
  note "  gpu: $gpu (name, driver, memory, free, compute capability)"
  timeout 30 nvidia-smi -q >"$LOGS/nvidia-smi-q.txt" 2>&1
fi
note "  host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores; glibc $(getconf GNU_LIBC_VERSION 2>/dev/null | cut -d' ' -f2)$(manifest glibc | sed 's/glibc/ (bundle built on/; s/$/)/')"
if [ "$(manifest native)" != OFF ]; then  # a -march=native build may use instructions this CPU lacks
  have=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2-) "
  lacks=$(for f in $(manifest build_flags); do
    [[ $f =~ ^(avx|fma|bmi|f16c|adx|movbe|sha_ni|vaes|vpclmulqdq|gfni|amx) ]] && [[ $have != *" $f "* ]] && echo -n "$f "; done)
  if [ -n "$lacks" ]; then note "  WARNING: the bundle was built with -march=native on $(manifest build_cpu); this CPU lacks: $lacks(a binary may stop with SIGILL)"
  else note "  cpu: has every vector extension of the build machine ($(manifest build_cpu), -march=native)"; fi
fi
# glibc and libstdc++ at least as new as the newest symbol versions the bundle asks for (MANIFEST.txt: requires)
read -r need_glibc need_glibc_by need_cxx need_cxx_by <<<"$(manifest requires)"
have_glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | cut -d' ' -f2)
cxx_lib=$(ldconfig -p 2>/dev/null | awk '$1 == "libstdc++.so.6" && /x86-64/ {print $NF; exit}')
have_cxx=$(grep -a -o 'GLIBCXX_3\.4\.[0-9]*' "${cxx_lib:-/nonexistent}" 2>/dev/null | sort -uV | tail -1)
older() { [ -n "$1" ] && [ -n "$2" ] && [ "$1" != "$2" ] && [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -1)" = "$1" ]; }
if older "$have_glibc" "$need_glibc"; then
  STOPPED="glibc $have_glibc here; the bundle needs $need_glibc ($need_glibc_by asks for it; built on $(manifest glibc)): pack it on an older distribution"
elif older "${have_cxx#GLIBCXX_}" "$need_cxx"; then
  STOPPED="libstdc++ here ($cxx_lib) has ${have_cxx:-no GLIBCXX}; the bundle needs GLIBCXX_$need_cxx ($need_cxx_by)"
fi
[ -n "$need_glibc" ] && note "  runtime: glibc $have_glibc (needs $need_glibc), libstdc++ ${have_cxx#GLIBCXX_} at ${cxx_lib:-?} (needs $need_cxx)"
[ -n "$STOPPED" ] && { step_end; exit 2; }
NEEDS=$(manifest needs)
[ -n "$NEEDS" ] || NEEDS="libcublas.so.13 libcublasLt.so.13 libcufft.so.12 libnccl.so.2"
WANT=""
for so in $NEEDS; do [[ $so =~ ^lib(cublas|cublasLt|cufft|nccl)\.so ]] && WANT="$WANT $so"; done
note "  libraries (searched: toolkit lib64, /usr/local/nvidia, ldconfig -p, every python's site-packages nvidia/*/lib):"
dl_gpu_libs libcuda.so.1 $WANT >>"$SUMMARY"
note "  LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
dl_bundle_env "$B"
missing_gpu_libs=""
for so in $DL_GPU_MISSING; do [ "$so" = libcuda.so.1 ] || missing_gpu_libs="$missing_gpu_libs $so"; done
unresolved=$(for f in "$B"/bin/*; do ldd "$f" 2>&1 | grep 'not found' | sed "s|^|$(basename "$f"): |"; done | sort -u | head -10)
[ -n "$unresolved" ] && note "  the loader cannot resolve: $(echo "$unresolved" | tr '\n' ';' | tr -s ' \t' ' ')"
if [ -z "$NO_DEVICE" ] && [ -n "$missing_gpu_libs" ]; then  # a GPU, but the binaries cannot start: nothing to run
  STOPPED="this GPU machine lacks${missing_gpu_libs} (needed by every bundled binary; install the CUDA 13 toolkit's libraries or the pip wheels nvidia-cublas, nvidia-cufft, nvidia-nccl-cu13)"
  step_end
  exit 2
fi
[ -n "$missing_gpu_libs" ] && note "  (no device, and no${missing_gpu_libs}: the binaries cannot start here)"
if [ -z "$NO_DEVICE" ] && [[ " $DL_GPU_MISSING " == *" libcuda.so.1 "* ]]; then
  NO_DEVICE="nvidia-smi sees a GPU, but the driver library libcuda.so.1 is not found"
fi
step_end

# ---- 2. the smoke driver --------------------------------------------------------------------------------------------
if wanted smoke "2 gpu_smoke"; then
step "2 gpu_smoke (raw kernels, cuBLAS, cuFFT, allocator, NCCL, attention, norms against host references)"
timeout -k 5 "$(cap 90 300)" "$B/bin/gpu_smoke" --tsv "$SMOKE" >"$LOGS/smoke.log" 2>&1
rc=$?
head -1 "$LOGS/smoke.log" | sed 's/^/  /' >>"$SUMMARY"
"${REPORT[@]}" smoke "$SMOKE" >>"$SUMMARY" 2>&1
[ $rc -eq 0 ] || FAILED="$FAILED smoke(rc $rc)"
[ $rc -le 1 ] || tail -3 "$LOGS/smoke.log" | sed 's/^/  | /' >>"$SUMMARY"  # not its verdict: it died (signal, timeout)
if [ -z "$NO_DEVICE" ] && grep -q '^gpu_smoke: skipped: no device' "$LOGS/smoke.log"; then
  NO_DEVICE="nvidia-smi sees a GPU but the CUDA runtime does not: $(sed -n 's/^gpu_smoke: skipped: no device (\(.*\))/\1/p' "$LOGS/smoke.log" | head -1)"
fi
if [ -n "$NO_DEVICE" ]; then  # the driver's own words, when the smoke driver has them
  why=$(sed -n 's/^gpu_smoke: skipped: no device (\(.*\))/\1/p' "$LOGS/smoke.log" | head -1)
  [ -n "$why" ] && [[ $NO_DEVICE != *"$why"* ]] && NO_DEVICE="$NO_DEVICE; CUDA runtime: $why"
fi
# The attention tiles failed where the rows passed: the later steps run the rows' kernels, so their figures still mean
# something (the smoke's lines say what the tiles got wrong)
if tiles_failed_rows_passed "$SMOKE"; then
  export DL_ATTENTION_TC=0
  note "  the attention tiles FAILED on this GPU and the rows passed: every later step runs the rows (DL_ATTENTION_TC=0)"
fi
SANITIZER=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer \
  /opt/nvidia/*/compute-sanitizer 2>/dev/null | head -1)
# shared memory under the sanitizer: races in the row kernels' block reductions, and in the attention tiles and the
# warp-per-row norms (one warp's scratch, phases separated by __syncwarp) races and misused warp barriers (synccheck)
for spec in "racecheck kernel. the raw kernels" "racecheck attention. the attention tiles" "synccheck attention. the attention tiles" \
  "racecheck norm. the warp-per-row norms" "synccheck norm. the warp-per-row norms"; do
  read -r tool prefix what <<<"$spec"
  if [ -z "$NO_DEVICE" ] && [ -n "$SANITIZER" ] && [ "$(cap 60 330)" -ge 20 ]; then
    log=$LOGS/smoke_${tool}_${prefix%.}.log
    timeout -k 5 "$(cap 60 330)" "$SANITIZER" --tool "$tool" --error-exitcode 99 "$B/bin/gpu_smoke" --only "$prefix" >"$log" 2>&1
    rc=$?
    note "  $tool (compute-sanitizer, $what): $(grep -m1 -E '(ERROR|RACECHECK|SYNCCHECK) SUMMARY' "$log" | sed 's/^=* *//' || echo "no summary"), exit $rc$(
      [ $rc -eq 99 ] && echo ": errors found" || { [ $rc -ne 0 ] && echo ": the smoke itself failed or was stopped"; })"
    [ $rc -eq 0 ] || FAILED="$FAILED $tool:${prefix%.}(rc $rc)"
  elif [ -z "$NO_DEVICE" ]; then
    note "  $tool ($what): not run (${SANITIZER:+not enough time left}${SANITIZER:-compute-sanitizer not found})"
  fi
done
step_end
fi

# ---- 3. the tests ---------------------------------------------------------------------------------------------------
run_tests() {  # BIN FILTER SECONDS
  [ "$3" -ge 10 ] || { note "  $1: not run (out of time)"; FAILED="$FAILED $1(no time)"; return; }
  "${PYTHON:-python3}" "$B/scripts/gpu_tests.py" --bin "$B/bin/$1" --filter "$2" --budget "$3" --logs "$LOGS" --tsv "$RESULTS" \
    --sanitizer "${SANITIZER:-}" --stall "${DL_GPU_TEST_STALL:-60}" >>"$LOGS/gpu_tests.log" 2>&1 ||
    { note "  $1: the runner failed: $(tail -1 "$LOGS/gpu_tests.log")"; FAILED="$FAILED $1(runner)"; }
}
SANITIZER=${SANITIZER:-$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer \
  /usr/local/cuda/compute-sanitizer/compute-sanitizer /opt/nvidia/*/compute-sanitizer 2>/dev/null | head -1)}
if ! wanted tests "3 tests"; then
  :
elif [ -n "$NO_DEVICE" ]; then
  step "3 tests: skipped: no device ($NO_DEVICE)"
  note "  runner check: test_nccl's host tests (NcclChoice.*, NcclBuckets.*) through the same runner"
  run_tests test_nccl 'NcclChoice.*:NcclBuckets.*' "$(cap 60 20)"
else
  step "3 tests (one process per binary; crash, hang and sticky-error isolation; compute-sanitizer: ${SANITIZER:-not found})"
  t_tests=$(cap 210 180)  # leaves about 3 minutes for the benchmarks and the cells
  t_end=$(($(now) + t_tests))
  for spec in "test_cuda|*|35" "test_nccl|*|15" "test_autograd|*AgreesOnDevice*|45" "test_onnx|*SameFile*|5"; do
    IFS='|' read -r bin filter share <<<"$spec"
    left=$((t_end - $(now)))
    run_tests "$bin" "$filter" "$((left < t_tests * share / 100 + 30 ? left : t_tests * share / 100 + 30))"
  done
fi
if [[ $STEPS == *" tests "* ]]; then
  "${REPORT[@]}" tests "$RESULTS" >>"$SUMMARY" 2>&1
  awk -F'\t' 'NR > 1 && $3 != "passed" && $3 != "skipped" {n++} END {exit n > 0}' "$RESULTS" || FAILED="$FAILED tests"
  step_end
fi

# ---- 4. benchmarks beside PyTorch, and one device cell of each app ----------------------------------------------------
if [ -n "$NO_DEVICE" ]; then
  step "4 benchmarks and app cells: skipped: no device ($NO_DEVICE)"
  note "  cells that would run: $(for c in "${DL_GPU_CELLS[@]}"; do echo -n "${c%%|*} "; done)(CPU references in the bundle: $(ls "$B/reference" 2>/dev/null | wc -l))"
else
  if wanted bench "4a benchmarks"; then
  step "4a bench_cuda; bench_workloads --device cuda beside PyTorch $(${PYTHON:-python3} -c 'import torch; print(torch.__version__)' 2>/dev/null || echo '(not importable)') with SDPA"
  c=$(cap 45 160)
  if [ "$c" -ge 15 ]; then  # the backend's hot ops alone: sgemm, row softmax, FFT convolution
    timeout -k 5 "$c" "$B/bin/bench_cuda" --benchmark_min_time=0.2 --benchmark_out="$LOGS/bench_cuda.json" \
      --benchmark_out_format=json >"$LOGS/bench_cuda.log" 2>&1
    rc=$?
    note "  bench_cuda (exit $rc; logs/bench_cuda.json):"
    grep -E '^BM_' "$LOGS/bench_cuda.log" | sed 's/^/    /' >>"$SUMMARY"
    [ $rc -eq 0 ] || FAILED="$FAILED bench_cuda"
  fi
  # WORKLOAD:BATCH:LEN[:PRECISION]; bf16: ours with --precision bf16 (cuBLAS bf16 GEMMs, float32 sums) beside autocast
  for spec in ${DL_GPU_BENCH:-transformer_listops:64:1024 transformer_listops:64:1024:bf16 s4d:64:4096 lstm_bits:256:256 gpt_char:64:512 gpt_char:64:512:bf16}; do
    IFS=: read -r wl batch len prec <<<"$spec"
    prec=${prec:-fp32}
    tag=$wl$([ "$prec" = fp32 ] || echo "_$prec")
    for variant in ours torch; do
      c=$(cap 75 100)
      if [ "$c" -lt 15 ]; then note "  $variant $tag: not run (out of time)"; continue; fi
      if [ $variant = ours ]; then cmd=("$B/bin/bench_workloads" "$wl" --device cuda --batch "$batch" --len "$len" --steps 5 --warmup 2 --threads 8 --precision "$prec")
      else cmd=(env LD_LIBRARY_PATH="$LD_MACHINE" "${PYTHON:-python3}" "$B/bench/torch_workloads.py" "$wl" --device cuda --batch "$batch" --len "$len" --steps 5 --warmup 2 --threads 8 --precision "$prec"); fi
      gpu_mem_watch
      timeout -k 5 "$c" "${cmd[@]}" >"$LOGS/bench_${variant}_$tag.log" 2>&1
      rc=$?
      peak=$(gpu_mem_peak)
      line=$(grep -m1 '^{' "$LOGS/bench_${variant}_$tag.log")
      if [ $rc -eq 0 ] && [ -n "$line" ] && [[ $line != *'"error"'* ]]; then
        echo "${line%\}}, \"variant\": \"$variant\", \"peak_gpu_mib\": ${peak:-null}}" >>"$BENCH"
      else
        err=$( (grep -m1 -o '"error": "[^"]*"' "$LOGS/bench_${variant}_$tag.log"; tail -2 "$LOGS/bench_${variant}_$tag.log") | tr '\n"\\' "  /" | cut -c1-300)
        echo "{\"workload\": \"$wl\", \"precision\": \"$prec\", \"len\": $len, \"batch\": $batch, \"variant\": \"$variant\", \"failed\": true, \"rc\": $rc, \"error\": \"$err\"}" >>"$BENCH"
        [ $variant = ours ] && FAILED="$FAILED bench:$tag"
      fi
    done
  done
  "${REPORT[@]}" bench "$BENCH" >>"$SUMMARY" 2>&1
  step_end
  fi
  if wanted cells "4b app cells"; then

  step "4b app cells, $DL_GPU_CELL_STEPS steps each with --device cuda, against the bundle's CPU curves (cells.tsv)"
  for entry in "${DL_GPU_CELLS[@]}"; do
    IFS='|' read -r cell exe args <<<"$entry"
    c=$(cap 90 15)
    if [ "$c" -lt 15 ]; then note "  $cell: not run (out of time)"; FAILED="$FAILED cell:$cell(no time)"; continue; fi
    t=$(now)
    gpu_mem_watch
    # shellcheck disable=SC2086  # ARGS is split on spaces by design (scripts/gpu_cells.sh)
    DL_DATA_DIR="$WORK/cells/${cell}_data" timeout -k 5 "$c" "$B/bin/$exe" "${DL_GPU_CELL_ARGS[@]}" $args --device cuda --threads 8 \
      --out "$WORK/cells/$cell" >"$LOGS/cell_$cell.log" 2>&1
    rc=$?
    wall=$(($(now) - t)) peak=$(gpu_mem_peak)
    f=$(find "$WORK/cells/$cell/cells" -name result.json 2>/dev/null | head -1)
    if [ -n "$f" ]; then
      row=$("${REPORT[@]}" cell "$cell" "$f" "$B/reference/$cell" 2>>"$LOGS/report.log")
      note "  $(echo "$row" | awk -F'\t' -v rc=$rc -v w=$wall -v p="$peak" '{printf "%-30s %s steps/s (cpu %s), max rel dloss train %s val %s, val_acc %s (cpu %s): %s; rc %s, %s s, peak %s MiB", $1, $2, $3, $4, $5, $6, $7, $8, rc, w, p}')"
    else
      why=$( [ $rc -eq 124 ] || [ $rc -eq 137 ] && echo "stopped at its $c s cap" || tail -1 "$LOGS/cell_$cell.log" | cut -c1-200)
      row=$(printf '%s\t\t\t\t\t\t\tno result (%s)' "$cell" "$why")
      note "  $cell: no result.json, rc $rc after $wall s: $why"
    fi
    printf '%s\t%s\t%s\t%s\n' "$row" "$rc" "$wall" "$peak" >>"$CELLS"
    [ $rc -eq 0 ] && [[ $row != *DIVERGED* ]] || FAILED="$FAILED cell:$cell"
  done
  step_end
  fi
  if wanted profile "5 where the time goes"; then
  step "5 where the time goes: one step op by op (bench_workloads --profile); the paper preset's ListOps Transformer"
  # WORKLOAD:BATCH:LEN[:ATTENTION]; the Transformer on the layer's own device path (the flash primitive: its
  # tensor-core tiles), on that primitive's rows' kernels (rows: DL_ATTENTION_TC=0), and composed (cuBLAS products and
  # a T x T matrix: what the first run's benchmark timed)
  for spec in ${DL_GPU_PROFILE:-transformer_listops:64:1024 transformer_listops:64:1024:rows transformer_listops:64:1024:composed s4d:64:4096}; do
    IFS=: read -r wl batch len attn <<<"$spec"
    attn=${attn:-best}
    c=$(cap 60 60)
    if [ "$c" -lt 15 ]; then note "  profile $wl ($attn): not run (out of time)"; continue; fi
    log=$LOGS/profile_${wl}_$attn.log
    tc=${DL_ATTENTION_TC:-1}  # 0 after the smoke saw the tiles fail
    [ "$attn" = rows ] && tc=0
    DL_ATTENTION_TC=$tc timeout -k 5 "$c" "$B/bin/bench_workloads" "$wl" --device cuda --batch "$batch" --len "$len" \
      --attention "${attn/rows/best}" --steps 1 --warmup 1 --threads 8 --profile >"$log" 2>&1
    rc=$?
    note "  profile $wl, attention $attn ($batch x $len, exit $rc; logs/$(basename "$log")), the ops of one step, longest first:"
    grep -E '^\| ' "$log" | grep -v -e '| ---' | head -14 | cut -c1-150 | sed 's/^/    /' >>"$SUMMARY"
    grep -E ' ops; forward|^AdamW|^\{' "$log" | cut -c1-300 | sed 's/^/    /' >>"$SUMMARY"
    [ $rc -eq 0 ] || FAILED="$FAILED profile:$wl:$attn"
  done
  c=$(cap 120 5)
  if [ "$c" -ge 20 ]; then
    gpu_mem_watch
    DL_DATA_DIR="$WORK/cells/paper_data" timeout -k 5 "$c" "$B/bin/lra_benchmark" speed --preset paper --tasks listops \
      --models transformer --device cuda --steps 3 --warmup 1 --threads 8 ${DL_GPU_PAPER_SETS:-} >"$LOGS/paper_listops.log" 2>&1
    rc=$?
    peak=$(gpu_mem_peak)
    line=$(grep -m1 '^{' "$LOGS/paper_listops.log")
    if [ $rc -eq 0 ] && [ -n "$line" ]; then
      note "  LRA paper preset, ListOps Transformer (target 5 steps/s): $(echo "$line" | "${PYTHON:-python3}" -c '
import json, sys
j = json.loads(sys.stdin.read())
print("{steps_per_s} steps/s ({ms_per_step} ms), batch {batch} x {seq_len}, {params} params,".format(**j), "%.2f model TFLOP/s" % (j["gflops"] / 1000))' 2>&1), peak ${peak:-?} MiB"
    else
      note "  LRA paper preset, ListOps Transformer: failed, rc $rc: $(tail -1 "$LOGS/paper_listops.log" | cut -c1-200)"
      FAILED="$FAILED paper_listops"
    fi
  else
    note "  LRA paper preset, ListOps Transformer: not run (out of time)"
  fi
  step_end
  fi
fi
