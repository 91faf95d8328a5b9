// nn/fused/softmax_exp.h - the exponential of the attention's softmax under the bf16 products: e^x to the precision
// that path keeps, in half the instructions of exp_fast (tensor/nn_kernels.h).
//
// Under Precision::bf16 the attention rounds P to bfloat16 before P V (relative error up to 2^-8 an element), so an
// exponential good to float32's last bit buys nothing there. This one computes (x <= 0 in the softmax: a score minus
// the row's maximum, or minus L)
//   t = x log2(e),  n = round(t),  f = t - n in [-1/2, 1/2],   e^x = 2^t = 2^n 2^f
//   2^f = 1 + f (c1 + f (c2 + f (c3 + f c4)))   (a degree-4 fit of relative error < 2.9e-6, exactly 1 at f = 0)
// and 2^n by VSCALEFPS: 9 vector instructions for 16 lanes where exp_fast takes 20 (a two-part range reduction, a
// degree-7 polynomial, clamps, the exponent built in integers, the select for exact zeros). Relative error below
// 2.9e-6 + 7.5e-8 |x| (the second term from t = x log2(e): the product's rounding and log2(e)'s own), so below 1e-5
// wherever the result is a normal float: some 400 times below bf16's rounding of P (and below 3.7e-6 for the
// scores within 10 of the maximum, which carry the softmax). Exactly 0 where t < -126 (a masked key's -inf, or a
// score more than 87 below the row's maximum: e^-87.3 is float32's smallest normal number), exactly 1 at 0, NaN kept.
// The float32 path keeps exp_fast: its softmax is float32 to the end.
//
// Two spellings of the same arithmetic: AVX-512 intrinsics for 16 lanes (the blocked attention's exp_row), and a
// plain function that loops vectorise (the packed attention for short sequences, and builds without AVX-512). They
// give the same bits where the compiler contracts `a * b + c` to an FMA (clang's and GCC's default where the target has
// FMA): (t + 1.5 2^23) - 1.5 2^23 rounds to nearest even as VRNDSCALEPS does, and 2^n is a normal float for every
// kept n, so p 2^n is VSCALEFPS's product. tests/nn/fused/test_softmax_exp.cpp checks both.
#pragma once
#include <bit>
#include <cstdint>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace dl::nn::softmax_exp {

constexpr float kLog2e = 1.44269504088896341f;
// 2^f on [-1/2, 1/2] with the constant term fixed at 1: an iteratively reweighted least-squares fit of the relative
// error (Lawson's algorithm, in float64), the coefficients rounded to float32; evaluated in float32 its largest
// relative error is 2.9e-6.
constexpr float kC1 = 0.6931241750717163f, kC2 = 0.24024099111557007f, kC3 = 0.055906426161527634f, kC4 = 0.009582852944731712f;

// e^x, one float at a time (loops over it vectorise).
inline float exp_short(float x) {
  float t = x * kLog2e;
  t = t < -127.f ? -127.f : t;  // -inf to a finite value, so that the conversion below is defined (NaN stays NaN)
  const float n = (t + 12582912.f) - 12582912.f;
  const float f = t - n;
  const float p = 1.f + f * (kC1 + f * (kC2 + f * (kC3 + f * kC4)));
  const float y = p * std::bit_cast<float>(((int32_t)n + 127) << 23);
  return t < -126.f ? 0.f : y;
}

#if defined(__AVX512F__)
// The same for 16 lanes.
inline __m512 exp_short16(__m512 x) {
  const __m512 t = _mm512_mul_ps(x, _mm512_set1_ps(kLog2e));
  // (the masked form with every lane set is the same instruction; GCC 12's unmasked one warns of its undefined source)
  const __m512 n = _mm512_mask_roundscale_ps(t, (__mmask16)0xFFFF, t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(t, n);
  __m512 p = _mm512_fmadd_ps(f, _mm512_set1_ps(kC4), _mm512_set1_ps(kC3));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kC2));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kC1));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.f));
  const __mmask16 kept = _mm512_cmp_ps_mask(t, _mm512_set1_ps(-126.f), _CMP_NLT_UQ);  // t >= -126, or NaN
  return _mm512_maskz_scalef_ps(kept, p, n);
}
#endif

}  // namespace dl::nn::softmax_exp
