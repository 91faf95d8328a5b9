// tests/autograd/test_feed_forward.cpp - the feed-forward block as one op (autograd/feed_forward.h) against the four
// ops it replaces, linear(dropout(gelu(linear(x)))): under the bf16 products the fused node must give the same output,
// the same five gradients and the same generator state, bit for bit (it computes each number as they do; only the
// float32 hidden activations are not stored). Shapes: rows across several 256-row sum chunks and an odd count of them
// (a last pair with one row), a hidden width whose rows do not start on a 32-element mask word, train and eval.
#include <gtest/gtest.h>
#include <omp.h>

#include <cstring>

#include "bf16_kernels.h"
#include "op_harness.h"

#include "autograd/elementwise.h"
#include "autograd/feed_forward.h"
#include "autograd/linalg.h"
#include "autograd/nn_ops.h"
#include "tensor/bf16.h"
#include "tensor/elementwise.h"

namespace dl {
namespace {

using test::PrecisionScope;  // tests/common/bf16_kernels.h

struct Grads {
  Tensor y, dx, dw1, db1, dw2, db2;
  uint64_t next = 0;  // the generator's next draw after the forward
  std::string node;   // the output's node
};

// Runs the block on copies of the same leaves, fused (feed_forward) or as the four ops, and backpropagates dy.
Grads run(bool fused, const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2, const Tensor& b2, const Tensor& dy,
          double p, bool training, bool x_grad) {
  Var vx(x.clone(), x_grad), vw1(w1.clone(), true), vb1(b1.clone(), true), vw2(w2.clone(), true), vb2(b2.clone(), true);
  Generator g(77);
  Var y = fused ? feed_forward(vx, vw1, vb1, vw2, vb2, p, training, g)
                : linear(dropout(gelu(linear(vx, vw1, vb1)), p, training, g), vw2, vb2);
  Grads r;
  r.next = g.next_u64();
  r.node = y.grad_fn() ? y.grad_fn()->name() : "";
  r.y = y.data();
  y.backward(dy);
  if (x_grad) r.dx = vx.grad();
  r.dw1 = vw1.grad(), r.db1 = vb1.grad(), r.dw2 = vw2.grad(), r.db2 = vb2.grad();
  return r;
}

void expect_same_bits(const Tensor& a, const Tensor& b, const char* what) {
  ASSERT_EQ(a.defined(), b.defined()) << what;
  if (!a.defined()) return;
  ASSERT_EQ(a.shape(), b.shape()) << what;
  const float *pa = a.contiguous().data<float>(), *pb = b.contiguous().data<float>();
  int64_t differ = 0, first = -1;
  for (int64_t i = 0; i < a.numel(); i++)
    if (std::memcmp(pa + i, pb + i, 4) != 0) differ++, first = first < 0 ? i : first;
  EXPECT_EQ(differ, 0) << what << ": " << differ << " of " << a.numel() << " elements differ, the first at " << first;
}

void check(int64_t B, int64_t T, int64_t C, int64_t H, int64_t O, double p, bool training, bool x_grad) {
  Generator g(3);
  Tensor x = randn({B, T, C}, g), w1 = mul_scalar(randn({H, C}, g), 0.2), b1 = randn({H}, g), w2 = mul_scalar(randn({O, H}, g), 0.2),
         b2 = randn({O}, g), dy = randn({B, T, O}, g);
  const Grads f = run(true, x, w1, b1, w2, b2, dy, p, training, x_grad);
  const Grads c = run(false, x, w1, b1, w2, b2, dy, p, training, x_grad);
  EXPECT_EQ(f.node, "feed_forward");  // the fused node ran, not the composition
  expect_same_bits(f.y, c.y, "y");
  expect_same_bits(f.dx, c.dx, "dx");
  expect_same_bits(f.dw1, c.dw1, "dw1");
  expect_same_bits(f.db1, c.db1, "db1");
  expect_same_bits(f.dw2, c.dw2, "dw2");
  expect_same_bits(f.db2, c.db2, "db2");
  EXPECT_EQ(f.next, c.next) << "the generator advanced differently";
}

TEST(FeedForward, Bf16FusedIsTheFourOpsBitForBit) {
  if (!bf16_gemm_usable()) GTEST_SKIP() << "no bf16 arithmetic on this CPU: feed_forward is the four ops";
  PrecisionScope bf16(Precision::bf16);
  check(2, 301, 24, 40, 20, 0.25, true, true);   // 602 rows: three sum chunks; H = 40: rows off the 32-bit mask words
  check(3, 37, 17, 64, 9, 0.1, true, true);      // 111 rows: an odd count; odd C and O
  check(2, 301, 24, 40, 20, 0.25, false, true);  // eval: no mask, no draw
  check(1, 50, 16, 48, 16, 0.0, true, false);    // p = 0, and x without a gradient
}

TEST(FeedForward, Bf16FusedFromOneAndTwoThreadsIsTheSame) {  // the packing's chunks are per thread: the bits are not
  if (!bf16_gemm_usable()) GTEST_SKIP() << "no bf16 arithmetic on this CPU";
  PrecisionScope bf16(Precision::bf16);
  Generator g(4);
  Tensor x = randn({4, 200, 32}, g), w1 = mul_scalar(randn({96, 32}, g), 0.2), b1 = randn({96}, g), w2 = mul_scalar(randn({32, 96}, g), 0.2),
         b2 = randn({32}, g), dy = randn({4, 200, 32}, g);
  const int was = omp_get_max_threads();
  omp_set_num_threads(1);
  const Grads one = run(true, x, w1, b1, w2, b2, dy, 0.2, true, true);
  omp_set_num_threads(2);
  const Grads two = run(true, x, w1, b1, w2, b2, dy, 0.2, true, true);
  omp_set_num_threads(was);
  expect_same_bits(one.y, two.y, "y");
  expect_same_bits(one.dx, two.dx, "dx");
  expect_same_bits(one.db1, two.db1, "db1");
  expect_same_bits(one.dw1, two.dw1, "dw1");
}

TEST(FeedForward, Bf16WithoutBiasesIsTheFourOps) {  // Linear(bias = false) on both sides
  if (!bf16_gemm_usable()) GTEST_SKIP() << "no bf16 arithmetic on this CPU";
  PrecisionScope bf16(Precision::bf16);
  Generator g(10);
  Tensor x = randn({3, 70, 24}, g), w1 = randn({40, 24}, g), w2 = randn({24, 40}, g), dy = randn({3, 70, 24}, g);
  Tensor got[3], want[3];
  for (int fused = 0; fused < 2; fused++) {
    Var vx(x.clone(), true), vw1(w1.clone(), true), vw2(w2.clone(), true);
    Generator d(11);
    Var y = fused ? feed_forward(vx, vw1, Var(), vw2, Var(), 0.2, true, d)
                  : linear(dropout(gelu(linear(vx, vw1, Var())), 0.2, true, d), vw2, Var());
    if (fused) EXPECT_STREQ(y.grad_fn()->name(), "feed_forward");
    y.backward(dy);
    Tensor* out = fused ? got : want;
    out[0] = y.data(), out[1] = vx.grad(), out[2] = vw1.grad();
  }
  expect_same_bits(got[0], want[0], "y");
  expect_same_bits(got[1], want[1], "dx");
  expect_same_bits(got[2], want[2], "dw1");
}

TEST(FeedForward, WithoutAGradientIsTheFourOps) {  // no_grad (evaluation): no node to keep, the composition runs
  if (!bf16_gemm_usable()) GTEST_SKIP() << "no bf16 arithmetic on this CPU";
  PrecisionScope bf16(Precision::bf16);
  Generator g(8);
  Var x(randn({2, 40, 16}, g), true), w1(randn({48, 16}, g), true), b1(randn({48}, g), true), w2(randn({16, 48}, g), true),
      b2(randn({16}, g), true);
  Tensor want, got;
  {
    NoGradGuard off;
    Generator a(9), b(9);
    got = feed_forward(x, w1, b1, w2, b2, 0.1, false, a).data();
    want = linear(dropout(gelu(linear(x, w1, b1)), 0.1, false, b), w2, b2).data();
  }
  expect_same_bits(got, want, "y");
}

TEST(FeedForward, Float32IsTheFourOps) {  // no fusion without the bf16 products: the composition's nodes
  PrecisionScope fp32(Precision::fp32);
  Generator g(5);
  Tensor x = randn({2, 10, 8}, g), w1 = randn({16, 8}, g), b1 = randn({16}, g), w2 = randn({8, 16}, g), b2 = randn({8}, g),
         dy = randn({2, 10, 8}, g);
  const Grads f = run(true, x, w1, b1, w2, b2, dy, 0.3, true, true);
  const Grads c = run(false, x, w1, b1, w2, b2, dy, 0.3, true, true);
  EXPECT_EQ(f.node, "linear");
  expect_same_bits(f.y, c.y, "y");
  expect_same_bits(f.dx, c.dx, "dx");
  expect_same_bits(f.dw1, c.dw1, "dw1");
  EXPECT_EQ(f.next, c.next);
}

TEST(FeedForward, BadShapesAndPAreNamed) {  // the four ops' own errors, in either precision
  for (Precision pr : {Precision::fp32, Precision::bf16}) {
    PrecisionScope scope(pr);
    Generator g(6);
    Var x(randn({4, 8}, g), true), w1(randn({16, 8}, g), true), b1(randn({16}, g), true), w2(randn({8, 16}, g), true),
        b2(randn({8}, g), true), w2bad(randn({8, 15}, g), true), b1bad(randn({15}, g), true), b2bad(randn({7}, g), true);
    EXPECT_THROW(feed_forward(x, w1, b1, w2bad, b2, 0.1, true, g), std::exception);
    EXPECT_THROW(feed_forward(x, w1, b1bad, w2, b2, 0.1, true, g), std::exception);
    EXPECT_THROW(feed_forward(x, w1, b1, w2, b2bad, 0.1, true, g), std::exception);  // the fused path read past b2
    try {
      feed_forward(x, w1, b1, w2, b2, 1.5, true, g);
      ADD_FAILURE() << "p = 1.5 was taken";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("p must be in [0, 1]"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace dl
