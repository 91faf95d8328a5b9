// bench/bench_ssm_step.cpp - S4's recurrent mode: the O(N) DPLR step (Sherman-Morrison, nn/ssm/s4.h DPLRStep) against
// its twin with the dense (N, N) Abar, O(N^2) per step (StepParams). Both are float64 references (the training
// path is the FFT convolution), so this measures the algorithm, not a tuned kernel. The step parameters are set
// up once outside the timing (recovering C from C tilde is a dense solve either way). Counters: state updates
// per second, and for the O(N) step its speed-up over the dense step of the same size, measured just before.
// Run: OMP_WAIT_POLICY=PASSIVE ./build-perf/bench_ssm_step
#include <benchmark/benchmark.h>

#include <chrono>
#include <functional>

#include "nn/ssm/s4.h"

using namespace dl;

static constexpr int64_t kSteps = 1024;

template <class Step> static double run_steps(const Step& s, int64_t n) {
  std::vector<nn::cplx> x(n, 0.0);
  for (int64_t t = 0; t < kSteps; t++) s.step(0, x, t % 7 == 0 ? 1.0 : -0.25);
  return x[0].real();
}

static double seconds_per_call(const std::function<void()>& f) {
  f();
  int reps = 0;
  auto t0 = std::chrono::steady_clock::now();
  double el = 0;
  while (el < 0.3 || reps < 2) {
    f();
    reps++;
    el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return el / reps;
}

// args: d_state N, dense (1) or O(N) (0); one channel, kSteps steps
static void BM_S4RecurrentStep(benchmark::State& st) {
  const int64_t N = st.range(0);
  const bool dense = st.range(1);
  Generator g(1);
  nn::S4Options o;
  o.kernel.d_state = N;
  nn::S4 layer(1, o, g);
  layer.kernel->forward(64);
  auto dp = layer.kernel->step_params();
  auto fp = layer.kernel->dplr_step_params();
  double dense_s = dense ? 0 : seconds_per_call([&] { benchmark::DoNotOptimize(run_steps(dp, N)); });
  auto t0 = std::chrono::steady_clock::now();
  int64_t iters = 0;
  for (auto _ : st) {
    benchmark::DoNotOptimize(dense ? run_steps(dp, N) : run_steps(fp, N));
    iters++;
  }
  double ours = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / std::max<int64_t>(iters, 1);
  st.counters["updates/s"] = benchmark::Counter((double)kSteps, benchmark::Counter::kIsIterationInvariantRate);
  if (!dense) st.counters["speedup_vs_dense"] = dense_s / ours;
}
BENCHMARK(BM_S4RecurrentStep)
    ->Args({16, 1})
    ->Args({16, 0})
    ->Args({64, 1})
    ->Args({64, 0})
    ->Args({256, 1})
    ->Args({256, 0})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

BENCHMARK_MAIN();
