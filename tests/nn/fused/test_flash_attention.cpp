// tests/nn/fused/test_flash_attention.cpp - the blocked online-softmax primitive (nn/fused/flash_attention.h) against
// its twins: the packed primitive (nn/fused/qkv_attention.h, same arguments and the same dropout mask) and the
// composed path (split heads, scores, the allowed-mask fill, softmax, the packed path's dropout mask, merge heads).
// Values and the gradient of qkv at lengths that are not multiples of the tiles (48 query rows x 128 keys) and cross
// them: 1, 7, 64, 130, 257; key padding, causal, prefix-LM; with and without dropout; a window (the band
// |t - s| <= w). Tolerance: kAgreeF32 (both are float32 and sum in a different order: per tile here, over the whole
// row in the twins).
#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>

#include "nn/attention/attention.h"
#include "nn/fused/flash_attention.h"
#include "nn/fused/qkv_attention.h"
#include "layer_agreement.h"
#include "op_harness.h"
#include "tensor/allocator.h"
#include "tolerance.h"

using namespace dl;
using namespace dl::test;
using namespace dl::nn;

namespace {

const int64_t kLengths[] = {1, 7, 64, 130, 257};

// The composed twin, given the dropout mask (B, NH, T, T) of 0 or 1/(1-p), or undefined for none; window > 0: the band
// |t - s| <= window of attention_allowed.
Var composed(const Var& qkv, int64_t NH, bool causal, const Tensor& drop_mask, const Tensor& key_mask, const Tensor& prefix,
             int64_t window = 0) {
  const int64_t B = qkv.size(0), T = qkv.size(1), C = qkv.size(2) / 3;
  Var q = split_heads(narrow(qkv, 2, 0, C), NH), k = split_heads(narrow(qkv, 2, C, C), NH),
      v = split_heads(narrow(qkv, 2, 2 * C, C), NH);                              // (B, NH, T, HS)
  Var s = matmul(q, transpose(k, -2, -1)) * (1.0 / std::sqrt((double)(C / NH)));  // (B, NH, T, T)
  if (causal || key_mask.defined() || prefix.defined() || window > 0) {
    Tensor allowed = attention_allowed(key_mask, B, T, T, causal, window, DType::f32, "test", prefix);
    s = masked_fill(s, add_scalar(neg(allowed), 1.0), -1e9);
  }
  Var w = softmax(s, -1);
  if (drop_mask.defined()) w = w * Var(drop_mask);
  return merge_heads(matmul(w, v));  // (B, T, C)
}

// Masks for B = 3: sequence 0 real up to 2/3 of T, sequence 1 real at 0 and at every third position, sequence 2 real
// at 0 only (`all_padded`: none at all; then every row averages v over its keys, as the -1e9 fill gives).
Tensor key_mask(int64_t T, bool all_padded) {
  std::vector<float> km(3 * T, 0.f);
  for (int64_t t = 0; t < T; t++) {
    km[t] = t < 2 * T / 3 + 1 ? 1.f : 0.f;
    km[T + t] = t % 3 == 0 ? 1.f : 0.f;
  }
  km[2 * T] = all_padded ? 0.f : 1.f;
  return from_vector(km, {3, T});
}
// For a window: masks whose every band holds a real key, causal bands [t - 1, t] included (sequence 0 all real, 1 real
// at the even positions, 2 at 0 and the odd ones), so no row falls back to the all-padding average (where the
// composed fill averages over all T keys, the primitive over the row's band).
Tensor band_key_mask(int64_t T) {
  std::vector<float> km(3 * T, 0.f);
  for (int64_t t = 0; t < T; t++) km[t] = 1.f, km[T + t] = t % 2 == 0, km[2 * T + t] = t == 0 || t % 2 == 1;
  return from_vector(km, {3, T});
}
Tensor prefix_of(int64_t T) { return from_vector(std::vector<int64_t>{T / 2, 0, T}, {3}); }  // half, causal, full

struct Case {
  int64_t T;
  bool causal, mask, prefix;
  double p;
  int64_t window = 0;
  std::string what() const {
    return "T=" + std::to_string(T) + (causal ? " causal" : "") + (mask ? " padded" : "") + (prefix ? " prefix" : "") +
           " p=" + std::to_string(p) + (window ? " window=" + std::to_string(window) : "");
  }
};

// Runs flash_attention and the twin `other` on the same qkv, dy and generator state; compares out and dqkv.
void expect_agree(const Case& c, const std::function<Var(const Var&, Generator&, const Tensor&, const Tensor&)>& other,
                  bool all_padded, const std::string& twin) {
  const int64_t B = 3, NH = 2, C = 32;  // HS 16
  Generator g(c.T * 7 + 1);
  Var qkv(randn({B, c.T, 3 * C}, g), true);
  Tensor dy = randn({B, c.T, C}, g);
  Tensor km = !c.mask ? Tensor() : c.window ? band_key_mask(c.T) : key_mask(c.T, all_padded);
  Tensor pre = c.prefix ? prefix_of(c.T) : Tensor();
  Generator g1(99), g2(99);
  Var a = flash_attention(qkv, NH, c.causal, c.p, true, g1, km, pre, c.window);
  a.backward(dy);
  Tensor ga = qkv.grad();
  qkv.zero_grad();
  Var b = other(qkv, g2, km, pre);
  b.backward(dy);
  EXPECT_TRUE(all_close(a.data(), b.data(), kAgreeF32, c.what() + " out vs " + twin));
  EXPECT_TRUE(all_close(ga, qkv.grad(), kAgreeF32, c.what() + " dqkv vs " + twin));
}

std::vector<Case> cases(const std::vector<double>& ps) {
  std::vector<Case> cs;
  for (int64_t T : kLengths)
    for (bool causal : {false, true})
      for (bool mask : {false, true})
        for (bool prefix : {false, true})
          for (double p : ps) cs.push_back({T, causal, mask, prefix, p});
  return cs;
}

TEST(FlashAttention, AgreesWithPacked) {
  for (const Case& c : cases({0.0, 0.2}))
    expect_agree(
        c,
        [&](const Var& qkv, Generator& g, const Tensor& km, const Tensor& pre) {
          return qkv_attention(qkv, 2, c.causal, c.p, true, g, km, pre);
        },
        /*all_padded=*/true, "packed");
}

// Against the composed path every row keeps a real key (key 0 is real): where all of a row's keys are padding, the
// composed causal fill averages over all T keys, the primitives over the row's own (qkv_attention.h says so).
TEST(FlashAttention, AgreesWithComposed) {
  for (const Case& c : cases({0.0, 0.3}))
    expect_agree(
        c,
        [&](const Var& qkv, Generator& g, const Tensor& km, const Tensor& pre) {
          Tensor m = c.p > 0 ? qkv_attention_mask(qkv_attention_next_seed(g), 3, 2, c.T, c.p) : Tensor();
          return composed(qkv, 2, c.causal, m, km, pre);
        },
        /*all_padded=*/false, "composed");
}

// The band |t - s| <= w against the composed path's band mask, with the same hash dropout mask: windows narrower
// than a key block (1, 5), about one (100: a 48-row block then spans two or three key blocks) and wider than T (400:
// the whole rows, as without a window), crossed with causal, padding and prefix-LM.
TEST(FlashAttention, WindowAgreesWithComposed) {
  for (int64_t T : {7, 130, 300})
    for (int64_t w : {1, 5, 100, 400})
      for (bool causal : {false, true})
        for (bool mask : {false, true})
          for (bool prefix : {false, true})
            for (double p : {0.0, 0.25}) {
              const Case c{T, causal, mask, prefix, p, w};
              expect_agree(
                  c,
                  [&](const Var& qkv, Generator& g, const Tensor& km, const Tensor& pre) {
                    Tensor m = c.p > 0 ? qkv_attention_mask(qkv_attention_next_seed(g), 3, 2, c.T, c.p) : Tensor();
                    return composed(qkv, 2, c.causal, m, km, pre, w);
                  },
                  /*all_padded=*/false, "composed");
            }
}

// A band with no real key (a sequence all padding): each row averages v over its band (keys t - w .. t + w), the
// weights do not depend on q and k (their gradients are 0), and v's gradient is dy spread over the band evenly.
TEST(FlashAttention, WindowWithoutRealKeysAveragesTheBand) {
  const int64_t T = 200, C = 16, w = 30;
  Generator g(4);
  Var qkv(randn({1, T, 3 * C}, g), true);
  Tensor dy = randn({1, T, C}, g);
  Var y = flash_attention(qkv, 1, false, 0, true, g, zeros({1, T}), Tensor(), w);
  y.backward(dy);
  const float *x = qkv.data().data<float>(), *out = y.data().data<float>(), *d = dy.data<float>(), *gx = qkv.grad().data<float>();
  double worst = 0;
  for (int64_t t = 0; t < T; t++) {
    const int64_t lo = std::max<int64_t>(0, t - w), hi = std::min(T, t + w + 1);
    for (int64_t e = 0; e < C; e++) {
      double mean = 0, dv = 0;
      for (int64_t s = lo; s < hi; s++) mean += x[s * 3 * C + 2 * C + e] / (double)(hi - lo);
      for (int64_t r = std::max<int64_t>(0, t - w); r < std::min(T, t + w + 1); r++)  // rows whose band holds key t
        dv += d[r * C + e] / (double)(std::min(T, r + w + 1) - std::max<int64_t>(0, r - w));
      worst = std::max({worst, std::abs(out[t * C + e] - mean), std::abs(gx[t * 3 * C + 2 * C + e] - dv)});
      worst = std::max({worst, (double)std::abs(gx[t * 3 * C + e]), (double)std::abs(gx[t * 3 * C + C + e])});
    }
  }
  EXPECT_LT(worst, 1e-5);
}

// A head size that is not a multiple of the 16-float vector (zero-padded tiles), one head, and a long causal T.
TEST(FlashAttention, OddHeadSizeAndLongCausal) {
  for (int64_t HS : {5, 24})
    for (int64_t T : {300, 600}) {
      Generator g(HS + T);
      Var qkv(randn({1, T, 3 * HS}, g), true);
      Tensor dy = randn({1, T, HS}, g);
      Generator g1(1), g2(1);
      Var a = flash_attention(qkv, 1, true, 0.1, true, g1);
      a.backward(dy);
      Tensor ga = qkv.grad();
      qkv.zero_grad();
      Var b = qkv_attention(qkv, 1, true, 0.1, true, g2);
      b.backward(dy);
      const std::string what = "HS=" + std::to_string(HS) + " T=" + std::to_string(T);
      EXPECT_TRUE(all_close(a.data(), b.data(), kAgreeF32, what + " out"));
      EXPECT_TRUE(all_close(ga, qkv.grad(), kAgreeF32, what + " dqkv"));
    }
}

TEST(FlashAttention, ResultDoesNotDependOnThreadCount) {
  Generator g(5);
  Var qkv(randn({2, 257, 96}, g), true);
  Tensor dy = randn({2, 257, 32}, g), km = key_mask(257, false).narrow(0, 0, 2);
  std::vector<Tensor> outs, grads;
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    Generator d(9);
    Var y = flash_attention(qkv, 2, true, 0.2, true, d, km);
    y.backward(dy);
    outs.push_back(y.data());
    grads.push_back(qkv.grad().clone());
    qkv.zero_grad();
  }
  omp_set_num_threads(2);
  EXPECT_TRUE(all_close(outs[0], outs[1], {0, 0}, "out, 1 vs 2 threads"));
  EXPECT_TRUE(all_close(grads[0], grads[1], {0, 0}, "dqkv, 1 vs 2 threads"));
}

// Nothing T x T: at T = 2048 one score matrix would be 16 MB; forward and backward together stay far below it.
TEST(FlashAttention, MemoryIsLinearInLength) {
  const int64_t T = 2048, C = 32;
  Generator g(3);
  Var qkv(randn({1, T, 3 * C}, g), true);
  Tensor dy = randn({1, T, C}, g);
  const size_t before = host_allocator_stats().bytes_in_use;
  host_reset_peak();
  flash_attention(qkv, 2, false, 0.1, true, g).backward(dy);
  const double extra_mb = (double)(host_allocator_stats().peak_bytes_in_use - before) / 1048576.0;
  EXPECT_LT(extra_mb, 4.0) << "peak extra memory " << extra_mb << " MB; one T x T float matrix is 16 MB";
}

// The layer: flash_from decides between the flash and the packed path; the flash path agrees with the composed one
// (packed = false) with the same weights, rotary or not, causal or not, with padding: values and every gradient.
TEST(FlashAttention, LayerPathAgreesWithComposed) {
  AttentionOptions o;
  o.flash_from = 100;
  EXPECT_EQ(choose_attention_path(o, true, false, true, DType::f32, Device::cpu, false, 99), AttentionPath::packed);
  EXPECT_EQ(choose_attention_path(o, true, false, true, DType::f32, Device::cpu, true, 100), AttentionPath::flash);
  EXPECT_EQ(choose_attention_path(o, true, false, true, DType::f32, Device::cpu, false, 0), AttentionPath::packed);
  EXPECT_EQ(choose_attention_path(o, true, true, true, DType::f32, Device::cpu, false, 500), AttentionPath::composed);
  expect_fast_layer_agrees_with_composed(o, 137, 90);  // T >= flash_from: the blocked kernel
}

// With a window float32 self-attention takes the blocked kernel at any length (its band skips the key blocks outside
// it), on the CPU and on a device; packed = false and float64 keep the block-wise local attention, which it agrees with.
TEST(FlashAttention, WindowedLayerTakesTheBlockedKernel) {
  AttentionOptions o;
  o.window = 50;
  EXPECT_EQ(choose_attention_path(o, true, false, true, DType::f32, Device::cpu, false, 10), AttentionPath::flash);
  EXPECT_EQ(choose_attention_path(o, true, false, true, DType::f32, Device::cpu, true, 10), AttentionPath::flash) << "prefix";
  EXPECT_EQ(choose_attention_path(o, true, false, true, DType::f64, Device::cpu, false, 10), AttentionPath::windowed);
  EXPECT_EQ(choose_attention_path(o, true, false, true, DType::f32, Device::cuda, false, 10, 16), AttentionPath::flash);
  EXPECT_EQ(choose_attention_path(o, true, false, true, DType::f32, Device::cuda, false, 10, kDeviceFlashMaxHead + 1),
            AttentionPath::windowed);
  o.packed = false;
  EXPECT_EQ(choose_attention_path(o, true, false, true, DType::f32, Device::cpu, false, 10), AttentionPath::windowed);
  o.packed = true;
  expect_fast_layer_agrees_with_composed(o, 20, 12);   // the band wider than T
  expect_fast_layer_agrees_with_composed(o, 137, 97);  // every band keeps a real key (row 136's holds 86 .. 96)
}

// On a device the flash primitive runs at any length while the head fits its kernel; otherwise the composed path.
TEST(FlashAttention, DevicePathChoice) {
  AttentionOptions o;
  EXPECT_EQ(choose_attention_path(o, true, false, true, DType::f32, Device::cuda, false, 8, 64), AttentionPath::flash);
  EXPECT_EQ(choose_attention_path(o, true, false, true, DType::f32, Device::cuda, true, 8, kDeviceFlashMaxHead),
            AttentionPath::flash);
  EXPECT_EQ(choose_attention_path(o, true, false, true, DType::f32, Device::cuda, false, 8, kDeviceFlashMaxHead + 1),
            AttentionPath::composed);
  EXPECT_EQ(choose_attention_path(o, true, false, true, DType::f32, Device::cuda, false, 8), AttentionPath::composed)
      << "head size unknown";
  EXPECT_EQ(choose_attention_path(o, true, false, true, DType::f64, Device::cuda, false, 8, 64), AttentionPath::composed);
  EXPECT_EQ(choose_attention_path(o, true, true, true, DType::f32, Device::cuda, false, 8, 64), AttentionPath::composed)
      << "weights asked";
  EXPECT_EQ(choose_attention_path(o, false, false, true, DType::f32, Device::cuda, false, 8, 64), AttentionPath::composed)
      << "cross-attention";
  o.packed = false;
  EXPECT_EQ(choose_attention_path(o, true, false, true, DType::f32, Device::cuda, false, 8, 64), AttentionPath::composed);
}

TEST(FlashAttention, RejectsBadInput) {
  Generator g(1);
  EXPECT_THROW(flash_attention(Var(randn({2, 4, 10}, g)), 2, false, 0, false, g), ShapeError);
  EXPECT_THROW(flash_attention(Var(randn({2, 4, 12}, g)), 3, false, 0, false, g), ShapeError);
  EXPECT_THROW(flash_attention(Var(randn({2, 4, 12}, g)), 2, false, 0, false, g, ones({2, 5})), ShapeError);
  EXPECT_NE(error_of([&] { flash_attention(Var(randn({2, 4, 12}, g)), 2, false, 1.5, false, g); }).find("dropout"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              flash_attention(Var(randn({2, 4, 12}, g)), 2, false, 0, false, g, Tensor(),
                              from_vector(std::vector<int64_t>{1, 9}, {2}));
            }).find("prefix length 9"),
            std::string::npos);
}

}  // namespace
