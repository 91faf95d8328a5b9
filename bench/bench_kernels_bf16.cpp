// bench/bench_kernels_bf16.cpp - the bf16 GEMM (tensor/bf16_gemm.h) against the float32 one through dl::gemm, and
// the machine's two ceilings, on the OpenMP threads (not a test).
//   BM_Peak/<kind>/<threads>  register-only loops: 12 independent 512-bit FMAs (float32, 32 flops per instruction) or
//                             VDPBF16PS (bf16 pairs into float32, 64 flops per instruction) per iteration, one loop
//                             per thread; GFLOP/s summed over the threads; kind 2: AMX TDPBF16PS on four tiles (16 x 16
//                             x 32 pairs, 16384 flops per instruction). 0 where the instruction is missing.
//   BM_Gemm/<bf16>/<tile>/M/K/N  C (M, N) = A (M, K) B (K, N) through dl::gemm with the precision switch set
//                             (bf16 0/1), the bf16 tile shape (0 = 6x4, 1 = 12x2, 2 = 8x3, 3 = AMX, skipped where
//                             AMX is not usable; ignored for fp32);
//                             ta/tb: A (stored (K, M)) or B (stored (N, K)) transposed. Counters: GFLOP/s (2 M N K
//                             over the wall clock) and GFLOP/s_cpu (over the process's CPU time times the OpenMP
//                             threads: what the threads reach while they run, for a machine shared with other work;
//                             on a quiet machine the two agree). The peaks are over each thread's CPU time.
// Shapes: 2048x1024x1024 (PyTorch's oneDNN bf16 figure in issue 41), a square 512, and BM_Linear: the six products
// of transformer_listops' two feed-forward linears (16384 rows, 128 <-> 512), forward and backward (BM_Linear args:
// bf16, layer 0 = 128 -> 512 or 1 = 512 -> 128, product 0 = y = x W^T, 1 = dx = dy W, 2 = dW = dy^T x).
// Run (one command): OPENBLAS_CORETYPE=Haswell OMP_WAIT_POLICY=PASSIVE ./build/bench_kernels_bf16
#include <benchmark/benchmark.h>
#include <omp.h>

#include <chrono>
#include <ctime>

#include "tensor/bf16.h"
#include "tensor/bf16_amx.h"
#include "tensor/bf16_gemm.h"
#include "tensor/ops.h"

using namespace dl;

// args: kind (0 = float32 FMA, 1 = VDPBF16PS, 2 = AMX TDPBF16PS), threads
static void BM_Peak(benchmark::State& st) {
  const int kind = (int)st.range(0), nt = (int)st.range(1);
  const int64_t iters = 1 << 22;
  double gflops = 0;
  for (auto _ : st) {
    double sum = 0;
#pragma omp parallel num_threads(nt) reduction(+ : sum)
    sum += kind == 2 ? probe_amx_gflops(iters / 64) : kind ? probe_dpbf16_gflops(iters) : probe_fma_gflops(iters);
    gflops = sum;
  }
  st.counters["GFLOP/s"] = gflops;
  st.SetLabel(cpu_info().name());
}

static double process_seconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

// C (M, N) = op(A) op(B) through dl::gemm, timed; the counters as the box says.
static void time_gemm(benchmark::State& st, bool bf16, int tile_shape, bool ta, bool tb, int64_t M, int64_t K, int64_t N) {
  if (bf16 && !bf16_gemm_usable()) {
    st.SkipWithError(("no bf16 arithmetic here: " + cpu_info().name()).c_str());
    return;
  }
  if (bf16 && tile_shape == 3 && !amx::usable()) {
    st.SkipWithError(("no AMX here: " + amx::unusable_reason()).c_str());
    return;
  }
  Generator g(0);
  Tensor a = ta ? randn({K, M}, g) : randn({M, K}, g), b = tb ? randn({N, K}, g) : randn({K, N}, g), c = Tensor::empty({M, N});
  const Precision was = set_matmul_precision(bf16 ? Precision::bf16 : Precision::fp32);
  const int tile = set_bf16_tile(tile_shape);
  const double c0 = process_seconds();
  int64_t n = 0;
  for (auto _ : st) {
    gemm<float>(ta, tb, M, N, K, 1.f, a.data<float>(), ta ? M : K, b.data<float>(), tb ? K : N, 0.f, c.data<float>(), N);
    benchmark::ClobberMemory();
    n++;
  }
  const double cpu = process_seconds() - c0;
  set_bf16_tile(tile);
  set_matmul_precision(was);
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * M * N * K * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  // The rate the threads reach while they run: flops over the process's CPU time, times the thread count.
  st.counters["GFLOP/s_cpu"] = 2.0 * M * N * K * 1e-9 * (double)n * omp_get_max_threads() / cpu;
}

// args: bf16 (0/1), tile shape, M, K, N, B transposed (0/1)
static void BM_Gemm(benchmark::State& st) {
  time_gemm(st, st.range(0) != 0, (int)st.range(1), false, st.range(5) != 0, st.range(2), st.range(3), st.range(4));
}

// args: bf16 (0/1), layer (0: in 128, out 512; 1: in 512, out 128), product (0: y = x W^T, 1: dx = dy W, 2: dW = dy^T x)
static void BM_Linear(benchmark::State& st) {
  const bool bf16 = st.range(0) != 0;
  const int64_t R = 16384, in = st.range(1) ? 512 : 128, out = st.range(1) ? 128 : 512;
  const int64_t product = st.range(2);
  const char* names[] = {"y = x W^T", "dx = dy W", "dW = dy^T x"};
  st.SetLabel(std::string(names[product]) + ", " + std::to_string(in) + " -> " + std::to_string(out));
  if (product == 0) time_gemm(st, bf16, -1, false, true, R, in, out);   // x (R, in), W (out, in)
  if (product == 1) time_gemm(st, bf16, -1, false, false, R, out, in);  // dy (R, out), W (out, in)
  if (product == 2) time_gemm(st, bf16, -1, true, false, out, R, in);   // dy (R, out) as A^T, x (R, in)
}

// args: bf16 (0/1), layer (0: 128 -> 512, 1: 512 -> 128), bias (0/1): the whole forward y = x W^T (+ b) through
// dl::linear on 8192 rows (gpt_char's), so what the bias costs around the product is seen.
static void BM_LinearForward(benchmark::State& st) {
  const bool bf16 = st.range(0) != 0, with_bias = st.range(2) != 0;
  if (bf16 && !bf16_gemm_usable()) {
    st.SkipWithError(("no bf16 arithmetic here: " + cpu_info().name()).c_str());
    return;
  }
  const int64_t R = 8192, in = st.range(1) ? 512 : 128, out = st.range(1) ? 128 : 512;
  Generator g(0);
  Tensor x = randn({R, in}, g), w = randn({out, in}, g), b = with_bias ? randn({out}, g) : Tensor();
  const Precision was = set_matmul_precision(bf16 ? Precision::bf16 : Precision::fp32);
  for (auto _ : st) benchmark::DoNotOptimize(linear(x, w, b));
  set_matmul_precision(was);
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * R * in * out * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.SetLabel(std::to_string(in) + " -> " + std::to_string(out) + (with_bias ? ", bias" : ", no bias"));
}

// clang-format off
BENCHMARK(BM_Peak)->Args({0, 1})->Args({0, 2})->Args({1, 1})->Args({1, 2})->Args({2, 1})->Args({2, 2})->Iterations(1)->UseRealTime();
BENCHMARK(BM_Gemm)
    ->Args({0, 0, 2048, 1024, 1024, 0})->Args({1, 0, 2048, 1024, 1024, 0})->Args({1, 1, 2048, 1024, 1024, 0})
    ->Args({1, 2, 2048, 1024, 1024, 0})->Args({1, 3, 2048, 1024, 1024, 0})
    ->Args({0, 0, 16384, 128, 512, 1})->Args({1, 0, 16384, 128, 512, 1})->Args({1, 1, 16384, 128, 512, 1})
    ->Args({1, 2, 16384, 128, 512, 1})->Args({1, 3, 16384, 128, 512, 1})
    ->Args({0, 0, 512, 512, 512, 0})->Args({1, 0, 512, 512, 512, 0})->Args({1, 3, 512, 512, 512, 0})
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Linear)->ArgsProduct({{0, 1}, {0, 1}, {0, 1, 2}})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LinearForward)->ArgsProduct({{0, 1}, {0, 1}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime();
// clang-format on

BENCHMARK_MAIN();
