// tests/nn/attention/test_prefix_mask.cpp - the prefix-LM (UniLM) mask of nn/attention/attention.h on every path
// MultiheadAttention can take (composed, packed, fused; windowed goes to composed):
//   the mask matrix for a hand case; the Jacobian d out[t] / d x[s] is exactly zero where (t, s) is disallowed and
//   nonzero where allowed; prefix 0 = causal, prefix T = full; the prefix's outputs equal the prefix encoded alone
//   (what SimBERT's [CLS] vector relies on); the paths agree in values and gradients (dropout included for the
//   packed primitive); PyTorch's masked attention (tests/fixtures/nn_prefix_mask.py); bad prefix lengths fail clearly.
#include <cmath>

#include "autograd/linalg.h"
#include "autograd/shape_ops.h"
#include "nn/attention/attention.h"
#include "nn/fused/fused_attention.h"
#include "nn/fused/qkv_attention.h"
#include "nn/nn_test_util.h"

using namespace dl;
using namespace dl::test;
using namespace dl::nn;

namespace {

enum class Path { composed, packed, fused };
const char* path_name(Path p) { return p == Path::composed ? "composed" : p == Path::packed ? "packed" : "fused"; }

// The same weights (seed 0) on the path asked for; C = 8, NH = 2 unless told.
MultiheadAttention make(Path p, bool causal = false, int64_t window = 0, int64_t C = 8, int64_t NH = 2) {
  Generator g(0);
  AttentionOptions o;
  o.heads = NH, o.causal = causal, o.window = window;
  o.fused = p == Path::fused;
  o.packed = p == Path::packed;
  return MultiheadAttention(C, o, g);
}

Tensor prefix_of(const std::vector<int64_t>& p) { return from_vector(p, {(int64_t)p.size()}); }

// The rule the tests hold the code to, written once more in the plainest form.
bool rule(int64_t t, int64_t s, int64_t P, bool real, int64_t window) {
  return real && (s < P || s <= t) && (window == 0 || std::abs(t - s) <= window);
}

const Path kPaths[] = {Path::composed, Path::packed, Path::fused};

}  // namespace

// B = 2, T = 5: example 0 has prefix 2 and its key 4 is padding, example 1 has prefix 0 (causal).
TEST(PrefixMask, HandCase) {
  Tensor km = from_vector(std::vector<float>{1, 1, 1, 1, 0, 1, 1, 1, 1, 1}, {2, 5});
  Tensor a = attention_allowed(km, 2, 5, 5, false, 0, DType::f64, "test", prefix_of({2, 0}));
  ASSERT_EQ(a.shape(), (Shape{2, 1, 5, 5}));
  const std::vector<double> want = {
      // example 0, prefix 2, key 4 padding
      1, 1, 0, 0, 0,  //
      1, 1, 0, 0, 0,  //
      1, 1, 1, 0, 0,  //
      1, 1, 1, 1, 0,  //
      1, 1, 1, 1, 0,  //
      // example 1, prefix 0: causal
      1, 0, 0, 0, 0,  //
      1, 1, 0, 0, 0,  //
      1, 1, 1, 0, 0,  //
      1, 1, 1, 1, 0,  //
      1, 1, 1, 1, 1};
  EXPECT_TRUE(all_close(a, from_vector(want, {2, 1, 5, 5}), kAgreeF64, "allowed"));
  // the prefix replaces causal: the same matrix with causal = true
  Tensor ac = attention_allowed(km, 2, 5, 5, true, 0, DType::f64, "test", prefix_of({2, 0}));
  EXPECT_TRUE(all_close(ac, a, kAgreeF64, "allowed, causal flag set"));
}

// d out[b, t, :] / d x[b, s, :], one backward per query row t (upstream gradient nonzero on row t only): exactly
// zero for every disallowed (t, s), nonzero for every allowed one. Padding, three prefix regimes, and a window.
TEST(PrefixMask, JacobianZeroExactlyWhereDisallowed) {
  const int64_t B = 3, T = 7, C = 8;
  const std::vector<int64_t> P = {3, 0, 7};
  std::vector<float> km(B * T, 1.f);
  km[0 * T + 6] = 0.f;  // example 0: last key is padding
  Tensor key_mask = from_vector(km, {B, T});
  Generator g(1);
  Tensor x0 = randn({B, T, C}, g);
  struct Case {
    Path path;
    int64_t window;
  };
  for (Case c : {Case{Path::composed, 0}, Case{Path::packed, 0}, Case{Path::fused, 0}, Case{Path::packed, 2}}) {
    auto m = make(c.path, false, c.window);
    for (int64_t t = 0; t < T; t++) {
      Var x(x0.clone(), true);
      Var y = m.forward_prefix(x, key_mask, prefix_of(P));  // (B, T, C)
      std::vector<float> w(B * T * C, 0.f);
      for (int64_t b = 0; b < B; b++)
        for (int64_t e = 0; e < C; e++) w[(b * T + t) * C + e] = 1.f + 0.1f * (float)e;
      y.backward(from_vector(w, {B, T, C}));
      Tensor gx = x.grad().contiguous();
      for (int64_t b = 0; b < B; b++)
        for (int64_t s = 0; s < T; s++) {
          double norm = 0;
          for (int64_t e = 0; e < C; e++) norm += std::abs(gx.data<float>()[(b * T + s) * C + e]);
          // x[t] reaches out[t] through the query even where key t is padding
          const bool ok = rule(t, s, P[b], km[b * T + s] != 0, c.window) || s == t;
          std::string what = std::string(path_name(c.path)) + " window " + std::to_string(c.window) + " b " +
                             std::to_string(b) + " t " + std::to_string(t) + " s " + std::to_string(s);
          if (ok) EXPECT_GT(norm, 0.0) << what;
          else EXPECT_EQ(norm, 0.0) << what;
        }
    }
  }
}

// prefix 0 is the causal mask and prefix T is full attention, on every path, values and input gradients.
TEST(PrefixMask, ZeroIsCausalAndFullLengthIsFull) {
  const int64_t B = 2, T = 9, C = 8;
  Generator g(2);
  Tensor x0 = randn({B, T, C}, g), dy = randn({B, T, C}, g);
  for (Path p : kPaths)
    for (bool zero : {true, false}) {
      auto pm = make(p), ref = make(p, zero);
      Var xa(x0.clone(), true), xb(x0.clone(), true);
      Var ya = pm.forward_prefix(xa, Tensor(), prefix_of({zero ? 0 : T, zero ? 0 : T}));
      Var yb = ref.forward(xb, Tensor());
      ya.backward(dy);
      yb.backward(dy);
      std::string what = std::string(path_name(p)) + (zero ? " prefix 0 vs causal" : " prefix T vs full");
      EXPECT_TRUE(all_close(ya.data(), yb.data(), kAgreeF32, what + " out"));
      EXPECT_TRUE(all_close(xa.grad(), xb.grad(), kAgreeF32, what + " dx"));
    }
}

// Nothing in the prefix sees past it, so its outputs are those of the prefix alone under full attention: encoding
// "[CLS] A [SEP] B [SEP]" with prefix |A| + 2 gives A's sentence vector at [CLS] (SimBERT's retrieval vector).
TEST(PrefixMask, PrefixOutputsEqualPrefixAlone) {
  const int64_t T = 11, P = 4, C = 8;
  Generator g(3);
  Tensor x0 = randn({1, T, C}, g);
  for (Path p : kPaths) {
    auto m = make(p);
    Var y = m.forward_prefix(Var(x0), Tensor(), prefix_of({P}));
    Var alone = m.forward(Var(narrow(Var(x0), 1, 0, P).data().contiguous()), Tensor());
    EXPECT_TRUE(all_close(narrow(y, 1, 0, P).data().contiguous(), alone.data(), kAgreeF32, path_name(p)));
  }
}

// The packed and fused paths against the composed one, same weights, random prefixes per example (crossing the
// packed kernel's 64-row blocks at T = 131), with key padding; values and every gradient.
TEST(PrefixMask, PathsAgree) {
  const int64_t C = 16;
  for (int64_t T : {1, 6, 131}) {
    const int64_t B = 3;
    const std::vector<int64_t> P = {T / 2, 0, T};
    std::vector<float> km(B * T, 1.f);
    for (int64_t t = 2 * T / 3 + 1; t < T; t++) km[2 * T + t] = 0.f;
    Tensor key_mask = from_vector(km, {B, T});
    Generator g(4);
    Tensor x0 = randn({B, T, C}, g), dy = randn({B, T, C}, g);
    auto ref = make(Path::composed, false, 0, C, 4);
    Var xr(x0.clone(), true);
    Var yr = ref.forward_prefix(xr, key_mask, prefix_of(P));
    yr.backward(dy);
    for (Path p : {Path::packed, Path::fused}) {
      auto m = make(p, false, 0, C, 4);
      Var x(x0.clone(), true);
      Var y = m.forward_prefix(x, key_mask, prefix_of(P));
      y.backward(dy);
      std::string what = std::string(path_name(p)) + " T=" + std::to_string(T);
      EXPECT_TRUE(all_close(y.data(), yr.data(), kAgreeF32, what + " out"));
      EXPECT_TRUE(all_close(x.grad(), xr.grad(), kAgreeF32, what + " dx"));
      auto pa = m.named_parameters(), pb = ref.named_parameters();
      for (size_t i = 0; i < pa.size(); i++)
        EXPECT_TRUE(all_close(pa[i].second.grad(), pb[i].second.grad(), kAgreeF32, what + " d" + pa[i].first));
    }
  }
}

// The packed primitive with dropout against the composed formula given its dropout mask (as test_qkv_attention).
TEST(PrefixMask, PackedWithDropoutAgreesWithComposed) {
  const int64_t B = 2, T = 70, C = 16, NH = 2;
  const double p = 0.2;
  Tensor prefix = prefix_of({30, 5});
  Generator g(5);
  Var qkv(randn({B, T, 3 * C}, g), true);
  Tensor dy = randn({B, T, C}, g);
  Generator dg(6);
  const uint64_t seed = qkv_attention_next_seed(dg);
  Var a = qkv_attention(qkv, NH, false, p, true, dg, Tensor(), prefix);
  a.backward(dy);
  Tensor ga = qkv.grad();
  qkv.zero_grad();
  Var q = split_heads(narrow(qkv, 2, 0, C), NH), k = split_heads(narrow(qkv, 2, C, C), NH),
      v = split_heads(narrow(qkv, 2, 2 * C, C), NH);                              // (B, NH, T, HS)
  Var s = matmul(q, transpose(k, -2, -1)) * (1.0 / std::sqrt((double)(C / NH)));  // (B, NH, T, T)
  Tensor allowed = attention_allowed(Tensor(), B, T, T, false, 0, DType::f32, "test", prefix);
  s = masked_fill(s, add_scalar(neg(allowed), 1.0), -1e9);
  Var b = merge_heads(matmul(softmax(s, -1) * Var(qkv_attention_mask(seed, B, NH, T, p)), v));  // (B, T, C)
  b.backward(dy);
  EXPECT_TRUE(all_close(a.data(), b.data(), kAgreeF32, "out"));
  EXPECT_TRUE(all_close(ga, qkv.grad(), kAgreeF32, "dqkv"));
}

// Which path runs: the prefix keeps packed and fused, and sends a windowed layer to the composed path.
TEST(PrefixMask, PathChoice) {
  AttentionOptions o;
  EXPECT_EQ(choose_attention_path(o, true, false, false, DType::f32, Device::cpu, true), AttentionPath::packed);
  o.fused = true;
  EXPECT_EQ(choose_attention_path(o, true, false, false, DType::f32, Device::cpu, true), AttentionPath::fused);
  EXPECT_EQ(choose_attention_path(o, true, false, false, DType::f32, Device::cuda, true), AttentionPath::composed)
      << "the fused primitive is a CPU kernel";
  o.window = 2;
  EXPECT_EQ(choose_attention_path(o, true, false, false, DType::f32, Device::cpu, false), AttentionPath::windowed);
  // a prefix with a window: the blocked kernel has both (since 2026-12-06; before, the composed path's full matrix)
  EXPECT_EQ(choose_attention_path(o, true, false, false, DType::f32, Device::cpu, true), AttentionPath::flash);
  EXPECT_EQ(choose_attention_path(o, true, false, false, DType::f64, Device::cpu, true), AttentionPath::composed);
}

// PyTorch: boolean-masked attention (s < prefix[b] or s <= t, and key_mask), prefixes {2, 0, 6} of T = 6; forward
// and every gradient, on each path.
TEST(PrefixMask, MatchesPyTorch) {
  TensorFile f = nn_fixture("mha_prefix");
  for (Path p : kPaths) {
    auto m = make(p);
    load_fixture_state(m, f);
    Var x = fixture_input(f);
    EXPECT_TRUE(check_fixture(m, f, m.forward_prefix(x, f.at("input1"), f.at("input2")), {{"input", x}})) << path_name(p);
  }
}

TEST(PrefixMask, BadPrefixLengthsFailClearly) {
  const int64_t B = 2, T = 5, C = 8;
  Generator g(7);
  Var x(randn({B, T, C}, g));
  for (Path p : kPaths) {
    auto m = make(p);
    auto err = [&](const Tensor& prefix) { return error_of([&] { m.forward_prefix(x, Tensor(), prefix); }); };
    std::string e = err(prefix_of({2, -1}));
    EXPECT_NE(e.find("prefix length -1 of example 1 is outside [0, 5]"), std::string::npos) << e;
    e = err(prefix_of({6, 0}));
    EXPECT_NE(e.find("prefix length 6 of example 0 is outside [0, 5]"), std::string::npos) << e;
    e = err(prefix_of({1, 2, 3}));
    EXPECT_NE(e.find("prefix lengths shape mismatch: expected (B) = [2], found [3]"), std::string::npos) << e;
    e = err(from_vector(std::vector<float>{1, 2}, {2}));
    EXPECT_NE(e.find("prefix lengths must be an i64 tensor (B), found dtype f32"), std::string::npos) << e;
    e = err(Tensor());
    EXPECT_NE(e.find("prefix lengths are undefined"), std::string::npos) << e;
  }
  // the primitives check too
  Var q(randn({B, 2, T, 4}, g));
  std::string e = error_of([&] { fused_attention(q, q, q, Tensor(), false, prefix_of({0, 9})); });
  EXPECT_NE(e.find("fused_attention: prefix length 9"), std::string::npos) << e;
  Var qkv(randn({B, T, 3 * C}, g));
  e = error_of([&] { qkv_attention(qkv, 2, false, 0, false, g, Tensor(), prefix_of({0})); });
  EXPECT_NE(e.find("qkv_attention: prefix lengths shape mismatch"), std::string::npos) << e;
}
