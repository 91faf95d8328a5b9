// tests/nn/fused/test_glu.cpp - the fused GLU node (nn/fused/glu.h) against its composed twin, narrow * sigmoid(narrow):
// the output and the input gradient bit for bit in float32 (the same sigmoid, the same products in the same order) and
// within kAgreeF64 in float64, on shapes with one row, odd halves and a non-contiguous input; finite differences;
// the error for an odd last dim. nn::glu takes this node on the CPU (test_layers.cpp checks it against PyTorch).
#include <gtest/gtest.h>

#include <cstring>

#include "nn/fused/glu.h"
#include "op_harness.h"
#include "tolerance.h"

using namespace dl;
using namespace dl::test;
using namespace dl::nn;

namespace {

Var composed(const Var& x) {
  const int64_t n = x.size(-1) / 2;
  return narrow(x, -1, 0, n) * sigmoid(narrow(x, -1, n, n));
}

bool same_bits(const Tensor& a, const Tensor& b) {
  Tensor x = a.contiguous(), y = b.contiguous();
  return x.shape() == y.shape() && x.dtype() == y.dtype() &&
         std::memcmp(x.raw_data(), y.raw_data(), x.numel() * dtype_size(x.dtype())) == 0;
}

void expect_agree(const Shape& s, DType dt, bool transpose) {
  const std::string what = shape_str(s) + (dt == DType::f32 ? " f32" : " f64") + (transpose ? " transposed" : "");
  Generator g(7);
  Tensor x0 = randn(s, g).to(dt);
  if (transpose) x0 = x0.transpose(0, 1);  // the last dim stays; the rows are strided
  Var xa(x0.clone(), true), xb(x0.clone(), true);
  Var ya = glu_fused(xa), yb = composed(xb);
  Tensor dy = randn(ya.shape(), g).to(dt);
  ya.backward(dy);
  yb.backward(dy);
  if (dt == DType::f32) {
    EXPECT_TRUE(same_bits(ya.data(), yb.data())) << what << " output";
    EXPECT_TRUE(same_bits(xa.grad(), xb.grad())) << what << " dx";
  } else {
    EXPECT_TRUE(all_close(ya.data(), yb.data(), kAgreeF64, what + " output"));
    EXPECT_TRUE(all_close(xa.grad(), xb.grad(), kAgreeF64, what + " dx"));
  }
}

}  // namespace

TEST(GluFused, AgreesWithTheComposedTwin) {
  for (DType dt : {DType::f32, DType::f64}) {
    expect_agree({1, 2}, dt, false);          // one row, halves of one
    expect_agree({3, 5, 14}, dt, false);      // halves of 7: not whole vectors
    expect_agree({4, 6, 34}, dt, true);       // non-contiguous rows
    expect_agree({32, 128, 256}, dt, false);  // the S4D layer's shape at batch 32, length 128 (the threaded loop)
  }
}

TEST(GluFused, FiniteDifferences) {
  OpCase oc{"glu_fused", {randn_input({3, 4, 6}, 2.0)}, [](const std::vector<Var>& v) { return glu_fused(v[0]); }};
  oc.has_fixture = false;  // PyTorch's values for glu are test_layers.cpp's "glu" fixture, which nn::glu now runs here
  EXPECT_TRUE(gradcheck(oc, false));
  EXPECT_TRUE(gradcheck(oc, true));
}

TEST(GluFused, NoGradForwardAndOddLastDim) {
  Generator g(3);
  Var x(randn({2, 8}, g));  // no grad: the forward alone, no node
  Var y = glu_fused(x);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_TRUE(same_bits(y.data(), composed(x).data()));
  std::string msg = error_of([&] { glu_fused(Var(randn({2, 7}, g))); });
  EXPECT_NE(msg.find("the last dim must be even, found shape [2, 7]"), std::string::npos) << msg;
}
