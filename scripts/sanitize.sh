#!/usr/bin/env bash
# scripts/sanitize.sh - the tests under the sanitizers, each in a clang build of its own (docs/reliability.md section 4).
#   bash scripts/sanitize.sh asan [ctest args]    AddressSanitizer + UndefinedBehaviorSanitizer over the whole suite
#                                                 (build-asan/, CMake option DL_SANITIZE); any report fails its test;
#                                                 the mpirun tests run last, on their own (below), unless ctest args
#                                                 are given
#   bash scripts/sanitize.sh tsan [gtest filter]  ThreadSanitizer over the tests of the threaded code (build-tsan/,
#                                                 DL_TSAN): test_tensor (parallel elementwise kernels), test_nn
#                                                 (attention per (b, head), S4/S4D convolutions, LSTM), test_autograd
#                                                 (every op: matmul's GEMM panels, FFT rows) and test_tasks_gen (the
#                                                 prefetch thread), with 2 OpenMP threads
#   bash scripts/sanitize.sh tsan-dist            ThreadSanitizer over the data-parallel runs (build-tsan/): test_dist
#                                                 alone and on 2 ranks, a 2-rank cell of every app, mpirun_apps.sh,
#                                                 two_hosts.sh
# The builds run at nice 10 with -j2: the machine is shared. OpenMP is LLVM's libomp (clang's -fopenmp=libomp), which
# is not itself instrumented; its libarcher (OMP_TOOL_LIBRARIES) tells TSan about the runtime's barriers, locks and
# task dependences, so the kernels' threads are checked without false reports from the runtime. OpenBLAS and FFTW
# are not instrumented: the calls into them run on one thread each (OPENBLAS_NUM_THREADS=1), and what they read and
# write is not seen. Leaks are checked (detect_leaks=1); the suppressions, of reports inside Thrust and Open MPI, are
# scripts/ubsan.supp and scripts/lsan.supp.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-asan}"
shift || true
export OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE:-Haswell}" OMP_WAIT_POLICY=PASSIVE   # as scripts/test.sh
flags=(-G Ninja -DCMAKE_CXX_COMPILER=clang++ -DDL_CUDA=OFF -DDL_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo)
case "$mode" in
  asan)
    nice -n 10 cmake -S . -B build-asan "${flags[@]}" -DDL_SANITIZE=ON > /dev/null
    nice -n 10 cmake --build build-asan -j2
    export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1
    export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$PWD/scripts/ubsan.supp"
    # The tests that start mpirun run apart: Open MPI's own leaks (scripts/lsan.supp) are only recognised when the
    # whole stack of every allocation is recorded (fast_unwind_on_malloc=0), which slows every allocation.
    mpi='^dist_mpirun|DataParallelTwoRanks'
    (cd build-asan && nice -n 10 ctest -j2 --timeout 1800 --output-on-failure -E "$mpi" "$@")
    if [ $# -eq 0 ]; then
      # test_dist on 2 ranks and the whole-job kill of a 2-rank classify cell: with the leak check
      (cd build-asan && ASAN_OPTIONS=$ASAN_OPTIONS:fast_unwind_on_malloc=0 \
         nice -n 10 ctest --timeout 1800 --output-on-failure -R 'dist_mpirun_2_ranks|DataParallelTwoRanks')
      # the apps under mpirun (tests/dist/mpirun_apps.sh: 2-rank cells of 200 and 3000 steps, SIGTERM and resume, a
      # killed and a hung rank): memory errors and UBSan only - with whole stacks it ran past its 600 s (loaded machine)
      (cd build-asan && ASAN_OPTIONS=halt_on_error=1:detect_leaks=0 nice -n 10 ctest --output-on-failure -R '^dist_mpirun_apps$')
    fi
    ;;
  tsan)
    archer=$(ls /usr/lib/llvm-*/lib/libarcher.so 2> /dev/null | tail -1)
    [ -n "$archer" ] || { echo "sanitize.sh: libarcher.so not found (Debian: apt-get install libomp-dev)" >&2; exit 1; }
    tests=(test_tensor test_nn test_autograd test_tasks_gen)
    nice -n 10 cmake -S . -B build-tsan "${flags[@]}" -DDL_TSAN=ON > /dev/null
    nice -n 10 cmake --build build-tsan -j2 --target "${tests[@]}"
    export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=1 OMP_TOOL_LIBRARIES="$archer"
    # ignore_noninstrumented_modules: libomp's own pthread_mutex_init / lock pairs are otherwise reported as races
    # (archer asks for it at start-up); reports in our code, the kernels run on the runtime's threads, still come
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1"
    for t in "${tests[@]}"; do
      (cd build-tsan && nice -n 10 "./$t" --gtest_brief=1 --gtest_filter="${1:-*}")
    done
    ;;
  tsan-dist)
    # the data-parallel code under ThreadSanitizer: test_dist as one process and as 2 ranks, each rank with 2 OpenMP
    # threads (the kernels' threads and the main thread that alone calls MPI, MPI_THREAD_FUNNELED); 2-rank cells of
    # every app with 2 threads per rank; then tests/dist/mpirun_apps.sh (SIGTERM and resume, a killed and a hung rank,
    # mismatched configs) and tests/dist/two_hosts.sh (two network namespaces over TCP, a cut link, a killed rank, a
    # slow link) on the TSan binaries: about 16 minutes on 2 cores. Open MPI is not instrumented
    # (ignore_noninstrumented_modules): its progress and event threads are not seen, only the calls our main thread
    # makes into it; without the option TSan reports a lock-order inversion inside its TCP transport
    # (mca_btl_tcp_add_procs / mca_btl_tcp_proc_remove) and libomp's own mutex pairs, none in our code.
    archer=$(ls /usr/lib/llvm-*/lib/libarcher.so 2> /dev/null | tail -1)
    [ -n "$archer" ] || { echo "sanitize.sh: libarcher.so not found (Debian: apt-get install libomp-dev)" >&2; exit 1; }
    apps=(lra_benchmark classify fpt pretrained_convs)
    nice -n 10 cmake -S . -B build-tsan "${flags[@]}" -DDL_TSAN=ON > /dev/null
    nice -n 10 cmake --build build-tsan -j2 --target test_dist "${apps[@]}"
    export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=1 OMP_TOOL_LIBRARIES="$archer"
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1"
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
    mpirun=(mpirun -np 2 --bind-to none)
    tmp=build-tsan/test_tmp/tsan_dist && rm -rf "$tmp" && mkdir -p "$tmp"
    (cd build-tsan && nice -n 10 ./test_dist --gtest_brief=1)
    (cd build-tsan && nice -n 10 "${mpirun[@]}" ./test_dist --gtest_brief=1)
    small=(--seed 0 --threads 2 --quiet --set steps=120)
    cells=("lra_benchmark cell --task listops --model transformer --regime scratch --set seq_len=64 --set d_model=32"
           "lra_benchmark cell --task listops --model s4d --regime scratch --set seq_len=64 --set d_model=32"
           "classify cell --task listops --layer lstm --set seq_len=64 --set d_model=32"
           "fpt cell --task bit_xor --arm full --set layers=1 --set d_model=32 --set dropout=0.0"
           "pretrained_convs cell --task sentiment --model lightconv --regime scratch --set d_model=32 --set d_ff=64 --set layers=1 --set decoder_layers=1 --set eval_examples=32")
    for i in "${!cells[@]}"; do
      read -ra c <<< "${cells[$i]}"
      echo "tsan-dist: 2 ranks: ${cells[$i]}"
      nice -n 10 "${mpirun[@]}" "build-tsan/${c[0]}" "${c[@]:1}" "${small[@]}" --set train_size=500 --set test_size=64 \
        --out "$tmp/cell$i"
    done
    nice -n 10 bash tests/dist/mpirun_apps.sh "$PWD/build-tsan" "$(command -v mpirun)"
    # the two simulated hosts (root only; 77 = skipped): Open MPI's TCP transport between them, the faults of the link
    rc=0 && nice -n 10 bash tests/dist/two_hosts.sh "$PWD/build-tsan" || rc=$?
    [ $rc = 0 ] || [ $rc = 77 ] || exit $rc
    ;;
  *)
    echo "usage: scripts/sanitize.sh asan|tsan|tsan-dist [ctest args | gtest filter]" >&2
    exit 2
    ;;
esac
