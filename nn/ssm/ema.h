// nn/ssm/ema.h - MEGA's multi-dimensional damped exponential moving average as a sequence layer (Ma, Zhou, Kong,
// He, Gui, Neubig, May, Zettlemoyer 2023, "Mega: Moving Average Equipped Gated Attention", section 2; the kernel
// as fairseq's MultiHeadEMA computes it). The layer the walkthrough in docs/adding_a_layer.md adds: one file, one
// registry line, one test (tests/nn/ssm/test_ema.cpp), and every app can use it.
// Shape letters: B batch, L length, H channels (d_model), N the EMA dimensions per channel, Cc kernel channels.
//
// Each channel h expands to N dimensions, averages each with its own decay, and projects back:
//   u_t[n]  = beta[h, n] x_t                                      expand        beta ~ N(0, 0.02) + (1, -1, 1, ...)
//   s_t[n]  = p[h, n] u_t[n] + q[h, n] s_{t-1}[n]                 damped EMA    p = sigmoid(delta) (the paper's alpha),
//                                                                               q = 1 - p sigmoid(alpha)
//   y_t     = sum_n gamma[h, n] s_t[n] / sqrt(N) + D[h] x_t        project       gamma, D ~ N(0, 1)  (D: MEGA's omega)
// Unrolled, y = K * x + D x with the kernel
//   K[c, h, l] = sum_n gamma[c, h, n] / sqrt(N) * p[h, n] beta[h, n] q[h, n]^l          [EMAKernel::forward]
// an SSM with a real diagonal state matrix, so it runs in the state-space shell (nn/ssm/ssm_layer.h): the FFT
// convolution, GELU, dropout and the GLU output projection. The kernel is composed from autograd primitives (it
// materialises (Cc, H, N, L), fine for N of 2-16 as MEGA uses); a bidirectional layer has Cc = 2, the second
// kernel running on the reversed sequence, as MEGA's bidirectional EMA.
// Deviation: MEGA feeds silu(EMA(x) + omega x) into its gated attention; here the EMA is a mixer on its own, in the
// S4 mould. Parameter names as fairseq: kernel.delta, kernel.alpha, kernel.beta, kernel.gamma; D; output_linear.
// Streaming (nn/sequence_layer.h): the EMA recurrence above, one position at a time, through the shell's step.
// What it is not: MEGA's gated attention or its chunking.
#pragma once
#include <cmath>

#include "nn/ssm/ssm_layer.h"
#include "nn/ssm/ssm_ops.h"

namespace dl::nn {

class EMAKernel : public Module {
 public:
  EMAKernel(int64_t H, int64_t N, int64_t channels, Generator& g) : N(N) {
    Tensor sign = Tensor::empty({1, N});  // beta's mean: (1, -1, 1, -1, ...), "seems more stable" (fairseq)
    for (int64_t n = 0; n < N; n++) sign.data<float>()[n] = n % 2 ? -1.f : 1.f;
    delta = register_parameter("delta", mul_scalar(randn({H, N}, g), 0.2));
    alpha = register_parameter("alpha", mul_scalar(randn({H, N}, g), 0.2));
    beta = register_parameter("beta", add(mul_scalar(randn({H, N}, g), 0.02), sign));
    gamma = register_parameter("gamma", randn({channels, H, N}, g));
  }
  std::string type_name() const override { return "EMAKernel"; }
  Var forward(int64_t L) const {                                                 // K (Cc, H, L)
    Var p = sigmoid(delta);                                                      // (H, N)
    Var log_q = log(1.0 - p * sigmoid(alpha));                                   // (H, N), q in (0, 1)
    Var l(arange(0.0, (double)L, 1.0, delta.dtype()).reshape({1, 1, L}));        // (1, 1, L)
    Var powers = exp(unsqueeze(log_q, 2) * l);                                   // (H, N, L): q^l
    Var weight = gamma * unsqueeze(p * beta, 0) * (1.0 / std::sqrt((double)N));  // (Cc, H, N)
    return sum(unsqueeze(weight, 3) * unsqueeze(powers, 0), {2});                // (Cc, H, L)
  }
  Var delta, alpha, beta, gamma;
  int64_t N;
};

class EMA : public SSMLayer {
 public:
  EMA(int64_t d_model, int64_t N, bool bidirectional, double dropout, Generator& g) : SSMLayer("ema", d_model, bidirectional) {
    kernel = register_module("kernel", std::make_shared<EMAKernel>(H, N, bidirectional ? 2 : 1, g));
    add_output(dropout, /*glu=*/true, g);
  }
  // registry "ema": d_state [16] (N, 1..256), bidirectional [false], dropout [0]
  static std::vector<std::string> config_keys() { return {"d_state", "bidirectional", "dropout"}; }
  static std::shared_ptr<EMA> from_config(int64_t d_model, const LayerConfig& cfg, Generator& g) {
    check_config_keys(cfg, "ema", config_keys());
    LayerConfig c = cfg.is_object() ? cfg : LayerConfig::object();
    if (!c.contains("d_state")) c["d_state"] = 16;  // MEGA uses N = 2 to 16; the shell's default (64) is an SSM's
    SSMLayerOptions o = read_ssm_options(c, "ema", config_keys(), /*conjugate_pairs=*/false, /*max_state=*/256);
    return std::make_shared<EMA>(d_model, o.d_state, o.bidirectional, o.dropout, g);
  }
  std::string type_name() const override { return "EMA"; }
  Var kernel_forward(int64_t L) override { return kernel->forward(L); }
  double kernel_flops(int64_t L) const override;
  // Streaming: the damped EMA itself, s_t = q s_{t-1} + (p beta) x_t, y_t = sum_n gamma s_t / sqrt(N) (+ D x_t).
  bool has_diagonal_recurrence() const override { return true; }
  DiagonalRecurrence diagonal_recurrence() const override {
    const int64_t N = kernel->N;
    const std::vector<double> delta = to_doubles(kernel->delta.data()), alpha = to_doubles(kernel->alpha.data()),
                              beta = to_doubles(kernel->beta.data()), gamma = to_doubles(kernel->gamma.data());
    DiagonalRecurrence r{N, std::vector<cplx>(H * N), std::vector<cplx>(H * N), std::vector<cplx>(H * N), 1.0};
    auto sig = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
    for (int64_t i = 0; i < H * N; i++) {
      const double p = sig(delta[i]);
      r.dA[i] = 1.0 - p * sig(alpha[i]), r.dB[i] = p * beta[i], r.C[i] = gamma[i] / std::sqrt((double)N);
    }
    return r;
  }

  std::shared_ptr<EMAKernel> kernel;

 protected:
  std::vector<std::string> kernel_ssm_parameters() const override { return {}; }  // MEGA trains them at the base lr
};

}  // namespace dl::nn
