// nn/ssm/s4d_minimal.h - a minimal S4D for teaching, after state-spaces/s4's models/s4/s4d.py (Gu et al. 2022,
// "On the Parameterization and Initialization of Diagonal State Space Models"). The full layer is nn/ssm/s4d.h.
// Shape letters: B batch, H channels, N state (N2 = N/2 stored modes), L length.
//
// The whole model in five lines of math (each line is one block of MinimalS4DKernel::forward / S4DMinimal::forward):
//   A_n = -exp(log_A_real_n) + i A_imag_n        S4D-Lin init: A_n = -1/2 + i pi n
//   dt  = exp(log_dt)                            log_dt ~ U[log 1e-3, log 1e-1]
//   ZOH: Abar = exp(dt A), Bbar = (exp(dt A) - 1)/A   (B = 1, folded into C)
//   K[h, l] = 2 Re sum_n C_n Bbar_n Abar_n^l     (a Vandermonde product; the 2 Re adds the conjugate modes)
//   y = K * u + D u (FFT convolution, nn/ssm/ssm_ops.h), then GELU and output_linear + GLU  (nn/ssm/ssm_layer.h)
// Unlike every other kernel in the zoo, this one is COMPOSED from real autograd primitives (exp, cos, sin,
// mul, sum): complex numbers are written out as (re, im) pairs. It materialises (H, N2, L) tensors, so it is
// for reading and for small L; nn/ssm/s4d.h's fused kernel is the one to train with, and tests/nn/ssm checks that the
// two agree. Parameter names as s4d.py: kernel.log_dt, kernel.log_A_real, kernel.A_imag, kernel.C, D,
// output_linear (a Linear here, where s4d.py has a 1x1 Conv1d: weight (2H, H) instead of (2H, H, 1)).
#pragma once
#include "nn/ssm/ssm_layer.h"

namespace dl::nn {

class MinimalS4DKernel : public Module {
 public:
  MinimalS4DKernel(int64_t H, int64_t N, Generator& g, double dt_min = 1e-3, double dt_max = 1e-1);
  std::string type_name() const override { return "MinimalS4DKernel"; }
  Var forward(int64_t L) const;  // K (H, L)
  Var log_dt, log_A_real, A_imag, C;
};

// The layer: the shared SSM shell (nn/ssm/ssm_layer.h) around the composed kernel; always causal.
class S4DMinimal : public SSMLayer {
 public:
  S4DMinimal(int64_t d_model, int64_t d_state, Generator& g, double dropout = 0.0);
  // registry "s4d_minimal": d_state [64], dropout [0]
  static std::shared_ptr<S4DMinimal> from_config(int64_t d_model, const LayerConfig& cfg, Generator& g);
  static std::vector<std::string> config_keys() { return {"d_state", "dropout"}; }
  std::string type_name() const override { return "S4DMinimal"; }
  Var kernel_forward(int64_t L) override { return unsqueeze(kernel->forward(L), 0); }  // (1, H, L)
  double kernel_flops(int64_t L) const override;
  // Streaming: the recurrence the kernel unrolls, x_k = Abar x_{k-1} + Bbar u_k, y_k = 2 Re(C x_k) (+ D u_k).
  bool has_diagonal_recurrence() const override { return true; }
  DiagonalRecurrence diagonal_recurrence() const override;

  std::shared_ptr<MinimalS4DKernel> kernel;

 protected:
  std::vector<std::string> kernel_ssm_parameters() const override { return {"log_dt", "log_A_real", "A_imag"}; }
};

}  // namespace dl::nn
