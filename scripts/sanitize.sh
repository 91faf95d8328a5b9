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
  *)
    echo "usage: scripts/sanitize.sh asan|tsan [ctest args | gtest filter]" >&2
    exit 2
    ;;
esac
