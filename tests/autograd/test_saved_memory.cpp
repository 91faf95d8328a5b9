// tests/autograd/test_saved_memory.cpp - what a node keeps from the forward to the backward: only what its backward
// reads. Measured as the caching allocator's bytes in use once the forward's own Vars are gone (tensor/allocator.h).
//   - a unary op keeps x or y, the one its derivative uses (GELU: x; its output is not held);
//   - under Precision::bf16 a linear layer keeps its input as bf16 pairs (half the bytes) and gives the same gradients,
//     bit for bit, as linear_backward from the float32 input.
#include <gtest/gtest.h>

#include "bf16_kernels.h"
#include "op_harness.h"

#include "autograd/elementwise.h"
#include "autograd/linalg.h"
#include "autograd/reduce.h"
#include "tensor/allocator.h"
#include "tensor/bf16.h"
#include "tensor/elementwise.h"
#include "tensor/linalg.h"

namespace dl {
namespace {

int64_t in_use() { return (int64_t)host_allocator_stats().bytes_in_use; }

using test::all_close;  // tests/common/op_harness.h
constexpr test::Tol kSameBits{0, 0};
// sigmoid's backward against y (1 - y) composed from the saved output: one rounding apart in float32
constexpr test::Tol kOneRounding{1e-6, 1e-7};

TEST(SavedMemory, GeluKeepsItsInputNotItsOutput) {
  Generator g(5);
  const int64_t n = 1 << 20;  // 4 MB a tensor
  Var x(randn({n}, g), true);
  const int64_t before = in_use();
  Var loss;
  {
    Var y = gelu(x);
    loss = sum(y);
  }
  const int64_t held = in_use() - before;  // y is gone unless the GELU node holds it
  EXPECT_LT(held, n * 4 / 2) << "held " << held << " bytes after the forward";
  loss.backward();
  Tensor want = unary_backward(UnaryOp::gelu_erf, x.data(), Tensor(), ones({n}));
  EXPECT_TRUE(all_close(x.grad(), want, kSameBits, "gelu dx"));
}

TEST(SavedMemory, SigmoidKeepsItsOutput) {  // the other side: its derivative y (1 - y) reads y, not x
  Generator g(6);
  Var x(randn({1000}, g), true);
  Var s = sigmoid(x);
  sum(s).backward();
  Tensor y = s.data();
  EXPECT_TRUE(all_close(x.grad(), mul(y, add_scalar(neg(y), 1.0)), kOneRounding, "sigmoid dx"));
}

using test::PrecisionScope;  // tests/common/bf16_kernels.h

TEST(SavedMemory, Bf16LinearKeepsItsInputAsPairs) {
  if (!bf16_gemm_usable()) GTEST_SKIP() << "no bf16 arithmetic on this CPU: the linear keeps its float32 input";
  PrecisionScope bf16(Precision::bf16);
  Generator g(7);
  const int64_t B = 5, T = 67, in = 200, out = 72;  // B T odd: the last pair of rows has a zero partner
  Var w(randn({out, in}, g), true), b(randn({out}, g), true);
  Tensor xd = randn({B, T, in}, g), dy = randn({B, T, out}, g);
  const int64_t before = in_use();
  Var y;
  {
    Var x(xd.clone(), true);  // the only handle on this copy: the node's is what stays
    y = linear(x, w, b);
    ASSERT_TRUE(linear_keeps_bf16_input(x.data()));
  }
  const int64_t held = in_use() - before - (int64_t)(y.data().numel() * 4);
  const int64_t x_bytes = B * T * in * 4;
  EXPECT_LT(held, x_bytes * 6 / 10) << "held " << held << " bytes besides y; x is " << x_bytes;
  EXPECT_GT(held, x_bytes * 4 / 10) << "the pairs are half of x";
  y.backward(dy);
  // the float32 input's backward, in the same mode: the same products on the same rounded operands
  LinearGrads want = linear_backward(xd, w.data(), dy, true, true, true);
  EXPECT_TRUE(all_close(w.grad(), want.dw, kSameBits, "dw"));
  EXPECT_TRUE(all_close(b.grad(), want.db, kSameBits, "db"));
  EXPECT_TRUE(all_close(y.data(), linear(xd, w.data(), b.data()), kSameBits, "y"));  // x's two packings from one read
}

// The input's gradient as well (dy read once for dx and dw): the float32 input's backward's bits, x of 3 dims.
TEST(SavedMemory, Bf16LinearInputGradientIsTheFloat32InputsBackwards) {
  if (!bf16_gemm_usable()) GTEST_SKIP() << "no bf16 arithmetic on this CPU: the linear keeps its float32 input";
  PrecisionScope bf16(Precision::bf16);
  Generator g(9);
  const int64_t B = 3, T = 45, in = 70, out = 33;
  Var x(randn({B, T, in}, g), true), w(randn({out, in}, g), true), b(randn({out}, g), true);
  Tensor dy = randn({B, T, out}, g);
  linear(x, w, b).backward(dy);
  LinearGrads want = linear_backward(x.data(), w.data(), dy, true, true, true);
  EXPECT_TRUE(all_close(x.grad(), want.dx, kSameBits, "dx"));
  EXPECT_TRUE(all_close(w.grad(), want.dw, kSameBits, "dw"));
  EXPECT_TRUE(all_close(b.grad(), want.db, kSameBits, "db"));
}

TEST(SavedMemory, Float32LinearKeepsItsInput) {  // without bf16 products: x itself, and no pairs
  PrecisionScope fp32(Precision::fp32);
  Generator g(8);
  Tensor xd = randn({4, 10, 16}, g);
  EXPECT_FALSE(linear_keeps_bf16_input(xd));
  Var w(randn({8, 16}, g), true);
  Var x(xd, true);
  Var y = linear(x, w);
  y.backward(ones({4, 10, 8}));
  LinearGrads want = linear_backward(xd, w.data(), ones({4, 10, 8}), true, true, false);
  EXPECT_TRUE(all_close(w.grad(), want.dw, kSameBits, "dw"));
  EXPECT_TRUE(all_close(x.grad(), want.dx, kSameBits, "dx"));
}

}  // namespace
}  // namespace dl
