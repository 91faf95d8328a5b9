// tests/nn/fused/test_fused_attention.cpp - the fused attention primitive (nn/fused/fused_attention.h) against its
// composed twin (scaled_dot_product_attention): values and every gradient, with and without a padding
// mask, causal, across the 64-key block boundary; plus finite differences on the fused backward.
#include "nn/attention/attention.h"
#include "nn/fused/fused_attention.h"
#include "nn/nn_test_util.h"

using namespace dl;
using namespace dl::test;
using namespace dl::nn;

namespace {

struct Case {
  int64_t T, S;
  bool mask, causal;
};

void expect_agree(const Case& c, DType dt, Tol tol) {
  Generator g(42);
  const int64_t B = 2, NH = 3, HS = 8;
  Var q(randn({B, NH, c.T, HS}, g, dt), true), k(randn({B, NH, c.S, HS}, g, dt), true), v(randn({B, NH, c.S, HS}, g, dt), true);
  Tensor mask;
  if (c.mask) {
    mask = ones({B, c.S});
    mask.narrow(0, 1, 1).narrow(1, c.S - 7, 7).fill_(0);  // batch 1: the last 7 keys are padding
  }
  Tensor dy = randn({B, NH, c.T, HS}, g, dt);
  Var a = fused_attention(q, k, v, mask, c.causal);
  a.backward(dy);
  Tensor ga[3] = {q.grad(), k.grad(), v.grad()};
  for (auto* x : {&q, &k, &v}) x->zero_grad();
  SDPAOptions o;
  o.key_mask = mask;
  o.causal = c.causal;
  Var b = scaled_dot_product_attention(q, k, v, o);
  b.backward(dy);
  std::string what = std::string(dtype_name(dt)) + " T=" + std::to_string(c.T) + " S=" + std::to_string(c.S) +
                     (c.mask ? " mask" : "") + (c.causal ? " causal" : "");
  EXPECT_TRUE(all_close(a.data(), b.data(), tol, what + " out"));
  EXPECT_TRUE(all_close(ga[0], q.grad(), tol, what + " dq"));
  EXPECT_TRUE(all_close(ga[1], k.grad(), tol, what + " dk"));
  EXPECT_TRUE(all_close(ga[2], v.grad(), tol, what + " dv"));
}

const std::vector<Case> kCases = {{70, 70, false, false}, {70, 70, true, false}, {70, 70, false, true},
                                  {70, 70, true, true},   {5, 130, true, false}, {20, 90, false, true}};

}  // namespace

TEST(FusedAttention, AgreesWithComposedF64) {
  for (auto& c : kCases) expect_agree(c, DType::f64, kAgreeF64);
}

TEST(FusedAttention, AgreesWithComposedF32) {
  for (auto& c : kCases) expect_agree(c, DType::f32, kAgreeF32);
}

TEST(FusedAttention, FiniteDifferences) {
  Tensor mask = ones({1, 5});
  mask.narrow(1, 4, 1).fill_(0);
  OpCase oc{"fused_attention",
            {randn_input({1, 2, 4, 3}), randn_input({1, 2, 5, 3}), randn_input({1, 2, 5, 3})},
            [mask](const std::vector<Var>& x) { return fused_attention(x[0], x[1], x[2], mask, true); }};
  EXPECT_TRUE(gradcheck(oc, false));
  EXPECT_TRUE(gradcheck(oc, true));
}

TEST(FusedAttention, MultiheadAttentionFusedFlagGivesTheSameLayer) {
  Generator g1(9), g2(9), gx(10);
  AttentionOptions o;
  o.heads = 2;
  o.causal = true;
  o.rotary = true;
  MultiheadAttention composed(8, o, g1);
  o.fused = true;
  MultiheadAttention fused(8, o, g2);
  Var x(randn({2, 66, 8}, gx), true);
  Tensor mask = ones({2, 66});
  mask.narrow(0, 0, 1).narrow(1, 60, 6).fill_(0);
  Tensor dy = randn({2, 66, 8}, gx);
  Var a = composed.forward(x, mask);
  a.backward(dy);
  Tensor gx_c = x.grad();
  x.zero_grad();
  Var b = fused.forward(x, mask);
  b.backward(dy);
  EXPECT_TRUE(all_close(b.data(), a.data(), kAgreeF32, "fused MHA out"));
  EXPECT_TRUE(all_close(x.grad(), gx_c, kAgreeF32, "fused MHA dx"));
  auto pc = composed.named_parameters(), pf = fused.named_parameters();
  for (size_t i = 0; i < pc.size(); i++) EXPECT_TRUE(all_close(pf[i].second.grad(), pc[i].second.grad(), kAgreeF32, pc[i].first));
}

TEST(FusedAttention, ShapeErrors) {
  Var q(zeros({1, 2, 4, 3})), k(zeros({1, 2, 5, 3}));
  EXPECT_THROW(fused_attention(q, k, k, ones({1, 4}), false), ShapeError);
  EXPECT_THROW(fused_attention(q, k, Var(zeros({1, 2, 5, 2})), Tensor(), false), ShapeError);
}
