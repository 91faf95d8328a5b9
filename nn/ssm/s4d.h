// nn/ssm/s4d.h - S4D: the diagonal state space layer (Gu, Gupta, Goel, Re 2022, "On the Parameterization and
// Initialization of Diagonal State Space Models"), full version. The minimal teaching twin is nn/ssm/s4d_minimal.h;
// the DPLR original is nn/ssm/s4.h. Shape letters: B batch, H channels (d_model), N state, N2 = N/2, L length.
//
// From the math to the code:
//   1. continuous SSM per channel h:  x'(t) = A x(t) + B u(t),  y(t) = Re(C x(t)) + D u(t),  A diagonal (N2 modes
//      stored once; their conjugates are implied, hence "2 Re" below).   [S4DKernel: parameters]
//      A = -exp(inv_A_real) + i A_imag (the exp keeps Re A < 0: stable), dt = exp(log_dt) per channel,
//      log_dt ~ U[log dt_min, log dt_max] (dt_min 1e-3, dt_max 1e-1).
//   2. discretise with step dt (ZOH or bilinear) -> Abar, Bbar.                        [ssm_ops: diag_setup]
//   3. unroll the recurrence x_k = Abar x_{k-1} + Bbar u_k, y_k = Re(C x_k):  y = K * u with
//      K[l] = 2 Re sum_n C_n Bbar_n Abar_n^l  (a Vandermonde product, chunked over L).  [ssm_ops: vandermonde_forward]
//   4. y = K * u + D u by FFT of length 2L.                                              [ssm_ops: ssm_conv]
//   5. the layer: GELU, dropout, then output_linear (H -> 2H) and GLU, as the official S4 layer.  [nn/ssm/ssm_layer.h]
// Initialisations of A (S4D paper, section 4):
//   lin   A_n = -1/2 + i pi n                        (S4D-Lin)
//   inv   A_n = -1/2 + i N/pi (N/(2n+1) - 1)         (S4D-Inv)
//   legs  diagonal of the normal part of HiPPO-LegS (S4D-LegS; B from the same diagonalisation, nn/ssm/hippo.h)
//   real  A_n = -(n+1), A_imag = 0                    (S4D-Real)
//   random  Re A ~ -U(0, 1], Im A = exp(z), z ~ N(0, 1), per channel and mode, from the layer's generator: no
//         HiPPO structure at all, the control of the S4D paper's initialisation ablation. It is what the official
//         code (state-spaces/s4, kernels/dplr.py) builds with init "rand" and real_random: imaginary parts
//         exp(randn), real parts U[0, 1] (here (0, 1], so that log(-Re A) is finite).
// B = 1 (lin, inv, real, random), C ~ complex normal with variance 1 (0.5 per part), D ~ N(0, 1).
// Bidirectional (as state-spaces/s4): two kernels (C has 2 channels); the second runs on the reversed sequence.
//
// Parameter names follow state-spaces/s4: kernel.log_dt, kernel.inv_A_real, kernel.A_imag, kernel.B, kernel.C,
// D, output_linear.weight/bias. own_lr_parameters() lists the "SSM group" (A, B, dt) that trainers give their own
// lr and no weight decay (the official register(..., lr) convention).
// What it is not: the DPLR kernel (nn/ssm/s4.h), or a residual block (nn/residual_block.h wraps any layer).
#pragma once
#include "nn/ssm/ssm_layer.h"
#include "nn/ssm/ssm_ops.h"

namespace dl::nn {

struct S4DKernelOptions {
  int64_t d_state = 64;      // N (even); N2 = N/2 modes are stored
  std::string init = "lin";  // lin | inv | legs | real | random
  Discretization disc = Discretization::zoh;
  double dt_min = 1e-3, dt_max = 1e-1;
  int64_t channels = 1;  // 2 for a bidirectional layer
  int64_t chunk = 256;   // Vandermonde block along L
};

class S4DKernel : public Module {
 public:
  S4DKernel(int64_t H, const S4DKernelOptions& opt, Generator& g);
  std::string type_name() const override { return "S4DKernel"; }
  std::string extra_repr() const override;
  Var forward(int64_t L) const;  // K (channels, H, L)

  // Recurrent mode: x_k = Abar x_{k-1} + Bbar u_k, y_k = 2 Re(C x_k) (the D term belongs to the layer).
  struct StepParams {
    std::vector<cplx> dA, dB, C;  // (H, N2), (H, N2), (channels, H, N2)
  };
  StepParams step_params() const;
  std::vector<std::string> ssm_parameter_names() const { return {"log_dt", "inv_A_real", "A_imag", "B"}; }  // A, B, dt

  Var log_dt, inv_A_real, A_imag, B, C;
  int64_t H, N2;
  S4DKernelOptions opt;
};

using S4DOptions = SSMOptions<S4DKernelOptions>;

class S4D : public SSMLayer {
 public:
  S4D(int64_t d_model, const S4DOptions& opt, Generator& g);
  // registry "s4d": d_state [64], init [lin], disc [zoh], dt_min [1e-3], dt_max [1e-1], bidirectional [false],
  // dropout [0], chunk [256]
  static std::shared_ptr<S4D> from_config(int64_t d_model, const LayerConfig& cfg, Generator& g);
  static std::vector<std::string> config_keys();
  std::string type_name() const override { return "S4D"; }
  Var kernel_forward(int64_t L) override { return kernel->forward(L); }
  double kernel_flops(int64_t L) const override;
  // Recurrent mode of the same map as ssm(), step by step over L, float64 (for generation and the agreement test).
  Tensor ssm_recurrent(const Tensor& u) const;
  // Streaming: the recurrence above (dA, dB, C of step_params, scale 2 for the implied conjugate modes).
  bool has_diagonal_recurrence() const override { return true; }
  DiagonalRecurrence diagonal_recurrence() const override;

  std::shared_ptr<S4DKernel> kernel;
  S4DOptions opt;

 protected:
  std::vector<std::string> kernel_ssm_parameters() const override { return kernel->ssm_parameter_names(); }
};

}  // namespace dl::nn
