// cuda/ops/dplr.cuh - the spectrum of S4's DPLR kernel (nn/ssm/s4.h, s4.cpp) on the device, in float64: the Cauchy sums
// and the Woodbury correction at the M = Lk/2 + 1 roots of unity, and their backward, as Thrust algorithms over
// functors (the GPU, and the host twin with thrust::cpp::par). The layer keeps the (H, N2) setup and the chain rule
// to its parameters on the host (O(Cc H N2)); the work here is O(Cc H M N2), and the FFTs around it are cuFFT's.
//
// Shape letters: Cc kernels (1 or 2), H channels, N2 modes, M nodes; pair k of V (2 Cc + 2, H, N2): k < Cc is Ct_k B,
// Cc <= k < 2 Cc is Ct_(k - Cc) P, then Q B and Q P. Complex numbers are (re, im) pairs. At node z = e^(-2 pi i m/Lk),
// al = 1 + z, be = 2 (1 - z), den_n = be - al w_n, den'_n = be - al conj(w_n):
//   forward   s_k = dt sum_n [V_k,n / den_n + conj(V_k,n) / den'_n]                      one thread per (h, m)
//             Khat_c = 2 [s_c - al s_(Cc+c) s_QB / (1 + al s_QP)]
//   backward  from g = gKhat (g_z = dL/dRe z + i dL/dIm z), Dn = 1 + al s_QP:            one thread per (h, m)
//             gs_c = 2 g_c, gs_(Cc+c) = g_c conj(-2 al s_QB / Dn), gs_QB = sum_c g_c conj(-2 al s_(Cc+c) / Dn),
//             gs_QP = sum_c g_c conj(2 al^2 s_(Cc+c) s_QB / Dn^2);  gdt_(h,m) = sum_k Re(conj(gs_k) s_k) / dt
//             gV_k,n = dt sum_m [conj(gs_k) / den'_n + gs_k / conj(den_n)]                one thread per (h, n)
//             gw_n = dt sum_m sum_k [conj(gs_k) conj(V_k,n) al / den'_n^2 + gs_k conj(V_k,n al / den_n^2)]
//             gdt_h = sum_m gdt_(h,m)                                                     one thread per h
// Every thread sums in a fixed order (n, m or k ascending), so the result does not depend on the launch.
// What it is not: tuned (each (h, n) thread recomputes its M denominators; a block could share the nodes).
#pragma once
#include <thrust/complex.h>

#include "cuda/ops/common.cuh"

namespace dl::ops {

using zd = thrust::complex<double>;
constexpr int64_t kDplrMaxPairs = 6;  // 2 Cc + 2 with Cc <= 2 (a causal or a bidirectional kernel)

struct DplrDims {
  int64_t Cc, H, N2, M, Lk;
  DL_HD int64_t pairs() const { return 2 * Cc + 2; }
  DL_HD zd node(int64_t m) const {  // e^(-2 pi i m / Lk)
    const double a = -2.0 * 3.14159265358979323846 * (double)m / (double)Lk;
    return zd(::cos(a), ::sin(a));
  }
};

DL_HD inline zd at(const double* p, int64_t i) { return zd(p[2 * i], p[2 * i + 1]); }
DL_HD inline void put(double* p, int64_t i, zd z) { p[2 * i] = z.real(), p[2 * i + 1] = z.imag(); }

// s_k (k < pairs) at node m of channel h, times dt.
DL_HD inline void dplr_sums(const DplrDims& d, const double* w, double dt, const double* V, int64_t h, int64_t m, zd* s) {
  const zd om = d.node(m), al = 1.0 + om, be = 2.0 * (1.0 - om);
  for (int64_t k = 0; k < d.pairs(); k++) s[k] = 0;
  for (int64_t n = 0; n < d.N2; n++) {
    const zd wn = at(w, h * d.N2 + n), inv = 1.0 / (be - al * wn), invp = 1.0 / (be - al * thrust::conj(wn));
    for (int64_t k = 0; k < d.pairs(); k++) {
      const zd v = at(V, (k * d.H + h) * d.N2 + n);
      s[k] += v * inv + thrust::conj(v) * invp;
    }
  }
  for (int64_t k = 0; k < d.pairs(); k++) s[k] *= dt;
}

struct DplrSpectrumF {  // i = h M + m
  DplrDims d;
  const double *w, *dt, *V;
  double* Khat;  // (Cc, H, M, 2)
  DL_HD void operator()(int64_t i) const {
    const int64_t h = i / d.M, m = i % d.M, Cc = d.Cc;
    zd s[kDplrMaxPairs];
    dplr_sums(d, w, dt[h], V, h, m, s);
    const zd al = 1.0 + d.node(m), qb = s[2 * Cc], qp = s[2 * Cc + 1];
    for (int64_t c = 0; c < Cc; c++) put(Khat, c * d.H * d.M + i, 2.0 * (s[c] - al * s[Cc + c] * qb / (1.0 + al * qp)));
  }
};

struct DplrGradSumsF {  // i = h M + m: gs (pairs, H, M) and gdt's share at (h, m)
  DplrDims d;
  const double *w, *dt, *V, *gK;
  double *gs, *gdt;  // (pairs, H, M, 2), (H, M)
  DL_HD void operator()(int64_t i) const {
    const int64_t h = i / d.M, m = i % d.M, Cc = d.Cc, HM = d.H * d.M;
    zd s[kDplrMaxPairs], g[kDplrMaxPairs];
    dplr_sums(d, w, dt[h], V, h, m, s);
    const zd al = 1.0 + d.node(m), qb = s[2 * Cc], qp = s[2 * Cc + 1], Dn = 1.0 + al * qp;
    g[2 * Cc] = g[2 * Cc + 1] = 0;
    for (int64_t c = 0; c < Cc; c++) {
      const zd gk = at(gK, c * HM + i);
      g[c] = 2.0 * gk;
      g[Cc + c] = gk * thrust::conj(-2.0 * al * qb / Dn);
      g[2 * Cc] += gk * thrust::conj(-2.0 * al * s[Cc + c] / Dn);
      g[2 * Cc + 1] += gk * thrust::conj(2.0 * al * al * s[Cc + c] * qb / (Dn * Dn));
    }
    double acc = 0;
    for (int64_t k = 0; k < d.pairs(); k++) {
      acc += (thrust::conj(g[k]) * s[k]).real();
      put(gs, k * HM + i, g[k]);
    }
    gdt[i] = acc / dt[h];
  }
};

struct DplrGradModesF {  // i = h N2 + n: gV (pairs, H, N2) and gw (H, N2)
  DplrDims d;
  const double *w, *dt, *V, *gs;
  double *gV, *gw;
  DL_HD void operator()(int64_t i) const {
    const int64_t h = i / d.N2, HM = d.H * d.M;
    const double dth = dt[h];
    const zd wn = at(w, i);
    zd v[kDplrMaxPairs], gv[kDplrMaxPairs], gwn = 0;
    for (int64_t k = 0; k < d.pairs(); k++) v[k] = at(V, k * d.H * d.N2 + i), gv[k] = 0;
    for (int64_t m = 0; m < d.M; m++) {
      const zd om = d.node(m), al = 1.0 + om, be = 2.0 * (1.0 - om);
      const zd inv = 1.0 / (be - al * wn), invp = 1.0 / (be - al * thrust::conj(wn));
      for (int64_t k = 0; k < d.pairs(); k++) {
        const zd g = at(gs, k * HM + h * d.M + m);
        gv[k] += dth * (thrust::conj(g) * invp + g * thrust::conj(inv));
        gwn += dth * (thrust::conj(g) * thrust::conj(v[k]) * al * invp * invp + g * thrust::conj(v[k] * al * inv * inv));
      }
    }
    for (int64_t k = 0; k < d.pairs(); k++) put(gV, k * d.H * d.N2 + i, gv[k]);
    put(gw, i, gwn);
  }
};

struct DplrGradDtF {  // gdt_h = sum_m gdt_(h, m)
  int64_t M;
  const double* part;
  double* gdt;
  DL_HD void operator()(int64_t h) const {
    double acc = 0;
    for (int64_t m = 0; m < M; m++) acc += part[h * M + m];
    gdt[h] = acc;
  }
};

// w (H, N2, 2), dt (H), V (pairs, H, N2, 2), Khat (Cc, H, M, 2): contiguous f64 views of the platform, checked by the caller.
inline DplrDims dplr_dims(const Tensor& w, const Tensor& V, int64_t Lk) {
  return DplrDims{(V.size(0) - 2) / 2, w.size(0), w.size(1), Lk / 2 + 1, Lk};
}

template <class Exec>
void dplr_spectrum(const Exec& exec, const Tensor& w, const Tensor& dt, const Tensor& V, int64_t Lk, const Tensor& Khat) {
  DplrDims d = dplr_dims(w, V, Lk);
  for_n(exec, d.H * d.M, DplrSpectrumF{d, dptr<double>(w), dptr<double>(dt), dptr<double>(V), dptr<double>(Khat)});
}

template <class Exec>
void dplr_spectrum_backward(const Exec& exec, const Tensor& w, const Tensor& dt, const Tensor& V, int64_t Lk,
                            const Tensor& gKhat, const Tensor& gV, const Tensor& gw, const Tensor& gdt) {
  DplrDims d = dplr_dims(w, V, Lk);
  Tensor gs = Tensor::empty({d.pairs(), d.H, d.M, 2}, DType::f64, w.device());  // scratch of the platform
  Tensor part = Tensor::empty({d.H, d.M}, DType::f64, w.device());
  for_n(exec, d.H * d.M,
        DplrGradSumsF{d, dptr<double>(w), dptr<double>(dt), dptr<double>(V), dptr<double>(gKhat), dptr<double>(gs),
                      dptr<double>(part)});
  for_n(exec, d.H * d.N2,
        DplrGradModesF{d, dptr<double>(w), dptr<double>(dt), dptr<double>(V), dptr<double>(gs), dptr<double>(gV),
                       dptr<double>(gw)});
  for_n(exec, d.H, DplrGradDtF{d.M, dptr<double>(part), dptr<double>(gdt)});
}

}  // namespace dl::ops
