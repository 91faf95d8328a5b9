// nn/ssm/ssm_layer.h - the layer shell that S4, S4D, its minimal twin and DLR share; only their kernels differ.
// Shape letters: B batch, L length, H channels, Cc kernel channels (1, or 2 for a bidirectional layer).
//
//   K = kernel(L)                                (Cc, H, L): each layer's own kernel (Cauchy, Vandermonde, ...)
//   y = K * u + D u,  u = x with padding zeroed  (B, L, H): FFT convolution, nn/ssm/ssm_ops.h ssm_conv
//   y = dropout(gelu(y))
//   out = GLU(output_linear(y))  (H -> 2H -> H)  S4, S4D (as state-spaces/s4's S4 layer)
//      or output_linear(y)       (H -> H)        DLR (as ag1988/dlr)
// Bidirectional: the kernel has Cc = 2 and the second channel runs on the reversed sequence; otherwise the layer
// is causal. The shell answers what backbones ask (nn/sequence_layer.h): it is causal unless bidirectional, it
// ends in its own projection (no feed-forward sub-block), its kernel's A, B, dt train with their own learning rate
// and no weight decay, and its kernel can be plotted.
// Parameter names: kernel.* (the kernel's), D, output_linear.{weight,bias}; module dropout.
// The draws from the Generator keep the order kernel, D, output_linear, so a seed gives the same layer as before.
#pragma once
#include <complex>

#include "nn/layers.h"
#include "nn/sequence_layer.h"

namespace dl::nn {

// The config fields every SSM layer takes (the kernel adds its own).
struct SSMLayerOptions {
  int64_t d_state = 64;  // N
  double dt_min = 1e-3, dt_max = 1e-1;
  bool bidirectional = false;
  double dropout = 0.0;
};
// Reads "d_state", "dt_min", "dt_max", "bidirectional", "dropout" (those in `keys`) with the layer's name in every
// error. conjugate_pairs: N must be even (N/2 modes stored, their conjugates implied).
SSMLayerOptions read_ssm_options(const LayerConfig& cfg, const std::string& layer, const std::vector<std::string>& keys,
                                 bool conjugate_pairs, int64_t max_state = 4096);

// A layer's options: its kernel's, and the shell's direction and dropout (S4Options, S4DOptions).
template <class KernelOptions> struct SSMOptions {
  KernelOptions kernel;
  bool bidirectional = false;
  double dropout = 0.0;
};

class SSMLayer : public SequenceLayer {
 public:
  Var forward(const Var& x, const Tensor& mask) override;  // (B, L, H) -> (B, L, H)
  Var ssm(const Var& u);                                   // y = K * u + D u, (B, L, H); no output projection
  virtual Var kernel_forward(int64_t L) = 0;               // K (Cc, H, L)

  bool is_causal() const override { return !bidirectional; }
  bool wants_feed_forward() const override { return false; }
  std::vector<std::string> own_lr_parameters() const override;  // "kernel." + kernel_ssm_parameters()
  Tensor learned_kernel(int64_t L) override;                    // float32 (Cc, H, L), outside the graph
  // nn/module.h's hook: learned_kernel(L) and the step sizes: exp(kernel.log_dt) per channel (S4, S4D and its
  // minimal twin), or 2 x^2 per mode from DLR's kernel.Lambda_log_neg_re (its init writes Re Lambda = -x^2 = -dt/2);
  // none for a kernel without a discretisation step (the EMA)
  SSMKernel ssm_kernel(int64_t L) override;

  // Streaming (nn/sequence_layer.h) by the kernel's own recurrence, where it has a diagonal one: per channel h and
  // mode n, x_k = dA x_{k-1} + dB u_k and y_k = scale Re(sum_n C x_k) + D u_k, then the same GELU and output
  // projection as forward(). The state is x (B, H, N), complex, float64 on the host: O(H N) per position, whatever
  // the position; dA, dB, C are computed once per stream (StreamState::host). A layer without one (S4 streams by
  // its own DPLR step) overrides start_stream / step itself.
  struct DiagonalRecurrence {
    int64_t N = 0;                                  // modes per channel
    std::vector<std::complex<double>> dA, dB, C;  // (H, N) each
    double scale = 1;
  };
  virtual bool has_diagonal_recurrence() const { return false; }
  virtual DiagonalRecurrence diagonal_recurrence() const { return {}; }  // asked only where has_diagonal_recurrence()
  StreamState start_stream(int64_t batch) const override;
  Var step(const Var& x, StreamState& s) override;
  bool streams_in_constant_memory() const override;
  // ONNX export in the convolution form for the export length L (docs/onnx.md): K = kernel(L) computed now, then a
  // depthwise Conv (group = H) with the flipped kernel and causal padding (L - 1, 0), or the two-sided kernel
  // [flip(K0), K1] and padding (L - 1, L) when bidirectional, plus the D skip, GELU, output_linear and the GLU.
  std::string export_onnx(onnx::Graph& g, const onnx::Sequence& in, const std::string& prefix) override;
  // The FFT convolution and the output projection per batch, plus the kernel's own count (once per forward).
  double forward_flops(int64_t batch, int64_t L) const override;  // nn/sequence_layer.h's convention
  // FLOPs of kernel_forward(L), which each layer counts for its own kernel (Vandermonde, Cauchy, powers, ...).
  virtual double kernel_flops(int64_t L) const = 0;

  Var D;
  std::shared_ptr<Dropout> drop;
  std::shared_ptr<Linear> output_linear;
  int64_t H;
  bool bidirectional;

 protected:
  SSMLayer(std::string name, int64_t d_model, bool bidirectional);
  // The layer's constructor calls this after registering its kernel: D ~ N(0, 1), dropout, output_linear.
  void add_output(double dropout, bool glu, Generator& g);
  // Names inside the kernel module of the "SSM group" (A, B, dt): own lr, no weight decay.
  virtual std::vector<std::string> kernel_ssm_parameters() const = 0;

 private:
  std::string name_;
  bool glu_ = true;

 protected:
  // The rest of a step after the state space part: y (B, H) float64 on the host (K * u + D u at this position) ->
  // GELU, dropout, output projection as forward(), on x's dtype and device -> (B, H).
  Var finish_step(const Tensor& y, const Var& x);
  // check_step_input and check_stream_state (nn/sequence_layer.h) with this layer's name
  void check_step(const Var& x, const StreamState& s, size_t state_tensors) const;
};

}  // namespace dl::nn
