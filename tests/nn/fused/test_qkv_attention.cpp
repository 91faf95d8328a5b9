// tests/nn/fused/test_qkv_attention.cpp - the packed-qkv attention primitive (nn/fused/qkv_attention.h) against its
// composed twin: split heads, scaled_dot_product_attention (nn/attention/attention.h) or the same written out with the
// primitive's dropout mask, merge heads. Values and the gradient of qkv; causal and not; with and without
// dropout; T across sgemm's blocking sizes.
#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>

#include "nn/attention/attention.h"
#include "nn/fused/qkv_attention.h"
#include "layer_agreement.h"
#include "op_harness.h"
#include "tolerance.h"

using namespace dl;
using namespace dl::test;
using namespace dl::nn;

namespace {

// The composed twin, given the mask (B, NH, T, T) of 0 or 1/(1-p) (all ones without dropout) and the key padding
// mask (B, T) or undefined.
Var composed(const Var& qkv, int64_t NH, bool causal, const Tensor& mask, const Tensor& key_mask = Tensor()) {
  const int64_t C = qkv.size(2) / 3, T = qkv.size(1);
  Var q = split_heads(narrow(qkv, 2, 0, C), NH), k = split_heads(narrow(qkv, 2, C, C), NH),
      v = split_heads(narrow(qkv, 2, 2 * C, C), NH);                              // (B, NH, T, HS)
  Var s = matmul(q, transpose(k, -2, -1)) * (1.0 / std::sqrt((double)(C / NH)));  // (B, NH, T, T)
  if (causal || key_mask.defined()) {
    Tensor allowed = attention_allowed(key_mask, qkv.size(0), T, T, causal, 0, DType::f32, "test");
    s = masked_fill(s, add_scalar(neg(allowed), 1.0), -1e9);
  }
  return merge_heads(matmul(softmax(s, -1) * Var(mask), v));  // (B, T, C)
}

void expect_agree(int64_t T, bool causal, double p) {
  Generator g(7);
  const int64_t B = 2, NH = 4, C = 32;
  Var qkv(randn({B, T, 3 * C}, g), true);
  Tensor dy = randn({B, T, C}, g);
  Generator dg(11);
  const uint64_t seed = qkv_attention_next_seed(dg);
  Var a = qkv_attention(qkv, NH, causal, p, true, dg);
  a.backward(dy);
  Tensor ga = qkv.grad();
  qkv.zero_grad();
  Tensor mask = p > 0 ? qkv_attention_mask(seed, B, NH, T, p) : ones({B, NH, T, T});
  Var b = composed(qkv, NH, causal, mask);
  b.backward(dy);
  std::string what = "T=" + std::to_string(T) + (causal ? " causal" : "") + " p=" + std::to_string(p);
  EXPECT_TRUE(all_close(a.data(), b.data(), kAgreeF32, what + " out"));
  EXPECT_TRUE(all_close(ga, qkv.grad(), kAgreeF32, what + " dqkv"));
}

TEST(QKVAttention, AgreesWithComposed) {
  for (int64_t T : {1, 5, 64, 131})
    for (bool causal : {false, true})
      for (double p : {0.0, 0.1, 0.5}) expect_agree(T, causal, p);
}

// Padding keys: sequence 0 is real up to 2/3 of T, sequence 1 has one real position, sequence 2 none at all
// (every score is the fill, so both paths fall back to uniform weights over all T keys). Causal, sequence 2 is
// real at t = 0 only: a row with no real key among its allowed ones gets uniform weights over those here, while
// the composed path's causal fill makes it uniform over all T keys (future ones included), so they differ there.
TEST(QKVAttention, KeyPaddingAgreesWithComposed) {
  for (int64_t T : {3, 40, 131})
    for (bool causal : {false, true})
      for (double p : {0.0, 0.2}) {
        Generator g(17);
        const int64_t B = 3, NH = 2, C = 16;
        std::vector<float> km(B * T, 0.f);
        for (int64_t t = 0; t < T; t++) km[t] = t < 2 * T / 3 + 1 ? 1.f : 0.f;
        km[T] = 1.f;
        if (causal) km[2 * T] = 1.f;
        Tensor key_mask = from_vector(km, {B, T});
        Var qkv(randn({B, T, 3 * C}, g), true);
        Tensor dy = randn({B, T, C}, g);
        Generator dg(23);
        const uint64_t seed = qkv_attention_next_seed(dg);
        Var a = qkv_attention(qkv, NH, causal, p, true, dg, key_mask);
        a.backward(dy);
        Tensor ga = qkv.grad();
        qkv.zero_grad();
        Tensor mask = p > 0 ? qkv_attention_mask(seed, B, NH, T, p) : ones({B, NH, T, T});
        Var b = composed(qkv, NH, causal, mask, key_mask);
        b.backward(dy);
        std::string what = "padded T=" + std::to_string(T) + (causal ? " causal" : "") + " p=" + std::to_string(p);
        EXPECT_TRUE(all_close(a.data(), b.data(), kAgreeF32, what + " out"));
        EXPECT_TRUE(all_close(ga, qkv.grad(), kAgreeF32, what + " dqkv"));
      }
}

// The layer's packed path (the default for f32 CPU self-attention) against its composed path (packed = false) with
// the same weights: rotary or not, causal or not, with a key padding mask; values and every gradient.
TEST(QKVAttention, MultiheadAttentionPackedAgreesWithComposed) {
  expect_fast_layer_agrees_with_composed(AttentionOptions(), 37, 25);  // T < kFlashFrom: the packed kernel
}

TEST(QKVAttention, NoDropoutEqualsScaledDotProductAttention) {
  Generator g(3);
  const int64_t B = 2, T = 40, NH = 2, C = 16;
  Var qkv(randn({B, T, 3 * C}, g), true);
  for (bool causal : {false, true}) {
    Var a = qkv_attention(qkv, NH, causal, 0.1, /*training=*/false, g);  // eval: no dropout
    SDPAOptions o;
    o.causal = causal;
    Var b = merge_heads(scaled_dot_product_attention(split_heads(narrow(qkv, 2, 0, C), NH), split_heads(narrow(qkv, 2, C, C), NH),
                                                     split_heads(narrow(qkv, 2, 2 * C, C), NH), o));
    EXPECT_TRUE(all_close(a.data(), b.data(), kAgreeF32, causal ? "causal" : "full"));
  }
}

TEST(QKVAttention, MaskKeepsOneMinusP) {
  Tensor m = qkv_attention_mask(123, 2, 2, 128, 0.25);
  double kept = 0;
  for (float v : m.to_vector()) {
    if (v != 0) {
      EXPECT_FLOAT_EQ(v, 1.f / 0.75f);
    }
    kept += v != 0;
  }
  EXPECT_NEAR(kept / m.numel(), 0.75, 0.01);
}

TEST(QKVAttention, ResultDoesNotDependOnThreadCount) {
  Generator g(5);
  Var qkv(randn({2, 33, 48}, g), true);
  Generator d1(9), d2(9);
  omp_set_num_threads(1);
  Tensor a = qkv_attention(qkv, 2, true, 0.2, true, d1).data();
  omp_set_num_threads(2);
  Tensor b = qkv_attention(qkv, 2, true, 0.2, true, d2).data();
  EXPECT_TRUE(all_close(a, b, {0, 0}, "1 vs 2 threads"));
}

TEST(QKVAttention, RejectsBadShapes) {
  Generator g(1);
  EXPECT_THROW(qkv_attention(Var(randn({2, 4, 10}, g)), 2, false, 0, false, g), ShapeError);
  EXPECT_THROW(qkv_attention(Var(randn({2, 4, 12}, g)), 3, false, 0, false, g), ShapeError);
  EXPECT_THROW(qkv_attention(Var(randn({2, 4, 12}, g)), 2, false, 0, false, g, ones({2, 5})), ShapeError);
}

}  // namespace
