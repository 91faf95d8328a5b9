// bench/bench_cuda.cpp - the CUDA backend's hot ops: sgemm, row softmax, FFT convolution.
//
// Each benchmark synchronises the device inside the timed loop (real time), so a number is the time of
// the GPU work plus one launch. Without a CUDA device every benchmark reports "no CUDA device" and
// skips. Counters: FLOP/s for sgemm (2 M N K per product), bytes/s for softmax (one read, one write).
//   ./build/bench_cuda --benchmark_filter=Sgemm
#include <benchmark/benchmark.h>

#include <cmath>

#include "tensor/backend.h"
#include "tensor/ops.h"

namespace {

using namespace dl;

Backend* ready_backend(benchmark::State& state) {
  Backend* b = device_backend(Device::cuda);
  if (!b || !b->available()) {
    state.SkipWithError("no CUDA device");
    return nullptr;
  }
  return b;
}

Tensor device_randn(const Shape& s, uint64_t seed) {
  Generator g(seed);
  return randn(s, g).to(Device::cuda);
}

// out(n, n) = a(n, n) @ b(n, n), fp32 (cuBLAS default math: no TF32).
void BM_Sgemm(benchmark::State& state) {
  Backend* be = ready_backend(state);
  if (!be) return;
  int64_t n = state.range(0);
  Tensor a = device_randn({1, n, n}, 1), b = device_randn({1, n, n}, 2), out = Tensor::empty({1, n, n}, DType::f32, Device::cuda);
  be->matmul(a, b, out);  // warm-up: cuBLAS picks its kernel and allocates its workspace
  be->synchronize();
  for (auto _ : state) {
    be->matmul(a, b, out);
    be->synchronize();
  }
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
}
// clang-format off
BENCHMARK(BM_Sgemm)->Arg(1024)->Arg(4096)->UseRealTime()->Unit(benchmark::kMillisecond);
// clang-format on

// softmax over the last dim of x(R, C): attention-score shaped rows.
void BM_SoftmaxRows(benchmark::State& state) {
  Backend* be = ready_backend(state);
  if (!be) return;
  int64_t R = state.range(0), C = state.range(1);
  Tensor x = device_randn({R, C}, 3), out = Tensor::empty({R, C}, DType::f32, Device::cuda);
  be->softmax_last(x, out);
  be->synchronize();
  for (auto _ : state) {
    be->softmax_last(x, out);
    be->synchronize();
  }
  state.counters["bytes/s"] = benchmark::Counter(2.0 * 4 * R * C, benchmark::Counter::kIsIterationInvariantRate);
}
// clang-format off
BENCHMARK(BM_SoftmaxRows)->Args({65536, 64})->Args({16384, 1024})->Args({4096, 4096})->UseRealTime()->Unit(benchmark::kMicrosecond);
// clang-format on

// S4-style long convolution: H*B = 4096 rows of L = 4096 (FFT size 8192).
void BM_FftConv(benchmark::State& state) {
  Backend* be = ready_backend(state);
  if (!be) return;
  int64_t R = state.range(0), L = state.range(1);
  Tensor a = device_randn({R, L}, 4), k = device_randn({R, L}, 5), out = Tensor::empty({R, L}, DType::f32, Device::cuda);
  be->fft_conv(a, k, out);  // builds and caches the plans
  be->synchronize();
  for (auto _ : state) {
    be->fft_conv(a, k, out);
    be->synchronize();
  }
  state.counters["rows/s"] = benchmark::Counter((double)R, benchmark::Counter::kIsIterationInvariantRate);
}
// clang-format off
BENCHMARK(BM_FftConv)->Args({4096, 4096})->UseRealTime()->Unit(benchmark::kMillisecond);
// clang-format on

}  // namespace

BENCHMARK_MAIN();
