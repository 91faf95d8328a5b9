// cuda/backend_ssm.cuh - the state-space kernels of CudaBackend<P> (cuda/backend.h), in float64, so a layer on the device
// builds its kernel there instead of on the host every step: the diagonal kernels' Vandermonde product (S4D's and
// DLR's K[c, h, l] = scale Re sum_n Ct exp(E l), cuda/ops/ssm.cuh) and the DPLR kernel's spectrum (S4's Cauchy sums and
// Woodbury correction, cuda/ops/dplr.cuh), each with its backward.
#pragma once
#include "cuda/backend.h"
#include "cuda/checks.h"
#include "cuda/ops/dplr.cuh"
#include "cuda/ops/ssm.cuh"

namespace dl::cuda {

// Ct (Cc, H, N, 2), E (H, N, 2), and a (Cc, H, L) tensor (K or dK): contiguous f64 on this device.
inline void require_vandermonde(const Tensor& Ct, const Tensor& E, const Tensor& K, const char* op, const char* kname) {
  require_cuda(Ct, op, "Ct");
  require_cuda(E, op, "E");
  require_cuda(K, op, kname);
  bool ok = Ct.dtype() == DType::f64 && E.dtype() == DType::f64 && K.dtype() == DType::f64 && Ct.dim() == 4 && Ct.size(3) == 2 &&
            E.dim() == 3 && E.size(2) == 2 && E.size(0) == Ct.size(1) && E.size(1) == Ct.size(2) && K.dim() == 3 &&
            K.size(0) == Ct.size(0) && K.size(1) == Ct.size(1);
  if (!ok)
    fail(std::string(op) + " (cuda): expected f64 Ct (Cc, H, N, 2), E (H, N, 2) and " + kname + " (Cc, H, L), got " +
         shape_str(Ct.shape()) + " " + dtype_name(Ct.dtype()) + ", " + shape_str(E.shape()) + " " + dtype_name(E.dtype()) + ", " +
         shape_str(K.shape()) + " " + dtype_name(K.dtype()));
}

template <class P> void CudaBackend<P>::vandermonde(const Tensor& Ct, const Tensor& E, double scale, const Tensor& K) {
  require_vandermonde(Ct, E, K, "vandermonde", "K");
  ops::vandermonde(p_.par(), p_.view(Ct), p_.view(E), scale, p_.view(K));
}

template <class P>
void CudaBackend<P>::vandermonde_backward(const Tensor& Ct, const Tensor& E, const Tensor& dK, double scale, const Tensor& gCt,
                                          const Tensor& gE) {
  const char* op = "vandermonde backward";
  require_vandermonde(Ct, E, dK, op, "dK");
  if (gCt.defined()) {
    require_cuda(gCt, op, "gCt");
    require_same(Ct, gCt, op, "Ct", "gCt");
  }
  if (gE.defined()) {
    require_cuda(gE, op, "gE");
    require_same(E, gE, op, "E", "gE");
  }
  ops::vandermonde_backward(p_.par(), p_.view(Ct), p_.view(E), p_.view(dK), scale, p_.view(gCt), p_.view(gE));
}

// w (H, N2, 2), dt (H), V (2 Cc + 2, H, N2, 2) with Cc in {1, 2}, and a (Cc, H, M, 2) spectrum: contiguous f64 here.
inline void require_dplr(const Tensor& w, const Tensor& dt, const Tensor& V, int64_t Lk, const Tensor& K, const char* op,
                         const char* kname) {
  for (auto [t, name] : {std::pair<const Tensor*, const char*>{&w, "w"}, {&dt, "dt"}, {&V, "V"}, {&K, kname}}) {
    require_cuda(*t, op, name);
    if (t->dtype() != DType::f64) fail(std::string(op) + " (cuda): " + name + " must be f64, got " + dtype_name(t->dtype()));
  }
  const int64_t H = w.dim() == 3 ? w.size(0) : -1, N2 = w.dim() == 3 ? w.size(1) : -1, pairs = V.dim() == 4 ? V.size(0) : 0;
  const int64_t Cc = (pairs - 2) / 2;
  bool ok = w.dim() == 3 && w.size(2) == 2 && dt.shape() == Shape{H} && (pairs == 4 || pairs == 6) &&
            V.shape() == Shape{pairs, H, N2, 2} && Lk >= 1 && K.shape() == Shape{Cc, H, Lk / 2 + 1, 2};
  if (!ok)
    fail(std::string(op) + " (cuda): expected w (H, N2, 2), dt (H), V (2 Cc + 2, H, N2, 2) with Cc 1 or 2, and " + kname +
         " (Cc, H, Lk/2 + 1, 2) for Lk = " + std::to_string(Lk) + ", got " + shape_str(w.shape()) + ", " +
         shape_str(dt.shape()) + ", " + shape_str(V.shape()) + ", " + shape_str(K.shape()));
}

template <class P>
void CudaBackend<P>::dplr_spectrum(const Tensor& w, const Tensor& dt, const Tensor& V, int64_t Lk, const Tensor& Khat) {
  require_dplr(w, dt, V, Lk, Khat, "dplr_spectrum", "Khat");
  ops::dplr_spectrum(p_.par(), p_.view(w), p_.view(dt), p_.view(V), Lk, p_.view(Khat));
}

template <class P>
void CudaBackend<P>::dplr_spectrum_backward(const Tensor& w, const Tensor& dt, const Tensor& V, int64_t Lk, const Tensor& gKhat,
                                            const Tensor& gV, const Tensor& gw, const Tensor& gdt) {
  const char* op = "dplr_spectrum backward";
  require_dplr(w, dt, V, Lk, gKhat, op, "gKhat");
  require_cuda(gV, op, "gV");
  require_cuda(gw, op, "gw");
  require_cuda(gdt, op, "gdt");
  require_same(V, gV, op, "V", "gV");
  require_same(w, gw, op, "w", "gw");
  require_same(dt, gdt, op, "dt", "gdt");
  ops::dplr_spectrum_backward(p_.par(), p_.view(w), p_.view(dt), p_.view(V), Lk, p_.view(gKhat), p_.view(gV), p_.view(gw),
                              p_.view(gdt));
}

}  // namespace dl::cuda

// The family's methods compiled for platform P, expanded inside namespace dl::cuda (cuda/gpu_ssm.cu, cuda/twin.cpp).
#define DL_CUDA_SSM_FAMILY(P)                                                                                            \
  template void CudaBackend<P>::vandermonde(const Tensor&, const Tensor&, double, const Tensor&);                        \
  template void CudaBackend<P>::vandermonde_backward(const Tensor&, const Tensor&, const Tensor&, double, const Tensor&, \
                                                     const Tensor&);                                             \
  template void CudaBackend<P>::dplr_spectrum(const Tensor&, const Tensor&, const Tensor&, int64_t, const Tensor&);     \
  template void CudaBackend<P>::dplr_spectrum_backward(const Tensor&, const Tensor&, const Tensor&, int64_t, const Tensor&, \
                                                       const Tensor&, const Tensor&, const Tensor&);
