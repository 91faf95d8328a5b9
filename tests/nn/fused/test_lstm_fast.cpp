// tests/nn/fused/test_lstm_fast.cpp - the whole-layer LSTM node (lstm_sequence, nn/recurrent/lstm.h) against its
// reference twin, the per-step graph of fused cells (LSTMOptions::sequence = false): the output sequence (its
// last step is the final hidden state; the layer exposes no c_n and takes no initial state), the gradient of the
// input and of every parameter. Shapes cover one step, hidden sizes that are not whole vectors, one and two
// threads' worth of units, one and two layers.
#include <gtest/gtest.h>

#include "bf16_kernels.h"  // PrecisionScope
#include "nn/recurrent/lstm.h"
#include "tensor/bf16.h"
#include "op_harness.h"
#include "tolerance.h"

using namespace dl;
using namespace dl::test;
using namespace dl::nn;

namespace {

void expect_agree(int64_t B, int64_t L, int64_t I, int64_t Hd, int64_t layers, Tol tol = kAgreeF32) {
  const std::string what = "B=" + std::to_string(B) + " L=" + std::to_string(L) + " I=" + std::to_string(I) +
                           " Hd=" + std::to_string(Hd) + " layers=" + std::to_string(layers);
  LSTMOptions o;
  o.num_layers = layers;
  Generator g1(5), g2(5);
  LSTM fast(I, Hd, o, g1);
  o.sequence = false;
  LSTM plain(I, Hd, o, g2);
  Generator g(9);
  Tensor x = randn({B, L, I}, g);
  Var xa(x.clone(), true), xb(x.clone(), true);
  Var ya = fast.forward(xa, Tensor()), yb = plain.forward(xb, Tensor());
  // The fast cell's sigmoid/tanh differ from libm's by < 5e-7; over L steps that stays inside kAgreeF32.
  EXPECT_TRUE(all_close(ya.data(), yb.data(), tol, what + " output"));
  Tensor dy = randn(ya.shape(), g);
  ya.backward(dy);
  yb.backward(dy);
  EXPECT_TRUE(all_close(xa.grad(), xb.grad(), tol, what + " dx"));
  auto pa = fast.named_parameters(), pb = plain.named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); i++)
    EXPECT_TRUE(all_close(pa[i].second.grad(), pb[i].second.grad(), tol, what + " " + pa[i].first));
}

TEST(LSTMFast, SequenceNodeAgreesWithPerStepGraph) {
  expect_agree(1, 1, 3, 4, 1);      // one step, one row
  expect_agree(3, 7, 5, 20, 1);     // Hd not a multiple of 16
  expect_agree(2, 9, 4, 6, 2);      // two layers (the second one's input is the first one's output)
  expect_agree(64, 12, 8, 256, 1);  // the benchmark's layer (two threads' units), shorter
  expect_agree(17, 30, 33, 48, 1);  // odd sizes, several vectors per thread
}

// Under Precision::bf16 both run their products on the bf16 GEMM; the sequence node's recurrent products read the
// weights' pair words packed once per sequence (RecurrentWeight, where Hd is whole 16-column vectors), the per-step
// graph converts them at each matmul. They agree to bf16's rounding (a fast-cell difference of 5e-7 can flip a
// rounding, about 2^-8 relative, and it compounds over the steps); a wrong column of the packed weights is off by O(1).
TEST(LSTMFast, SequenceNodeAgreesWithPerStepGraphInBf16) {
  if (!bf16_gemm_usable()) GTEST_SKIP() << precision_note();
  const test::PrecisionScope precision(Precision::bf16);
  const Tol tol{3e-2, 3e-2};
  expect_agree(64, 12, 8, 256, 1, tol);  // packed, two threads' units
  expect_agree(17, 10, 33, 48, 2, tol);  // packed, several vectors per thread, two layers
  expect_agree(3, 7, 5, 20, 1, tol);     // Hd not whole vectors: dl::gemm converts at each step
}

TEST(LSTMFast, NoGradForwardMatches) {
  Generator g1(3);
  LSTM m(4, 32, LSTMOptions{}, g1);
  Generator g(4);
  Var x(randn({2, 6, 4}, g));
  Var y = m.forward(x, Tensor());
  Tensor y0;
  {
    NoGradGuard ng;
    y0 = m.forward(x, Tensor()).data();
  }
  EXPECT_TRUE(all_close(y.data(), y0, kAgreeF64, "no-grad forward"));
}

TEST(LSTMFast, BadShapesAreNamedErrors) {
  Generator g(6);
  Var w_ih(randn({16, 3}, g)), w_hh(randn({16, 4}, g)), b(randn({16}, g));
  auto message = [&](const Var& x, const Var& wh) {
    try {
      lstm_sequence(x, w_ih, wh, b, b);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string m = message(Var(randn({2, 3}, g)), w_hh);  // x without its time axis
  EXPECT_NE(m.find("lstm_sequence: expected x (B, L, I)"), std::string::npos) << m;
  EXPECT_NE(m.find("found x [2, 3]"), std::string::npos) << m;
  m = message(Var(randn({2, 5, 3}, g)), Var(randn({16}, g)));  // W_hh of the wrong rank
  EXPECT_NE(m.find("W_hh [16]"), std::string::npos) << m;
  m = message(Var(randn({2, 5, 7}, g)), w_hh);  // I = 7 against W_ih (16, 3)
  EXPECT_NE(m.find("W_ih [16, 3]"), std::string::npos) << m;
}

}  // namespace
