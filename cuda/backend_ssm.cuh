// cuda/backend_ssm.cuh - the diagonal state-space kernels' Vandermonde product in CudaBackend<P> (cuda/backend.h):
// S4D's and DLR's K[c, h, l] = scale Re sum_n Ct exp(E l) and its backward, in float64 (cuda/ops/ssm.cuh), so a layer
// on the device builds its kernel there instead of on the host every step.
#pragma once
#include "cuda/backend.h"
#include "cuda/checks.h"
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

}  // namespace dl::cuda

// The family's methods compiled for platform P, expanded inside namespace dl::cuda (cuda/gpu_ssm.cu, cuda/twin.cpp).
#define DL_CUDA_SSM_FAMILY(P)                                                                                            \
  template void CudaBackend<P>::vandermonde(const Tensor&, const Tensor&, double, const Tensor&);                        \
  template void CudaBackend<P>::vandermonde_backward(const Tensor&, const Tensor&, const Tensor&, double, const Tensor&, \
                                                     const Tensor&);
