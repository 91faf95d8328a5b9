// bench/bench_kernels_b.cpp - matmul/linear against a direct cblas_sgemm call of the same size, and batched
// rfft/irfft throughput. Counters: GFLOP/s (2 M N K per product), ratio_to_sgemm (our GFLOP/s over the direct
// call's, measured in the same process just before), GB/s for the FFTs (bytes read + written).
// The direct call is OpenBLAS at its best on this machine: its own thread pool with one thread per core. Our matmul
// runs OpenBLAS single-threaded and cuts large products into panels over the OpenMP threads (tensor/linalg.cpp), so
// the baseline switches OpenBLAS to all cores for its calls and back to one thread before ours run.
// BM_FmaPeak: the processor's float32 multiply-add ceiling on one thread, 256- and 512-bit vectors: 12 independent
// chains (more than latency x pipes), every result used, so nothing is folded away. Two cores run twice its rate.
// On a Zen 4 (family 25 model 17, 2026-12-03) both widths give ~115 GFLOP/s: its 512-bit FMAs go through the
// 256-bit pipes in two halves, so AVX-512 raises no ceiling there (docs/performance.md, "The machine's ceiling").
// On a Zen 5 (family 26 model 2, 2026-12-04) 512-bit FMAs run at full width: 115 GFLOP/s at 256 bits, 230 at 512,
// which is what the AVX-512 sgemm (tensor/fast_sgemm.h) uses and OpenBLAS, held to AVX2 here, does not.
// Run: OPENBLAS_CORETYPE=Haswell OMP_WAIT_POLICY=PASSIVE ./build/bench_kernels_b
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <omp.h>

#include <chrono>

#include "tensor/ops.h"

using namespace dl;

extern "C" void openblas_set_num_threads(int);

// Scope in which OpenBLAS uses one thread per core (the direct baseline); ours runs with it back at 1 thread.
struct BlasAllCores {
  BlasAllCores() { openblas_set_num_threads(omp_get_max_threads()); }
  ~BlasAllCores() { openblas_set_num_threads(1); }
};

static double sgemm_seconds(int64_t M, int64_t N, int64_t K, const float* A, const float* B, float* C) {
  BlasAllCores all;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.f, A, (int)K, B, (int)N, 0.f, C, (int)N);
  int reps = 0;
  auto t0 = std::chrono::steady_clock::now();
  double el = 0;
  while (el < 0.5 || reps < 3) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.f, A, (int)K, B, (int)N, 0.f, C, (int)N);
    reps++;
    el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return el / reps;
}

// args: M, K, N (plain cblas_sgemm on contiguous row-major operands)
static void BM_SgemmDirect(benchmark::State& st) {
  int64_t M = st.range(0), K = st.range(1), N = st.range(2);
  Tensor a = randn({M, K}), b = randn({K, N}), c = Tensor::empty({M, N});
  BlasAllCores all;
  for (auto _ : st) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.f, a.data<float>(), (int)K, b.data<float>(),
                (int)N, 0.f, c.data<float>(), (int)N);
    benchmark::ClobberMemory();
  }
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * M * N * K * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// args: batch (0 = plain 2-D a), M, K, N; a (batch, M, K) @ b (K, N) -- the batch is folded into M
static void BM_Matmul(benchmark::State& st) {
  int64_t nb = st.range(0), M = st.range(1), K = st.range(2), N = st.range(3), Mt = M * std::max<int64_t>(nb, 1);
  Tensor a = nb ? randn({nb, M, K}) : randn({M, K}), b = randn({K, N});
  Tensor c = Tensor::empty({Mt, N});
  double direct = 2.0 * Mt * N * K * 1e-9 / sgemm_seconds(Mt, N, K, a.data<float>(), b.data<float>(), c.data<float>());
  auto t0 = std::chrono::steady_clock::now();
  int64_t iters = 0;
  for (auto _ : st) {
    Tensor y = matmul(a, b);
    benchmark::DoNotOptimize(y.raw_data());
    iters++;
  }
  double ours = 2.0 * Mt * N * K * 1e-9 * iters / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * Mt * N * K * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["sgemm_GFLOP/s"] = direct;
  st.counters["ratio_to_sgemm"] = ours / direct;
}

// args: rows, in, out: linear(x (rows, in), w (out, in), b) -- w^T passed as CblasTrans, bias as beta = 1
static void BM_Linear(benchmark::State& st) {
  int64_t R = st.range(0), I = st.range(1), O = st.range(2);
  Tensor x = randn({R, I}), w = randn({O, I}), bias = randn({O}), c = Tensor::empty({R, O});
  Tensor wt = w.transpose(0, 1).contiguous();
  double direct = 2.0 * R * O * I * 1e-9 / sgemm_seconds(R, O, I, x.data<float>(), wt.data<float>(), c.data<float>());
  auto t0 = std::chrono::steady_clock::now();
  int64_t iters = 0;
  for (auto _ : st) {
    Tensor y = linear(x, w, bias);
    benchmark::DoNotOptimize(y.raw_data());
    iters++;
  }
  double ours = 2.0 * R * O * I * 1e-9 * iters / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * R * O * I * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["sgemm_GFLOP/s"] = direct;
  st.counters["ratio_to_sgemm"] = ours / direct;
}

// args: batch, n
#if defined(__clang__)  // clang tunes -march=native to 256-bit vectors; the 512-bit case asks for the wide registers
#define DL_WIDE __attribute__((min_vector_width(512)))
#else
#define DL_WIDE
#endif
template <int kBits>
DL_WIDE static void BM_FmaPeak(benchmark::State& st) {
  constexpr int kLanes = kBits / 32, kChains = 12;
  typedef float vf __attribute__((vector_size(kLanes * sizeof(float))));
  vf acc[kChains], b, c;
  for (int i = 0; i < kLanes; i++) b[i] = 0.999f, c[i] = 0.001f;
  for (auto& a : acc) a = b;
  const int64_t steps = 1 << 20;
  for (auto _ : st) {
    for (int64_t s = 0; s < steps; s++)
#pragma GCC unroll 12
      for (int j = 0; j < kChains; j++) acc[j] = acc[j] * b + c;  // one FMA each (-ffp-contract=on)
    benchmark::ClobberMemory();
  }
  float sum = 0;
  for (auto& a : acc) sum += a[0];
  benchmark::DoNotOptimize(sum);
  st.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * kLanes * kChains * steps * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

static void BM_Rfft(benchmark::State& st) {
  int64_t B = st.range(0), n = st.range(1);
  Tensor x = randn({B, n});
  for (auto _ : st) {
    Tensor X = rfft(x, n);
    benchmark::DoNotOptimize(X.raw_data());
  }
  double bytes = (double)B * n * 4 + (double)B * (n / 2 + 1) * 8;
  st.counters["GB/s"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

static void BM_Irfft(benchmark::State& st) {
  int64_t B = st.range(0), n = st.range(1);
  Tensor X = rfft(randn({B, n}), n);
  for (auto _ : st) {
    Tensor x = irfft(X, n);
    benchmark::DoNotOptimize(x.raw_data());
  }
  double bytes = (double)B * n * 4 + (double)B * (n / 2 + 1) * 8;
  st.counters["GB/s"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// clang-format off
BENCHMARK(BM_SgemmDirect)->Args({512, 512, 512})->Args({1024, 1024, 1024})->Args({32 * 512, 128, 512})->Unit(benchmark::kMillisecond)->UseRealTime();
// clang-format on
// clang-format off
BENCHMARK(BM_Matmul)->Args({0, 512, 512, 512})->Args({0, 1024, 1024, 1024})->Args({32, 512, 128, 512})->Unit(benchmark::kMillisecond)->UseRealTime();
// clang-format on
// clang-format off
BENCHMARK(BM_Linear)->Args({32 * 512, 128, 512})->Unit(benchmark::kMillisecond)->UseRealTime();
// clang-format on
// clang-format off
BENCHMARK(BM_Rfft)->Args({4096, 2048})->Unit(benchmark::kMillisecond)->UseRealTime();
// clang-format on
// clang-format off
BENCHMARK(BM_Irfft)->Args({4096, 2048})->Unit(benchmark::kMillisecond)->UseRealTime();
// clang-format on
BENCHMARK_TEMPLATE(BM_FmaPeak, 256)->Unit(benchmark::kMillisecond)->UseRealTime();
#if defined(__AVX512F__)
BENCHMARK_TEMPLATE(BM_FmaPeak, 512)->Unit(benchmark::kMillisecond)->UseRealTime();
#endif

BENCHMARK_MAIN();
