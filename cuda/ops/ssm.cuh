// cuda/ops/ssm.cuh - the Vandermonde product of diagonal state-space kernels (S4D, DLR: nn/ssm/ssm_ops.h) on the device,
// in float64, as Thrust algorithms over functors.
//
// Shape letters: Cc kernels (1 causal, 2 bidirectional), H channels, N modes, L lags. Complex numbers are (re, im) pairs.
//   forward      K[c, h, l] = scale Re sum_n Ct[c, h, n] exp(E[h, n] l)            one thread per (c, h, l)
//   backward     g_Ct[c, h, n] = scale sum_l dK[c, h, l] conj(V[h, n, l])        one thread per (c, h, n)
//                g_E[h, n] = scale sum_c conj(Ct[c, h, n]) sum_l dK[c, h, l] l conj(V[h, n, l])   one per (h, n)
//   with V[h, n, l] = exp(E[h, n] l) = exp(Re E l) (cos(Im E l) + i sin(Im E l)), computed directly for every term (the
//   CPU advances powers by multiplication and restarts every `chunk` lags; both are the same sums to ~1e-12).
// Each thread walks its N (or L) terms in order, so the result does not depend on the launch.
// What it is not: tuned (each term's exp and sincos is recomputed; a block could share the powers of one (h, n)).
#pragma once
#include "cuda/ops/common.cuh"

namespace dl::ops {

struct VandermondeF {
  const double *Ct, *E;  // (Cc, H, N, 2), (H, N, 2)
  double* K;             // (Cc, H, L)
  int64_t H, N, L;
  double scale;
  DL_HD void operator()(int64_t i) const {
    int64_t l = i % L, ch = i / L, h = ch % H;
    const double *ct = Ct + ch * N * 2, *e = E + h * N * 2;
    double acc = 0, t = (double)l;
    for (int64_t n = 0; n < N; n++) {
      double m = ::exp(e[2 * n] * t), vr = m * ::cos(e[2 * n + 1] * t), vi = m * ::sin(e[2 * n + 1] * t);
      acc += ct[2 * n] * vr - ct[2 * n + 1] * vi;
    }
    K[i] = scale * acc;
  }
};

struct VandermondeGradCtF {
  const double *E, *dK;  // (H, N, 2), (Cc, H, L)
  double* gCt;           // (Cc, H, N, 2)
  int64_t H, N, L;
  double scale;
  DL_HD void operator()(int64_t i) const {
    int64_t n = i % N, ch = i / N, h = ch % H;
    const double *e = E + (h * N + n) * 2, *dk = dK + ch * L;
    double re = 0, im = 0;
    for (int64_t l = 0; l < L; l++) {
      double t = (double)l, m = ::exp(e[0] * t);
      re += dk[l] * m * ::cos(e[1] * t);
      im -= dk[l] * m * ::sin(e[1] * t);  // conj(V)
    }
    gCt[2 * i] = scale * re, gCt[2 * i + 1] = scale * im;
  }
};

struct VandermondeGradEF {
  const double *Ct, *E, *dK;  // (Cc, H, N, 2), (H, N, 2), (Cc, H, L)
  double* gE;                 // (H, N, 2)
  int64_t Cc, H, N, L;
  double scale;
  DL_HD void operator()(int64_t i) const {
    int64_t n = i % N, h = i / N;
    const double* e = E + i * 2;
    double gr = 0, gi = 0;
    for (int64_t c = 0; c < Cc; c++) {
      const double *dk = dK + (c * H + h) * L, *ct = Ct + ((c * H + h) * N + n) * 2;
      double qr = 0, qi = 0;  // sum_l dK l conj(V)
      for (int64_t l = 0; l < L; l++) {
        double t = (double)l, m = ::exp(e[0] * t) * dk[l] * t;
        qr += m * ::cos(e[1] * t), qi -= m * ::sin(e[1] * t);
      }
      gr += ct[0] * qr + ct[1] * qi;  // conj(Ct) q
      gi += ct[0] * qi - ct[1] * qr;
    }
    gE[2 * i] = scale * gr, gE[2 * i + 1] = scale * gi;
  }
};

// Ct (Cc, H, N, 2), E (H, N, 2), K (Cc, H, L): contiguous f64, checked by the caller.
template <class Exec> void vandermonde(const Exec& exec, const Tensor& Ct, const Tensor& E, double scale, const Tensor& K) {
  int64_t H = E.size(0), N = E.size(1), L = K.size(2);
  for_n(exec, K.numel(), VandermondeF{dptr<double>(Ct), dptr<double>(E), dptr<double>(K), H, N, L, scale});
}

// gCt (Cc, H, N, 2) and gE (H, N, 2) each undefined when not asked for.
template <class Exec>
void vandermonde_backward(const Exec& exec, const Tensor& Ct, const Tensor& E, const Tensor& dK, double scale, const Tensor& gCt,
                          const Tensor& gE) {
  int64_t Cc = Ct.size(0), H = E.size(0), N = E.size(1), L = dK.size(2);
  if (gCt.defined())
    for_n(exec, Cc * H * N, VandermondeGradCtF{dptr<double>(E), dptr<double>(dK), dptr<double>(gCt), H, N, L, scale});
  if (gE.defined())
    for_n(exec, H * N,
          VandermondeGradEF{dptr<double>(Ct), dptr<double>(E), dptr<double>(dK), dptr<double>(gE), Cc, H, N, L, scale});
}

}  // namespace dl::ops
