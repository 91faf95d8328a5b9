#!/usr/bin/env bash
# scripts/fuzz.sh - build the libFuzzer targets (fuzz/fuzz_*.cpp, every library instrumented with ASan + UBSan) in
# build-fuzz/ with clang, write the seed corpus, and run each target; prints runs and executions per second of each.
#
#   bash scripts/fuzz.sh                 each target for 60 s (a longer campaign: --seconds 3600)
#   bash scripts/fuzz.sh --ci            each target for a bounded number of runs from a fixed seed (what
#                                        scripts/test.sh runs: the same inputs on every CI run)
#   bash scripts/fuzz.sh --seconds 20 --only wav,checkpoint
#   bash scripts/fuzz.sh --ci --tests    also build four test binaries on the same instrumented libraries and run them
#                                        (test_tensor, test_autograd, test_optim, test_tasks_gen: what scripts/test.sh
#                                        runs; an ASan or UBSan report, or a leak, fails the run - docs/reliability.md)
# A crash (a sanitizer report, a trap from a broken invariant, another exception type) stops with the input saved
# as build-fuzz/findings/<target>/crash-*; reproduce with build-fuzz/fuzz_<target> <that file>, then add the input
# as a regression test beside the reader's tests. Corpora grow in build-fuzz/corpus/<target>/ between runs.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60 runs=0 only="" tests=0 jobs="${DL_JOBS:-$(nproc)}" seed=0
while [ $# -gt 0 ]; do
  case "$1" in
    --ci) runs=4000; seconds=0; seed=1 ;;
    --tests) tests=1 ;;
    --seconds) seconds="$2"; shift ;;
    --runs) runs="$2"; seconds=0; shift ;;
    --only) only="$2"; shift ;;
    *) echo "fuzz.sh: unknown flag '$1' (known: --ci, --seconds S, --runs N, --only a,b, --tests)" >&2; exit 2 ;;
  esac
  shift
done
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ is missing (bash scripts/setup.sh installs it)" >&2; exit 1; }

B=build-fuzz
# --tests needs the test targets (GoogleTest) configured in; a build folder made without them is configured again
if [ ! -f "$B/build.ninja" ] || { [ "$tests" = 1 ] && ! grep -q '^DL_BUILD_TESTS:BOOL=ON' "$B/CMakeCache.txt"; }; then
  CXX=clang++ cmake -S . -B "$B" -G Ninja -DDL_FUZZ=ON -DDL_CUDA=OFF -DDL_MPI=OFF -DDL_BUILD_TESTS=$([ "$tests" = 1 ] && echo ON || echo OFF) \
      -DDL_BUILD_BENCH=OFF -DDL_NATIVE=OFF >/dev/null
fi
start=$(date +%s)
cmake --build "$B" --target fuzz_all -j "$jobs" | grep -E "error|warning: unused" || true
[ -x "$B/fuzz_make_corpus" ] || { echo "fuzz.sh: the fuzz build failed" >&2; exit 1; }
echo "fuzz: built in $(( $(date +%s) - start )) s"
rm -rf "$B/seeds"
"$B/fuzz_make_corpus" "$B/seeds" >/dev/null

targets=$(cd "$B" && ls fuzz_* | grep -v make_corpus | sed 's/^fuzz_//' | sort)
[ -n "$only" ] && targets=$(echo "$only" | tr ',' '\n')
printf "%-16s %10s %8s %10s %8s  %s\n" target runs seconds "exec/s" corpus result
fail=0
for t in $targets; do
  [ -x "$B/fuzz_$t" ] || { echo "fuzz.sh: no target '$t' (have: $(echo $targets))" >&2; exit 2; }
  mkdir -p "$B/corpus/$t" "$B/findings/$t"
  limit=(-max_total_time="$seconds"); [ "$runs" -gt 0 ] && limit=(-runs="$runs")
  # --ci: a fixed seed, so that CI runs the same inputs every time and a red CI is a change's doing; the campaigns
  # (no --ci) draw a new seed each run and are where new findings come from (run one per session: docs/reliability.md)
  [ "$seed" -gt 0 ] && limit+=(-seed="$seed")
  log="$B/findings/$t/last.log"
  # -timeout: one input taking 10 s is a hang; -rss_limit_mb: a reader must not allocate what the header claims
  t0=$(date +%s.%N)
  if ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 OMP_NUM_THREADS=1 \
     "$B/fuzz_$t" "$B/corpus/$t" "$B/seeds/$t" "${limit[@]}" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
     -artifact_prefix="$B/findings/$t/" -print_final_stats=1 >"$log" 2>&1; then
    result=ok
  else
    result="CRASH (see $log)"; fail=1
  fi
  done_runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
  rate=$(awk -v n="$done_runs" -v s="$secs" 'BEGIN {printf (n ~ /^[0-9]+$/ && s > 0) ? "%.0f" : "?", n / s}')
  printf "%-16s %10s %8s %10s %8s  %s\n" "$t" "$done_runs" "$secs" "$rate" "$(ls "$B/corpus/$t" | wc -l)" "$result"
done

# The sanitizer subset of the tests: the libraries above are already compiled with ASan + UBSan (and libFuzzer's
# coverage hooks, which do nothing without libFuzzer), so these four cost their own sources only. Any UBSan report
# aborts (-fno-sanitize-recover), detect_leaks fails a test binary that leaks.
if [ "$tests" = 1 ]; then
  sanitizer_tests=(test_tensor test_autograd test_optim test_tasks_gen)
  mkdir -p "$B/test_logs"
  start=$(date +%s)
  if ! cmake --build "$B" --target "${sanitizer_tests[@]}" -j "$jobs" >"$B/test_logs/build.log" 2>&1; then
    grep -E "error" "$B/test_logs/build.log" | head -20
    echo "fuzz.sh: the sanitizer tests did not build (see $B/test_logs/build.log)" >&2; exit 1
  fi
  echo "sanitizer tests: built in $(( $(date +%s) - start )) s"
  for t in "${sanitizer_tests[@]}"; do
    log="$B/test_logs/$t.log"
    t0=$(date +%s.%N)
    # timeout: a hang is a named failure of this binary, not a CI job that runs into its limit
    if [ -x "$B/$t" ] && (cd "$B" && OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE:-Haswell}" OMP_WAIT_POLICY=PASSIVE \
        ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        timeout -k 10 600 "./$t" --gtest_brief=1) >"$log" 2>&1; then
      result=ok
    else
      rc=$?
      case "$rc" in 124|137) echo "fuzz.sh: $t ran past 600 s (a hang?) and was stopped" >>"$log" ;; esac
      result="FAILED (see $log)"; fail=1; tail -30 "$log"
    fi
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
    printf "%-16s %6s tests %8s s  %s\n" "$t" "$(grep -o '^\[==========\] [0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")" "$secs" "$result"
  done
fi
exit $fail
