// tests/nn/fused/bf16_attention_reference.h - the float64 reference and error bound that both bf16 attention
// primitives are checked against: the blocked one (test_flash_attention_bf16.cpp) and the packed one for short
// sequences (test_qkv_attention_bf16.cpp). Both round the same operands to bf16 (Q' = c Q, K, V, dO; P or Pd for the
// products with V and dO; dS) and sum in float32.
//
// Against a float64 reference built from the bf16-rounded operands: q' = bf16(c q), k = bf16(k), v = bf16(v),
// dO = bf16(dy) in every product, the exact softmax in float64, D = dy . O with the unrounded dy (as the kernel).
// The kernel also rounds three intermediate tiles - P for P V, Pd for dV, dS for dQ and dK - so it is not exact up to
// float32 summation order (that is checked where it holds, on the tiles alone: tests/tensor/test_bf16_tiles.cpp).
// The tolerance is a first-order bound, element by element, of what the kernel's float32 arithmetic and these three
// roundings may add (u = 2^-8, bf16's unit roundoff: half an ulp of an 8-bit significand, relative; float32's eps = 2^-24):
//   S      |dS_ts| <= (HS + 1) eps sum_e |q'_te k_se| = s_t             float32 sums of exact bf16 products
//   P      relative rho_t = 2 s_t + (T + 16) eps + 2 x_t                S's error through the softmax, l, and the
//          x_t = 2.9e-6 + 7.5e-8 (max_s (m_t - S_ts) + log T)         bf16 path's exponential (nn/fused/softmax_exp.h:
//                                                                     its bound at the row's widest argument)
//   O      |dO_te| <= (u + rho_t) sum_s p_ts |v_se|                     P rounded once, relative <= u
//   dV     |.| <= (u + rho_t + T eps) sum_t p_ts |dO_te|
//   dS     E_ts = p_ts ((HS + 1) eps sum_e |dO_te v_se| + |dD_t| + rho_t |dP_ts - D_t|) + u |dS_ts|
//          with |dD_t| <= sum_e |dy_te| tol(O_te) + HS eps sum_e |dy_te O_te|
//   dQ, dK |.| <= c sum_s E_ts |k_se| + T eps c sum_s |dS_ts k_se|, and sum_t E_ts |q'_te| + T eps sum_t |dS_ts q'_te|
// times 1.5 for the second-order terms. A product that used an operand unrounded, a pair split the wrong way, a
// missed zero partner or a stale padding row breaks it by far more (a few u of the largest terms, or garbage).
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tensor/bf16.h"
#include "tensor/tensor.h"

namespace dl::test::bf16_attention {

struct Case {
  int64_t T, HS;
  bool causal, mask, prefix;
  std::string what() const {
    return "T=" + std::to_string(T) + " HS=" + std::to_string(HS) + (causal ? " causal" : "") + (mask ? " padded" : "") +
           (prefix ? " prefix" : "");
  }
};
constexpr int64_t kB = 3, kNH = 2;

// sequence 0 real up to 2/3 of T, sequence 1 at every third position, sequence 2 nowhere (rows average their keys)
inline std::vector<float> key_mask(int64_t T) {
  std::vector<float> km(kB * T, 0.f);
  for (int64_t t = 0; t < T; t++) km[t] = t < 2 * T / 3 + 1 ? 1.f : 0.f, km[T + t] = t % 3 == 0 ? 1.f : 0.f;
  return km;
}
inline std::vector<int64_t> prefixes(int64_t T) { return {T / 2, 0, T}; }

struct Inputs {
  Tensor qkv, dy;
};
inline Inputs inputs(const Case& c) {
  Generator g((uint64_t)(c.T * 131 + c.HS * 7 + c.causal * 3 + c.mask * 5 + c.prefix * 11));
  return {randn({kB, c.T, 3 * kNH * c.HS}, g), randn({kB, c.T, kNH * c.HS}, g)};
}

inline double rnd(float x) { return (double)round_to_bf16(x); }

// The float64 reference and the bound (box above) for one (b, h); checks out and dqkv of that head.
inline void check_head(const Case& c, const Inputs& in, const Tensor& out, const Tensor& dqkv, int64_t b, int64_t h, int& bad) {
  const int64_t T = c.T, HS = c.HS, C = kNH * HS, ld = 3 * C;
  const double u = std::ldexp(1.0, -8), eps = std::ldexp(1.0, -24), sc = 1.0 / std::sqrt((double)HS);
  const float cf = (float)sc;
  const float *x = in.qkv.data<float>() + b * T * ld + h * HS, *dy = in.dy.data<float>() + b * T * C + h * HS;
  auto q = [&](int64_t t, int64_t e) { return rnd(cf * x[t * ld + e]); };
  auto k = [&](int64_t s, int64_t e) { return rnd(x[s * ld + C + e]); };
  auto v = [&](int64_t s, int64_t e) { return rnd(x[s * ld + 2 * C + e]); };
  auto g = [&](int64_t t, int64_t e) { return rnd(dy[t * C + e]); };
  const std::vector<float> km = c.mask ? key_mask(T) : std::vector<float>();
  const int64_t pre = c.prefix ? prefixes(T)[b] : -1;
  std::vector<double> P(T * T, 0.0), rho(T), dP(T * T, 0.0), D(T), dD(T), dS(T * T, 0.0), E(T * T, 0.0);
  std::vector<double> O(T * HS), tolO(T * HS);
  std::vector<char> none_real(T);    // a row whose keys are all padding: P is the fill's uniform average, dS = 0
  for (int64_t t = 0; t < T; t++) {  // forward
    const int64_t nt = pre >= 0 ? std::max(pre, t + 1) : c.causal ? t + 1 : T;
    bool any = false;
    for (int64_t s = 0; s < nt; s++) any = any || km.empty() || km[b * T + s] != 0.f;
    double mx = -INFINITY, st = 0;
    std::vector<double> S(nt);
    for (int64_t s = 0; s < nt; s++) {
      double dot = 0, mag = 0;
      for (int64_t e = 0; e < HS; e++) dot += q(t, e) * k(s, e), mag += std::abs(q(t, e) * k(s, e));
      S[s] = dot, st = std::max(st, (double)(HS + 1) * eps * mag);
      if (!any || km.empty() || km[b * T + s] != 0.f) mx = std::max(mx, S[s]);
    }
    double spread = 0;  // the widest argument the row's exponentials take: S - m (forward), S - L (backward)
    for (int64_t s = 0; s < nt; s++)
      if (any && (km.empty() || km[b * T + s] != 0.f)) spread = std::max(spread, mx - S[s]);
    rho[t] = 2 * st + (double)(T + 16) * eps + 2 * (2.9e-6 + 7.5e-8 * (spread + std::log((double)T)));
    none_real[t] = !any;
    double l = 0;
    for (int64_t s = 0; s < nt; s++) {
      const bool real = km.empty() || km[b * T + s] != 0.f;
      P[t * T + s] = !any ? 1.0 : real ? std::exp(S[s] - mx) : 0.0;
      l += P[t * T + s];
    }
    for (int64_t s = 0; s < nt; s++) P[t * T + s] /= l;
    for (int64_t e = 0; e < HS; e++) {
      double o = 0, mag = 0;
      for (int64_t s = 0; s < nt; s++) o += P[t * T + s] * v(s, e), mag += P[t * T + s] * std::abs(v(s, e));
      O[t * HS + e] = o, tolO[t * HS + e] = (u + rho[t]) * mag;
    }
  }
  for (int64_t t = 0; t < T; t++) {  // backward: dP, D and dS, with E_ts the bound on the kernel's rounded dS
    double d = 0, dmag = 0, err = 0;
    for (int64_t e = 0; e < HS; e++) {
      d += (double)dy[t * C + e] * O[t * HS + e], dmag += std::abs((double)dy[t * C + e] * O[t * HS + e]);
      err += std::abs((double)dy[t * C + e]) * tolO[t * HS + e];
    }
    D[t] = d, dD[t] = err + (double)HS * eps * dmag;
    for (int64_t s = 0; s < T; s++) {
      if (P[t * T + s] == 0 || none_real[t]) continue;
      double dp = 0, mag = 0;
      for (int64_t e = 0; e < HS; e++) dp += g(t, e) * v(s, e), mag += std::abs(g(t, e) * v(s, e));
      dP[t * T + s] = dp, dS[t * T + s] = P[t * T + s] * (dp - D[t]);
      E[t * T + s] =
          P[t * T + s] * ((double)(HS + 1) * eps * mag + dD[t] + rho[t] * std::abs(dp - D[t])) + u * std::abs(dS[t * T + s]);
    }
  }
  auto expect = [&](double got, double ref, double tol, const char* what, int64_t i, int64_t e) {
    if (!(std::abs(got - ref) <= 1.5 * tol) && bad++ < 5)
      ADD_FAILURE() << c.what() << " b=" << b << " h=" << h << " " << what << "(" << i << ", " << e << "): " << got << " vs "
                    << ref << " (bound " << 1.5 * tol << ")";
  };
  const float *po = out.data<float>() + b * T * C + h * HS, *pd = dqkv.data<float>() + b * T * ld + h * HS;
  for (int64_t t = 0; t < T; t++)
    for (int64_t e = 0; e < HS; e++) {
      expect(po[t * C + e], O[t * HS + e], tolO[t * HS + e], "out", t, e);
      double dq = 0, tol = 0, dk = 0, tolk = 0, dv = 0, tolv = 0;
      for (int64_t s = 0; s < T; s++) {  // row t of dQ; and, with t as the key, row t of dK and dV
        dq += sc * dS[t * T + s] * k(s, e);
        tol += sc * (E[t * T + s] * std::abs(k(s, e)) + (double)T * eps * std::abs(dS[t * T + s] * k(s, e)));
        dk += dS[s * T + t] * q(s, e);
        tolk += E[s * T + t] * std::abs(q(s, e)) + (double)T * eps * std::abs(dS[s * T + t] * q(s, e));
        dv += P[s * T + t] * g(s, e);
        tolv += (u + rho[s] + (double)T * eps) * P[s * T + t] * std::abs(g(s, e));
      }
      expect(pd[t * ld + e], dq, tol, "dq", t, e);
      expect(pd[t * ld + C + e], dk, tolk, "dk", t, e);
      expect(pd[t * ld + 2 * C + e], dv, tolv, "dv", t, e);
    }
}

// Every (b, h) of one case's out and dqkv against check_head's reference; a failure names the case.
inline void expect_every_head(const Case& c, const Inputs& in, const Tensor& out, const Tensor& dqkv) {
  int bad = 0;
  for (int64_t b = 0; b < kB; b++)
    for (int64_t h = 0; h < kNH; h++) check_head(c, in, out, dqkv, b, h, bad);
  EXPECT_EQ(bad, 0) << c.what();
}

}  // namespace dl::test::bf16_attention
