// tests/nn/attention/test_attention.cpp - attention family: PyTorch fixtures (tests/fixtures/nn_attention.py),
// finite differences, and "two algorithms agree" checks (windowed vs banded full, causal linear vs quadratic,
// RoPE invariants, Performer converging to softmax attention).
#include <cmath>

#include "autograd/linalg.h"
#include "autograd/shape_ops.h"
#include "nn/attention/attention.h"
#include "nn/attention/linear_attention.h"
#include "nn/attention/positions.h"
#include "nn/nn_test_util.h"

using namespace dl;
using namespace dl::test;
using namespace dl::nn;

namespace {
constexpr int64_t B = 2, T = 5, C = 8, NH = 2;

MultiheadAttention make_mha(bool causal = false, bool rotary = false, int64_t window = 0) {
  Generator g(0);
  AttentionOptions o;
  o.heads = NH;
  o.causal = causal;
  o.rotary = rotary;
  o.window = window;
  return MultiheadAttention(C, o, g);
}
}  // namespace

TEST(AttentionPyTorch, PaddingMask) {
  auto m = make_mha();
  TensorFile f = nn_fixture("mha_mask");
  load_fixture_state(m, f);
  Var x = fixture_input(f);
  EXPECT_TRUE(check_fixture(m, f, m.forward(x, f.at("input1")), {{"input", x}}));
}

TEST(AttentionPyTorch, ReturnsWeights) {
  auto m = make_mha();
  TensorFile f = nn_fixture("mha_weights");
  load_fixture_state(m, f);
  Var x = fixture_input(f), w;
  m.forward_with_weights(x, f.at("input1"), &w);
  EXPECT_EQ(w.shape(), (Shape{B, NH, T, T}));
  EXPECT_TRUE(check_fixture(m, f, w, {{"input", x}}));
}

TEST(AttentionPyTorch, Causal) {
  auto m = make_mha(true);
  TensorFile f = nn_fixture("mha_causal");
  load_fixture_state(m, f);
  Var x = fixture_input(f);
  EXPECT_TRUE(check_fixture(m, f, m.forward(x, Tensor()), {{"input", x}}));
}

TEST(AttentionPyTorch, RotaryCausalWithMask) {
  auto m = make_mha(true, true);
  TensorFile f = nn_fixture("mha_rotary_causal");
  load_fixture_state(m, f);
  Var x = fixture_input(f);
  EXPECT_TRUE(check_fixture(m, f, m.forward(x, f.at("input1")), {{"input", x}}));
}

TEST(AttentionPyTorch, CrossAttention) {
  auto m = make_mha();
  TensorFile f = nn_fixture("mha_cross");
  load_fixture_state(m, f);
  Var x = fixture_input(f), mem = fixture_input(f, "input1");
  EXPECT_TRUE(check_fixture(m, f, m.cross(x, mem, f.at("input2")), {{"input", x}, {"input1", mem}}));
}

TEST(AttentionPyTorch, Positions) {
  SinusoidalPositions sp;
  TensorFile f = nn_fixture("pos_sinusoidal");
  Var x = fixture_input(f);
  EXPECT_TRUE(check_fixture(sp, f, sp.forward(x), {{"input", x}}));
  Generator g(0);
  LearnedPositions lp(16, C, g);
  TensorFile f2 = nn_fixture("pos_learned");
  load_fixture_state(lp, f2);
  Var x2 = fixture_input(f2);
  EXPECT_TRUE(check_fixture(lp, f2, lp.forward(x2), {{"input", x2}}));
}

TEST(AttentionPyTorch, LinearAttention) {
  Generator g(0);
  LinearAttention a(C, NH, "elu", false, g);
  TensorFile f = nn_fixture("linear_attention_elu");
  load_fixture_state(a, f);
  Var x = fixture_input(f);
  EXPECT_TRUE(check_fixture(a, f, a.forward(x, f.at("input1")), {{"input", x}}));
  LinearAttention c(C, NH, "relu", true, g);
  TensorFile f2 = nn_fixture("linear_attention_relu_causal");
  load_fixture_state(c, f2);
  Var x2 = fixture_input(f2);
  EXPECT_TRUE(check_fixture(c, f2, c.forward(x2, Tensor()), {{"input", x2}}));
}

TEST(AttentionPyTorch, Performer) {
  Generator g(0);
  Performer p(C, NH, 6, false, g);
  TensorFile f = nn_fixture("performer");
  load_fixture_state(p, f);  // includes the buffer feature_projection
  Var x = fixture_input(f);
  EXPECT_TRUE(check_fixture(p, f, p.forward(x, f.at("input1")), {{"input", x}}));
}

TEST(AttentionErrors, MaskShapeMismatch) {
  auto m = make_mha();
  Generator g(1);
  Var x(randn({B, T, C}, g));
  try {
    m.forward(x, ones({B, T + 1}));
    FAIL() << "no error";
  } catch (const ShapeError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("mask shape mismatch"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[2, 5]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[2, 6]"), std::string::npos) << msg;
  }
}

// ---- invariants and agreements ----
TEST(AttentionAgree, RotaryPreservesNormsAndDependsOnOffsetOnly) {
  Generator g(5);
  Var q(randn({1, 1, 1, 8}, g, DType::f64)), k(randn({1, 1, 1, 8}, g, DType::f64));
  auto dot = [](const Var& a, const Var& b) { return sum(a * b).item(); };
  for (int64_t pos : {0, 3, 17}) {
    Var r = apply_rotary(q, pos);
    EXPECT_NEAR(dot(r, r), dot(q, q), 1e-12) << "norm at position " << pos;
  }
  // q at position t, k at position s: the score depends on t - s only (shift both by 11)
  for (auto [t, s] : {std::pair<int64_t, int64_t>{5, 2}, {2, 5}, {7, 7}}) {
    double a = dot(apply_rotary(q, t), apply_rotary(k, s));
    double b = dot(apply_rotary(q, t + 11), apply_rotary(k, s + 11));
    EXPECT_NEAR(a, b, 1e-12) << "t = " << t << ", s = " << s;
  }
  EXPECT_GT(std::abs(dot(apply_rotary(q, 5), apply_rotary(k, 2)) - dot(apply_rotary(q, 2), apply_rotary(k, 5))), 1e-6);
}

TEST(AttentionAgree, WindowedEqualsFullWithBandMask) {
  Generator g(6);
  const int64_t L = 23;
  Var q(randn({2, 2, L, 4}, g, DType::f64), true), k(randn({2, 2, L, 4}, g, DType::f64), true),
      v(randn({2, 2, L, 4}, g, DType::f64), true);
  Tensor mask = ones({2, L});
  mask.narrow(0, 1, 1).narrow(1, L - 1, 1).fill_(0);  // every query keeps a real key in its window
  for (bool causal : {false, true})
    for (int64_t w : {1, 4, 5, 30}) {
      for (auto* x : {&q, &k, &v}) x->zero_grad();
      Tensor dy = randn({2, 2, L, 4}, g, DType::f64);
      Var a = local_attention(q, k, v, mask, w, causal);
      a.backward(dy);
      Tensor ga[3] = {q.grad(), k.grad(), v.grad()};
      for (auto* x : {&q, &k, &v}) x->zero_grad();
      SDPAOptions o;
      o.key_mask = mask;
      o.causal = causal;
      o.window = w;
      Var b = scaled_dot_product_attention(q, k, v, o);
      b.backward(dy);
      std::string what = "w=" + std::to_string(w) + (causal ? " causal" : "");
      EXPECT_TRUE(all_close(a.data(), b.data(), kAgreeF64, what));
      EXPECT_TRUE(all_close(ga[0], q.grad(), kAgreeF64, what + " dq"));
      EXPECT_TRUE(all_close(ga[1], k.grad(), kAgreeF64, what + " dk"));
      EXPECT_TRUE(all_close(ga[2], v.grad(), kAgreeF64, what + " dv"));
    }
}

TEST(AttentionAgree, CausalLinearEqualsQuadraticMaskedForm) {
  Generator g(7);
  const int64_t L = 9;
  Var pq = exp(Var(randn({2, 2, L, 3}, g, DType::f64))), pk = exp(Var(randn({2, 2, L, 3}, g, DType::f64)));
  Var v(randn({2, 2, L, 4}, g, DType::f64));
  Var lin = linear_attention(pq, pk, v, Tensor(), true);
  // quadratic: A = (phi(Q) phi(K)^T) * tril; out = A V / (rowsum(A) + eps)
  Var A = matmul(pq, transpose(pk, -2, -1)) * Var(tril_mask(L, L, 0, DType::f64));
  Var quad = matmul(A, v) / (sum(A, {-1}, true) + 1e-6);
  EXPECT_TRUE(all_close(lin.data(), quad.data(), kAgreeF64, "causal linear vs quadratic"));
  // and the non-causal form equals the quadratic form without the tril
  Var A2 = matmul(pq, transpose(pk, -2, -1));
  EXPECT_TRUE(all_close(linear_attention(pq, pk, v, Tensor(), false).data(),
                        (matmul(A2, v) / (sum(A2, {-1}, true) + 1e-6)).data(), kAgreeF64, "linear vs quadratic"));
}

TEST(AttentionAgree, PerformerApproachesSoftmaxAsFeaturesGrow) {
  const int64_t L = 16, HS = 8;
  std::vector<int64_t> ms = {8, 32, 128, 512};
  std::vector<double> err(ms.size(), 0.0);
  const int seeds = 6;
  for (int seed = 0; seed < seeds; seed++) {
    Generator g(100 + seed);
    Var q(mul_scalar(randn({1, 1, L, HS}, g, DType::f64), 0.5)), k(mul_scalar(randn({1, 1, L, HS}, g, DType::f64), 0.5));
    Var v(randn({1, 1, L, HS}, g, DType::f64));
    Tensor exact = scaled_dot_product_attention(q, k, v, SDPAOptions{}).data();
    for (size_t i = 0; i < ms.size(); i++) {
      Tensor W = orthogonal_random_features(ms[i], HS, g).to(DType::f64);
      Tensor approx = linear_attention(favor_features(q, W, true), favor_features(k, W, false), v, Tensor(), false).data();
      Tensor d = sub(approx, exact);
      err[i] += std::sqrt(sum(mul(d, d)).item() / d.numel()) / seeds;  // RMS error, averaged over seeds
    }
  }
  for (size_t i = 1; i < ms.size(); i++) EXPECT_LT(err[i], err[i - 1]) << "m = " << ms[i] << " vs " << ms[i - 1];
  EXPECT_LT(err.back(), 0.05) << "m = 512 should be close to softmax attention";
}

TEST(AttentionBehaviour, PerformerRedrawChangesFeatures) {
  Generator g(8);
  Performer p(C, NH, 6, false, g);
  Tensor before = p.state_dict()["feature_projection"].clone();
  p.redraw(g);
  Tensor after = p.state_dict()["feature_projection"];
  EXPECT_EQ(after.shape(), (Shape{6, C / NH}));
  EXPECT_FALSE(all_close(after, before, kAgreeF64, "redraw"));
  // rows within one block are orthogonal
  Tensor W = after.to(DType::f64);
  double d01 = sum(mul(W.select(0, 0), W.select(0, 1))).item();
  EXPECT_NEAR(d01, 0.0, 1e-4);
}

// ---- finite differences ----
TEST(AttentionGradcheck, Layers) {
  Tensor mask = ones({2, 4});
  mask.narrow(0, 1, 1).narrow(1, 3, 1).fill_(0);
  Var x = randn_var({2, 4, 4}, 11);
  for (auto [causal, rotary, window] : {std::tuple{false, false, 0}, {true, true, 0}, {false, false, 2}, {true, false, 1}}) {
    Generator g(1);
    AttentionOptions o;
    o.heads = 2, o.causal = causal, o.rotary = rotary, o.window = window;
    MultiheadAttention m(4, o, g);
    to_f64(m);
    EXPECT_TRUE(module_gradcheck(m, {x}, [&] { return m.forward(x, mask); }))
        << "MHA causal=" << causal << " rotary=" << rotary << " window=" << window;
  }
  {
    Generator g(2);
    AttentionOptions o;
    o.heads = 2;
    MultiheadAttention m(4, o, g);
    to_f64(m);
    Var mem = randn_var({2, 3, 4}, 12);
    EXPECT_TRUE(module_gradcheck(m, {x, mem}, [&] { return m.cross(x, mem, Tensor()); })) << "cross";
  }
  for (auto [feat, causal] : {std::pair<std::string, bool>{"elu", false}, {"relu", true}, {"elu", true}}) {
    Generator g(3);
    LinearAttention m(4, 2, feat, causal, g);
    to_f64(m);
    EXPECT_TRUE(module_gradcheck(m, {x}, [&] { return m.forward(x, mask); })) << "linear " << feat << " " << causal;
  }
  {
    Generator g(4);
    Performer m(4, 2, 3, false, g);
    to_f64(m);
    // The detached stabiliser c cancels between numerator and denominator only up to the eps = 1e-6 added to
    // the denominator, so the analytic gradient (which treats c as a constant, as Performer does) differs
    // from finite differences by ~eps relative to the denominator.
    constexpr Tol kStabilised{1e-4, 1e-5};
    EXPECT_TRUE(module_gradcheck(
        m, {x}, [&] { return m.forward(x, mask); }, kStabilised))
        << "performer";
  }
  {
    Generator g(5);
    LearnedPositions m(6, 4, g);
    to_f64(m);
    EXPECT_TRUE(module_gradcheck(m, {x}, [&] { return m.forward(x); })) << "learned positions";
  }
}
