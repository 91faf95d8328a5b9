// tensor/vandermonde.h - the Vandermonde product of diagonal state-space kernels (S4D, DLR: nn/ssm/ssm_ops.h), no
// autograd (the kernels' nodes chain it to their parameters).
//
// Shape letters: Cc kernels (1 causal, 2 bidirectional), H channels, N modes, L lags; complex numbers.
//   K[c, h, l] = scale Re sum_n Ct[c, h, n] exp(E[h, n] l)
//   g_Ct[c, h, n] = scale sum_l dK[c, h, l] conj(V[h, n, l]),  g_E[h, n] = scale sum_c conj(Ct) sum_l dK l conj(V),
//   V = exp(E l).
// On the CPU (the reference): each channel walks l = 0 .. L-1 keeping only the current powers exp(E l), advanced by
// multiplying by exp(E) and restarted from exp(E l0) computed directly every `chunk` steps (rounding grows with chunk,
// not with L); memory O(N) per thread. On a device: the backend's vandermonde (cuda/ops/ssm.cuh), every term's exp(E l)
// computed directly, one thread per output; the two agree to ~1e-12 (tests/cuda_logic on the host twin).
#pragma once
#include <complex>
#include <vector>

#include "tensor/tensor.h"

namespace dl {

using cplx = std::complex<double>;

// Complex numbers stored as a trailing dim of 2 reals (re, im), row-major. to_cplx reads a tensor of either device
// (a device tensor is copied to the host); from_cplx makes a host tensor of `dtype` (shape includes the trailing 2).
std::vector<cplx> to_cplx(const Tensor& t);
// Its real twin: a tensor of either device as host doubles, row-major.
std::vector<double> to_doubles(const Tensor& t);
Tensor from_cplx(const std::vector<cplx>& v, Shape shape, DType dtype);

// The CPU's, on raw arrays: Ct (Cc, H, N), E (H, N), K and dK (Cc, H, L); g_Ct or g_E may be null.
void vandermonde_forward(const cplx* Ct, const cplx* E, int64_t Cc, int64_t H, int64_t N, int64_t L, double scale, int64_t chunk,
                         double* K);
void vandermonde_backward(const cplx* Ct, const cplx* E, const double* dK, int64_t Cc, int64_t H, int64_t N, int64_t L,
                          double scale, int64_t chunk, cplx* g_Ct, cplx* g_E);
// The obvious twin: Abar^l by repeated multiplication, no exp/log. K = scale Re sum_n Ct Abar^l.
void vandermonde_powers(const cplx* Ct, const cplx* Abar, int64_t Cc, int64_t H, int64_t N, int64_t L, double scale, double* K);

// On tensors of either device, float64 with complex numbers as (re, im): Ct (Cc, H, N, 2), E (H, N, 2) -> K (Cc, H, L)
// on their device; the backward's g_Ct (Cc, H, N, 2) and g_E (H, N, 2) on dK's.
Tensor vandermonde(const Tensor& Ct, const Tensor& E, int64_t L, double scale, int64_t chunk = 256);
struct VandermondeGrads {
  Tensor Ct, E;
};
VandermondeGrads vandermonde_backward(const Tensor& Ct, const Tensor& E, const Tensor& dK, double scale, int64_t chunk = 256);

}  // namespace dl
