// nn/ssm/ssm_flops.cpp - the FLOP counts of the state space family (nn/sequence_layer.h's convention), side by side:
// the shell's FFT convolution and output projection (SSMLayer::forward_flops), then each layer's kernel. Kept in one
// file so a reader compares the kernels' costs in one place (and s4.cpp stays under 600 lines).
// Shape letters: B batch, H channels, N state (N2 = N/2 conjugate pairs), L length, Cc kernel channels.
//
// Complex arithmetic: a complex multiply-add is 8 real FLOPs (4 products, 4 sums), a complex product 6. Powers
// Abar^l, exponentials, discretisation and the like are O(H N) or elementwise and not counted.
#include <algorithm>

#include "nn/ssm/dlr.h"
#include "nn/ssm/ema.h"
#include "nn/ssm/s4.h"
#include "nn/ssm/s4d.h"
#include "nn/ssm/s4d_minimal.h"

namespace dl::nn {

// y = K * u + D u by FFT of length n = 2L (nn/ssm/ssm_ops.h): per (b, h) a real FFT of u, the product of the spectra
// (L + 1 complex products, the convolution itself) and the inverse real FFT; per h the kernel's real FFT (both
// directions of a bidirectional kernel share one row of length 2L). Then output_linear, H -> 2H (GLU) or H -> H.
// The D skip, GELU and GLU are elementwise.
double SSMLayer::forward_flops(int64_t batch, int64_t L) const {
  const double n = 2.0 * L, rows = (double)batch * L;
  const double conv = batch * H * (2 * rfft_flops(n) + 6.0 * (L + 1)) + H * rfft_flops(n);
  return conv + matmul_flops(rows, H, output_linear->out_features) + kernel_flops(L);
}

// S4D's Vandermonde product K[c, h, l] = 2 Re sum_n Ct[c, h, n] Abar[h, n]^l: a complex multiply-add per (c, h, n, l).
double S4D::kernel_flops(int64_t L) const { return 8.0 * kernel->C.size(0) * kernel->H * kernel->N2 * L; }

// The same sum, composed from primitives (the teaching twin computes the same terms): C (H, N2, 2), one channel.
double S4DMinimal::kernel_flops(int64_t L) const { return 8.0 * kernel->C.size(0) * kernel->C.size(1) * L; }

// DLR: K[c, h, l] = Re sum_n W[c, h, n] exp(Lambda_n l), N modes (no conjugate pairs), W (Cc, H, N, 2).
double DLR::kernel_flops(int64_t L) const {
  const auto& W = kernel->W;
  return 8.0 * W.size(0) * W.size(1) * W.size(2) * L;
}

// EMA: K[c, h, l] = sum_n weight[c, h, n] q[h, n]^l, real: a real multiply-add per (c, h, n, l). gamma (Cc, H, N).
double EMA::kernel_flops(int64_t L) const {
  const auto& g = kernel->gamma;
  return 2.0 * g.size(0) * g.size(1) * g.size(2) * L;
}

// S4 (nn/ssm/s4.h, step 4): at each of the M = Lk/2 + 1 roots of unity, per channel h, the Cauchy sums s_CB and s_CP
// for each of the Cc kernel channels and s_QB, s_QP, each over the N2 modes and their conjugates (2 N2 complex
// multiply-adds against the node's reciprocals), then K = irfft(Khat, Lk) per (c, h). Lk is the kernel length the
// forward would use: the current one, doubled until it reaches L (L itself for a kernel never run).
double S4::kernel_flops(int64_t L) const {
  int64_t Lk = kernel->l_kernel() > 0 ? kernel->l_kernel() : L;
  while (Lk < L) Lk *= 2;
  const double Cc = kernel->C.size(0), H = kernel->H, M = Lk / 2 + 1;
  const double sums = 2 * (Cc + 1);
  return H * M * sums * 2 * kernel->N2 * 8.0 + Cc * H * rfft_flops(Lk);
}

}  // namespace dl::nn
