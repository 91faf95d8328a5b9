// tests/tensor/test_fast_kernels.cpp - fast paths in tensor/ against their plain twins:
//   GELU (exact form) in float32 uses erf_fast/exp_fast (vectorised) - against the float64 std::erf kernel; its
//   flat loop over a contiguous input - against the strided (unary_map) path of a transposed view;
//   sigmoid and SiLU in float32 use exp_fast - against the float64 std::exp kernels;
//   sum_to runs on both cores - against a serial loop over every element (same sums, another order of
//   additions where a row is reduced), and bit for bit the same for 1 and 2 threads.
//   the elementwise loop cuts a few long rows (a contiguous tensor is one) into pieces for the threads - against an
//   element-by-element loop, bit for bit, on 1 and 2 threads.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>

#include "autograd/ops.h"
#include "op_harness.h"
#include "tensor/nn_kernels.h"
#include "tolerance.h"

using namespace dl;
using namespace dl::test;

TEST(FastKernels, ErfFastMatchesStdErf) {
  double worst = 0;
  for (int i = -100000; i <= 100000; i++) {
    float x = (float)i * 1e-4f;  // [-10, 10]
    worst = std::max(worst, std::abs((double)erf_fast(x) - std::erf((double)x)));
  }
  EXPECT_LT(worst, 5e-7);
}

TEST(FastKernels, GeluFloat32AgreesWithFloat64) {
  Generator g(1);
  Tensor x = mul_scalar(randn({4, 1000}, g, DType::f64), 3.0);
  Tensor dy = randn({4, 1000}, g, DType::f64);
  Tensor y64 = gelu(x, false), y32 = gelu(x.to(DType::f32), false);
  EXPECT_TRUE(all_close(y32.to(DType::f64), y64, kAgreeF32, "gelu forward"));
  Tensor d64 = unary_backward(UnaryOp::gelu_erf, x, y64, dy);
  Tensor d32 = unary_backward(UnaryOp::gelu_erf, x.to(DType::f32), y32, dy.to(DType::f32));
  EXPECT_TRUE(all_close(d32.to(DType::f64), d64, kAgreeF32, "gelu backward"));
}

TEST(FastKernels, GeluFlatLoopAgreesWithTheStridedPath) {
  Generator g(2);
  for (DType dt : {DType::f32, DType::f64}) {
    Tensor x = mul_scalar(randn({37, 70}, g, dt), 3.0);
    Tensor xt = x.transpose(0, 1);  // a view: not contiguous, so gelu takes unary_map's strided loop
    ASSERT_FALSE(xt.is_contiguous());
    EXPECT_TRUE(all_close(gelu(xt, false), gelu(xt.contiguous(), false), dt == DType::f32 ? Tol{1e-6, 1e-7} : Tol{1e-14, 1e-15}, "gelu flat vs strided"));
  }
}

TEST(FastKernels, SigmoidAndSiluFloat32AgreeWithFloat64) {
  Generator g(3);
  Tensor x = mul_scalar(randn({4, 1000}, g, DType::f64), 8.0);  // the tails, where exp_fast clamps
  Tensor dy = randn({4, 1000}, g, DType::f64);
  for (UnaryOp op : {UnaryOp::sigmoid, UnaryOp::silu}) {
    const std::string what = op == UnaryOp::sigmoid ? "sigmoid" : "silu";
    Tensor y64 = unary(op, x), y32 = unary(op, x.to(DType::f32));
    EXPECT_TRUE(all_close(y32.to(DType::f64), y64, kAgreeF32, what + " forward"));
    Tensor d64 = unary_backward(op, x, y64, dy);
    Tensor d32 = unary_backward(op, x.to(DType::f32), y32, dy.to(DType::f32));
    EXPECT_TRUE(all_close(d32.to(DType::f64), d64, kAgreeF32, what + " backward"));
  }
  Tensor big = from_vector(std::vector<float>{-200, -88, 88, 200}, {4});
  Tensor s = unary(UnaryOp::sigmoid, big);
  EXPECT_LT(s.data<float>()[0], 1e-30f);  // exp_fast clamps at 88.3: 1 / (1 + 2e38), where std::exp gives 0
  EXPECT_EQ(s.data<float>()[3], 1.0f);
}

namespace {
// The plain twin: every element of g added into out[index with broadcast dims set to 0], in row-major order.
Tensor sum_to_serial(const Tensor& g, const Shape& shape) {
  Tensor out = zeros(shape, g.dtype());
  Tensor ov = out.expand(g.shape()), gc = g.contiguous();
  const int64_t n = g.numel(), nd = g.dim();
  std::vector<int64_t> idx(nd, 0);
  for (int64_t i = 0; i < n; i++) {
    int64_t o = 0;
    for (int64_t d = 0; d < nd; d++) o += idx[d] * ov.strides()[d];
    ov.data<float>()[o] += gc.data<float>()[i];
    for (int64_t d = nd - 1; d >= 0; d--) {
      if (++idx[d] < g.shape()[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}
}  // namespace

TEST(FastKernels, SumToParallelAgreesWithSerial) {
  Generator g(2);
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{64, 300, 128}, {128}}, {{64, 300, 128}, {300, 128}}, {{64, 300, 128}, {64, 1, 1}}, {{64, 300, 128}, {64, 300, 1}},
      {{7, 5, 3}, {1, 5, 1}},  {{2000, 33}, {2000, 1}},      {{33, 2000}, {1, 2000}}};
  for (auto& [from, to] : cases) {
    Tensor x = randn(from, g);
    Tensor ref = sum_to_serial(x, to);
    omp_set_num_threads(1);
    Tensor y1 = sum_to(x, to);
    omp_set_num_threads(2);
    Tensor y2 = sum_to(x, to);
    const std::string what = shape_str(from) + " -> " + shape_str(to);
    EXPECT_TRUE(all_close(y1, ref, kFixtureLong, what + " vs serial"));  // sums of up to 38400 terms
    EXPECT_TRUE(all_close(y2, y1, {0, 0}, what + " 2 threads vs 1"));
  }
  omp_set_num_threads(2);
}

// The elementwise loop cuts a few long rows into pieces for the threads (a contiguous tensor is one row of numel
// elements): every element as an element-by-element loop in the test computes it, on 1 and 2 threads, for sizes
// around the cut (16384-element pieces, a ragged last piece, a row shorter than one piece), a broadcast operand
// (a stride-0 row), a transposed view (strided rows), `where` with four operands, copy_ and the in-place add_.
TEST(FastKernels, LongRowsCutForThreadsKeepEveryElement) {
  Generator g(3);
  const int prev = omp_get_max_threads();
  for (int64_t n : {int64_t(100), int64_t(16384 * 2), int64_t(16384 * 5 + 7), int64_t(1 << 20) + 3})
    for (int threads : {1, 2}) {
      omp_set_num_threads(threads);
      const std::string what = "n " + std::to_string(n) + " threads " + std::to_string(threads);
      Tensor a = randn({n}, g), b = randn({n}, g), c = randn({1}, g);
      const std::vector<float> va = a.to_vector(), vb = b.to_vector();
      const float vc = c.to_vector()[0];
      const std::vector<float> sum = add(a, b).to_vector(), prod = mul(a, c).to_vector(), ex = exp(a).to_vector(),
                               pick = where(gt(a, b), a, b).to_vector();
      Tensor acc = b.clone();
      add_(acc, a);
      Tensor cp = zeros({n});
      copy_into(cp, a);
      const std::vector<float> vacc = acc.to_vector(), vcp = cp.to_vector();
      for (int64_t i = 0; i < n; i++) {
        ASSERT_EQ(sum[i], va[i] + vb[i]) << what << " add at " << i;
        ASSERT_EQ(prod[i], va[i] * vc) << what << " mul by a broadcast scalar at " << i;
        ASSERT_EQ(ex[i], std::exp(va[i])) << what << " exp at " << i;
        ASSERT_EQ(pick[i], va[i] > vb[i] ? va[i] : vb[i]) << what << " where at " << i;
        ASSERT_EQ(vacc[i], vb[i] + va[i]) << what << " add_ at " << i;
        ASSERT_EQ(vcp[i], va[i]) << what << " copy_ at " << i;
      }
    }
  omp_set_num_threads(2);
  Tensor m = randn({3, 40000}, g), mt = m.transpose(0, 1);  // 40000 rows of 3 strided elements, and 3 long rows
  const std::vector<float> vm = m.to_vector(), t2 = mul_scalar(mt, 2.0).to_vector(), r2 = mul_scalar(m, 2.0).to_vector();
  for (int64_t i = 0; i < 40000; i++)
    for (int64_t j = 0; j < 3; j++) {
      ASSERT_EQ(t2[i * 3 + j], vm[j * 40000 + i] * 2.0f) << "transposed at " << i << ", " << j;
      ASSERT_EQ(r2[j * 40000 + i], vm[j * 40000 + i] * 2.0f) << "long rows at " << j << ", " << i;
    }
  omp_set_num_threads(prev);
}
