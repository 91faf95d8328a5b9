// bench/bench_kernels_a.cpp - throughput of the fused softmax and layer_norm CPU kernels (not a test).
// bytes_processed counts one read of x and one write of y (forward) or reads of y/x, dy and a write of dx
// (backward), so the GB/s column compares directly with memory bandwidth.
//   softmax    : 32*4*512 = 65536 rows (B*NH*T of attention scores) of 512 or 2048 columns, last dim
//   layer_norm : B*T = 16384 rows of C = 128, with weight and bias
#include <benchmark/benchmark.h>

#include "tensor/ops.h"

using namespace dl;

static void BM_softmax(benchmark::State& st) {
  int64_t rows = st.range(0), C = st.range(1);
  Generator g(0);
  Tensor x = randn({rows, C}, g);
  for (auto _ : st) benchmark::DoNotOptimize(softmax(x, -1).raw_data());
  st.SetBytesProcessed(st.iterations() * rows * C * 4 * 2);
}
// clang-format off
BENCHMARK(BM_softmax)->Args({32 * 4 * 512, 512})->Args({32 * 4 * 512 / 4, 2048})->Unit(benchmark::kMillisecond)->UseRealTime();
// clang-format on

static void BM_softmax_backward(benchmark::State& st) {
  int64_t rows = st.range(0), C = st.range(1);
  Generator g(0);
  Tensor y = softmax(randn({rows, C}, g), -1), dy = randn({rows, C}, g);
  for (auto _ : st) benchmark::DoNotOptimize(softmax_backward(y, dy, -1).raw_data());
  st.SetBytesProcessed(st.iterations() * rows * C * 4 * 3);
}
// clang-format off
BENCHMARK(BM_softmax_backward)->Args({32 * 4 * 512, 512})->Unit(benchmark::kMillisecond)->UseRealTime();
// clang-format on

static void BM_layer_norm(benchmark::State& st) {
  int64_t rows = st.range(0), C = st.range(1);
  Generator g(0);
  Tensor x = randn({rows, C}, g), w = randn({C}, g), b = randn({C}, g);
  for (auto _ : st) benchmark::DoNotOptimize(layer_norm(x, w, b, 1e-5).y.raw_data());
  st.SetBytesProcessed(st.iterations() * rows * C * 4 * 2);
}
// clang-format off
BENCHMARK(BM_layer_norm)->Args({16384, 128})->Unit(benchmark::kMicrosecond)->UseRealTime();
// clang-format on

static void BM_layer_norm_backward(benchmark::State& st) {
  int64_t rows = st.range(0), C = st.range(1);
  Generator g(0);
  Tensor x = randn({rows, C}, g), w = randn({C}, g), b = randn({C}, g), dy = randn({rows, C}, g);
  NormOut o = layer_norm(x, w, b, 1e-5);
  for (auto _ : st) benchmark::DoNotOptimize(layer_norm_backward(dy, x, o.mean, o.rstd, w, true, true, true).dx.raw_data());
  st.SetBytesProcessed(st.iterations() * rows * C * 4 * 3);
}
// clang-format off
BENCHMARK(BM_layer_norm_backward)->Args({16384, 128})->Unit(benchmark::kMicrosecond)->UseRealTime();
// clang-format on

BENCHMARK_MAIN();
