// tensor/vandermonde.cpp - the Vandermonde product of diagonal state-space kernels (see vandermonde.h): the CPU's
// chunked recurrence, and the tensor-level entry points that send a device's tensors to its backend.
#include "tensor/vandermonde.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tensor/backend.h"

namespace dl {

// The CPU's: each channel walks l = 0 .. L-1 keeping only the current powers v[n] = exp(E[h, n] l),
// as separate re/im arrays so every loop over n vectorises: advance() multiplies by exp(E) (v_{l+1} = v_l exp(E)),
// anchor() restarts from exp(E l) computed directly every `chunk` steps (rounding grows with chunk, not with L).
namespace {
struct Powers {
  const cplx* E;  // (N) modes of one channel
  int64_t N;
  std::vector<double> vr, vi, sr, si;  // v and the step exp(E)
  Powers(const cplx* E_, int64_t N_) : E(E_), N(N_), vr(N_), vi(N_), sr(N_), si(N_) {
    for (int64_t n = 0; n < N; n++) {
      const cplx s = std::exp(E[n]);
      sr[n] = s.real(), si[n] = s.imag();
    }
  }
  void anchor(int64_t l) {
    for (int64_t n = 0; n < N; n++) {
      const cplx v = std::exp(E[n] * (double)l);
      vr[n] = v.real(), vi[n] = v.imag();
    }
  }
  void advance() {  // written out: std::complex's operator* checks for NaN/inf and does not vectorise
#pragma omp simd
    for (int64_t n = 0; n < N; n++) {
      const double a = vr[n], b = vi[n];
      vr[n] = a * sr[n] - b * si[n];
      vi[n] = a * si[n] + b * sr[n];
    }
  }
};
}  // namespace

void vandermonde_forward(const cplx* Ct, const cplx* E, int64_t Cc, int64_t H, int64_t N, int64_t L, double scale, int64_t chunk,
                         double* K) {
  chunk = std::max<int64_t>(1, std::min(chunk, L));
#pragma omp parallel if (Cc * H * N * L > 16384)
  {
    std::vector<double> cr(Cc * N), ci(Cc * N);  // Ct of one channel, re and im
#pragma omp for schedule(static)
    for (int64_t h = 0; h < H; h++) {
      Powers p(E + h * N, N);
      for (int64_t c = 0; c < Cc; c++)
        for (int64_t n = 0; n < N; n++)
          cr[c * N + n] = Ct[(c * H + h) * N + n].real(), ci[c * N + n] = Ct[(c * H + h) * N + n].imag();
      for (int64_t l = 0; l < L; l++) {
        if (l % chunk == 0) p.anchor(l);
        for (int64_t c = 0; c < Cc; c++) {  // K = scale Re(Ct . v)
          const double *a = cr.data() + c * N, *b = ci.data() + c * N;
          double acc = 0;
#pragma omp simd reduction(+ : acc)
          for (int64_t n = 0; n < N; n++) acc += a[n] * p.vr[n] - b[n] * p.vi[n];
          K[(c * H + h) * L + l] = scale * acc;
        }
        p.advance();
      }
    }
  }
}

void vandermonde_backward(const cplx* Ct, const cplx* E, const double* dK, int64_t Cc, int64_t H, int64_t N, int64_t L,
                          double scale, int64_t chunk, cplx* g_Ct, cplx* g_E) {
  chunk = std::max<int64_t>(1, std::min(chunk, L));
#pragma omp parallel if (Cc * H * N * L > 16384)
  {
    // P = sum_l dK conj(v), Q = sum_l dK l conj(v), (Cc, N) each, re and im apart
    std::vector<double> Pr(Cc * N), Pi(Cc * N), Qr(Cc * N), Qi(Cc * N);
#pragma omp for schedule(static)
    for (int64_t h = 0; h < H; h++) {
      Powers p(E + h * N, N);
      std::fill(Pr.begin(), Pr.end(), 0.0), std::fill(Pi.begin(), Pi.end(), 0.0);
      std::fill(Qr.begin(), Qr.end(), 0.0), std::fill(Qi.begin(), Qi.end(), 0.0);
      for (int64_t l = 0; l < L; l++) {
        if (l % chunk == 0) p.anchor(l);
        for (int64_t c = 0; c < Cc; c++) {
          const double g = dK[(c * H + h) * L + l], gl = g * (double)l;
          double *pr = Pr.data() + c * N, *pi = Pi.data() + c * N, *qr = Qr.data() + c * N, *qi = Qi.data() + c * N;
#pragma omp simd
          for (int64_t n = 0; n < N; n++) {
            pr[n] += g * p.vr[n], pi[n] -= g * p.vi[n];
            qr[n] += gl * p.vr[n], qi[n] -= gl * p.vi[n];
          }
        }
        p.advance();
      }
      for (int64_t n = 0; n < N; n++) {
        cplx ge = 0;
        for (int64_t c = 0; c < Cc; c++) {
          const int64_t i = c * N + n;
          if (g_Ct) g_Ct[(c * H + h) * N + n] = scale * cplx(Pr[i], Pi[i]);
          ge += scale * std::conj(Ct[(c * H + h) * N + n]) * cplx(Qr[i], Qi[i]);
        }
        if (g_E) g_E[h * N + n] = ge;
      }
    }
  }
}

void vandermonde_powers(const cplx* Ct, const cplx* Abar, int64_t Cc, int64_t H, int64_t N, int64_t L, double scale, double* K) {
  for (int64_t c = 0; c < Cc; c++)
    for (int64_t h = 0; h < H; h++) {
      std::vector<cplx> x(Ct + (c * H + h) * N, Ct + (c * H + h) * N + N);  // C Bbar Abar^l, advanced each l
      for (int64_t l = 0; l < L; l++) {
        double acc = 0;
        for (int64_t n = 0; n < N; n++) acc += x[n].real(), x[n] *= Abar[h * N + n];
        K[(c * H + h) * L + l] = scale * acc;
      }
    }
}

std::vector<cplx> to_cplx(const Tensor& t) {
  if (t.dim() < 1 || t.size(-1) != 2) fail("to_cplx: expected a trailing dim of size 2, found " + shape_str(t.shape()));
  Tensor d = t.to(Device::cpu).to(DType::f64).contiguous();
  const double* p = d.data<double>();
  std::vector<cplx> v(d.numel() / 2);
  for (size_t i = 0; i < v.size(); i++) v[i] = cplx(p[2 * i], p[2 * i + 1]);
  return v;
}

std::vector<double> to_doubles(const Tensor& t) {
  Tensor d = t.to(Device::cpu).to(DType::f64).contiguous();
  return std::vector<double>(d.data<double>(), d.data<double>() + d.numel());
}

Tensor from_cplx(const std::vector<cplx>& v, Shape shape, DType dtype) {
  Tensor t = Tensor::empty(shape, DType::f64);
  if (t.numel() != (int64_t)v.size() * 2) fail("from_cplx: " + std::to_string(v.size()) + " values for " + shape_str(shape));
  double* p = t.data<double>();
  for (size_t i = 0; i < v.size(); i++) p[2 * i] = v[i].real(), p[2 * i + 1] = v[i].imag();
  return t.to(dtype);
}

// ---- on tensors of either device ----
namespace {

void check_modes(const Tensor& Ct, const Tensor& E, const char* op) {
  if (Ct.dim() != 4 || Ct.size(3) != 2 || E.dim() != 3 || E.size(2) != 2 || E.size(0) != Ct.size(1) || E.size(1) != Ct.size(2))
    fail(std::string(op) + ": expected Ct (Cc, H, N, 2) and E (H, N, 2), got " + shape_str(Ct.shape()) + " and " +
         shape_str(E.shape()));
  if (Ct.device() != E.device())
    fail(std::string(op) + ": Ct is on " + device_name(Ct.device()) + ", E on " + device_name(E.device()));
}
}  // namespace

Tensor vandermonde(const Tensor& Ct, const Tensor& E, int64_t L, double scale, int64_t chunk) {
  check_modes(Ct, E, "vandermonde");
  const int64_t Cc = Ct.size(0), H = Ct.size(1), N = Ct.size(2);
  if (L < 1) fail("vandermonde: L must be >= 1, got " + std::to_string(L));
  if (Ct.device() != Device::cpu) {
    Tensor K = Tensor::empty({Cc, H, L}, DType::f64, Ct.device());
    require_backend(Ct.device(), "vandermonde")
        .vandermonde(Ct.to(DType::f64).contiguous(), E.to(DType::f64).contiguous(), scale, K);
    return K;
  }
  std::vector<cplx> ct = to_cplx(Ct), e = to_cplx(E);
  std::vector<double> K(Cc * H * L);
  vandermonde_forward(ct.data(), e.data(), Cc, H, N, L, scale, chunk, K.data());
  return from_vector(K, {Cc, H, L}).to(DType::f64);
}

VandermondeGrads vandermonde_backward(const Tensor& Ct, const Tensor& E, const Tensor& dK, double scale, int64_t chunk) {
  check_modes(Ct, E, "vandermonde backward");
  const int64_t Cc = Ct.size(0), H = Ct.size(1), N = Ct.size(2);
  if (dK.dim() != 3 || dK.size(0) != Cc || dK.size(1) != H)
    fail("vandermonde backward: dK " + shape_str(dK.shape()) + " must be (Cc, H, L) = (" + std::to_string(Cc) + ", " +
         std::to_string(H) + ", L)");
  const int64_t L = dK.size(2);
  VandermondeGrads g;
  if (dK.device() != Device::cpu) {
    const Device d = dK.device();
    g.Ct = Tensor::empty(Ct.shape(), DType::f64, d), g.E = Tensor::empty(E.shape(), DType::f64, d);
    require_backend(d, "vandermonde backward")
        .vandermonde_backward(Ct.to(d).to(DType::f64).contiguous(), E.to(d).to(DType::f64).contiguous(),
                              dK.to(DType::f64).contiguous(), scale, g.Ct, g.E);
    return g;
  }
  std::vector<cplx> ct = to_cplx(Ct), e = to_cplx(E), gct(Cc * H * N), ge(H * N);
  Tensor dk = dK.to(DType::f64).contiguous();
  vandermonde_backward(ct.data(), e.data(), dk.data<double>(), Cc, H, N, L, scale, chunk, gct.data(), ge.data());
  g.Ct = from_cplx(gct, Ct.shape(), DType::f64), g.E = from_cplx(ge, E.shape(), DType::f64);
  return g;
}

}  // namespace dl
