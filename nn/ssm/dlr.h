// nn/ssm/dlr.h - DLR, the diagonal linear RNN (Gupta, Mehta, Berant 2022, "Simplifying and Understanding State
// Space Models with Diagonal Linear RNNs"). Shape letters: B batch, H channels, N state (complex, no
// conjugate pairing), L length.
//
// The recurrence is the SSM with the discretisation removed:  x_k = lambda x_{k-1} + u_k,  y_k = Re(W x_k) + D u_k,
// so the kernel is K[h, l] = Re sum_n W[h, n] lambda_n^l (nn/ssm/ssm_ops.h dlr_kernel: the same chunked Vandermonde
// product as S4D) and y = K * u + D u by the same FFT convolution. lambda is shared by all channels:
//   lambda_n = exp(Lambda_n),  Lambda_n = -x_n^2 + i y_n  (so |lambda_n| = exp(-x_n^2) < 1 whatever x is).
// "omega" init (ag1988/dlr, DLRKernel.init): Lambda_n = -dt_n/2 + 2 pi i n/N with dt_n log-uniform in [dt_min,
// dt_max]: the N-th roots of unity pulled slightly inside the unit circle; so x_n = sqrt(dt_n/2), y_n = 2 pi n/N.
// W ~ N(0, 1) * W_scale per real part; the official code exposes W_scale without a default we could read, we
// use 1/sqrt(N) so K[0] has unit scale. D ~ N(0, 1). After the convolution: GELU, dropout and output_linear
// (H -> H, no GLU), as the official DLR layer: the shell every SSM layer shares (nn/ssm/ssm_layer.h).
// Parameter names as the official DLRKernel: kernel.Lambda_log_neg_re (x), kernel.Lambda_im (y), kernel.W; D;
// output_linear. Bidirectional: W has 2 kernel channels, the second runs on the reversed sequence.
// State size up to 1024 (cost is O(H N L) for the kernel, independent of N for the convolution).
#pragma once
#include "nn/ssm/ssm_layer.h"
#include "nn/ssm/ssm_ops.h"

namespace dl::nn {

struct DLROptions {
  int64_t d_state = 64;
  double dt_min = 1e-3, dt_max = 1e-1;
  bool bidirectional = false;
  double dropout = 0.0;
  int64_t chunk = 256;
};

class DLRKernel : public Module {
 public:
  DLRKernel(int64_t H, int64_t N, int64_t channels, double dt_min, double dt_max, Generator& g);
  std::string type_name() const override { return "DLRKernel"; }
  Var forward(int64_t L, int64_t chunk = 256) const;  // (channels, H, L)
  Var Lambda_log_neg_re, Lambda_im, W;
};

class DLR : public SSMLayer {
 public:
  DLR(int64_t d_model, const DLROptions& opt, Generator& g);
  // registry "dlr": d_state [64] (1..4096), dt_min [1e-3], dt_max [1e-1], bidirectional [false], dropout [0],
  // chunk [256]
  static std::shared_ptr<DLR> from_config(int64_t d_model, const LayerConfig& cfg, Generator& g);
  static std::vector<std::string> config_keys() { return {"d_state", "dt_min", "dt_max", "bidirectional", "dropout", "chunk"}; }
  std::string type_name() const override { return "DLR"; }
  Var kernel_forward(int64_t L) override { return kernel->forward(L, opt.chunk); }
  double kernel_flops(int64_t L) const override;
  Tensor ssm_recurrent(const Tensor& u) const;  // the recurrence, float64
  // Streaming: the recurrence above (dA = lambda for every channel, dB = 1, C = W, scale 1).
  bool has_diagonal_recurrence() const override { return true; }
  DiagonalRecurrence diagonal_recurrence() const override;

  std::shared_ptr<DLRKernel> kernel;
  DLROptions opt;

 protected:
  std::vector<std::string> kernel_ssm_parameters() const override { return {"Lambda_log_neg_re", "Lambda_im"}; }
};

}  // namespace dl::nn
