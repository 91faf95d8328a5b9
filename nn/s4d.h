// nn/s4d.h - S4D: the diagonal state space layer (Gu, Gupta, Goel, Re 2022, "On the Parameterization and
// Initialization of Diagonal State Space Models"), full version. The minimal teaching twin is nn/s4d_minimal.h;
// the DPLR original is nn/s4.h. Shape letters: B batch, H channels (d_model), N state, N2 = N/2, L length.
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
//   5. the layer: GELU, dropout, then output_linear (H -> 2H) and GLU, as the official S4 layer.   [S4D::forward]
// Initialisations of A (S4D paper, section 4):
//   lin   A_n = -1/2 + i pi n                        (S4D-Lin)
//   inv   A_n = -1/2 + i N/pi (N/(2n+1) - 1)         (S4D-Inv)
//   legs  diagonal of the normal part of HiPPO-LegS (S4D-LegS; B from the same diagonalisation, nn/hippo.h)
//   real  A_n = -(n+1), A_imag = 0                    (S4D-Real)
// B = 1 (lin, inv, real), C ~ complex normal with variance 1 (0.5 per part), D ~ N(0, 1).
// Bidirectional (as state-spaces/s4): two kernels (C has 2 channels); the second runs on the reversed sequence.
//
// Parameter names follow state-spaces/s4: kernel.log_dt, kernel.inv_A_real, kernel.A_imag, kernel.B, kernel.C,
// D, output_linear.weight/bias. ssm_parameter_names() lists the "SSM group" (A, B, dt) that the trainer gives
// lr 1e-3 and no weight decay (the official register(..., lr) convention).
// What it is not: the DPLR kernel (nn/s4.h), or a residual block (nn/ssm_block.h wraps any layer).
#pragma once
#include "nn/layers.h"
#include "nn/registry.h"
#include "nn/ssm_ops.h"
#include "nn/zoo_common.h"

namespace dl::nn {

struct S4DKernelOptions {
  int64_t d_state = 64;       // N (even); N2 = N/2 modes are stored
  std::string init = "lin";   // lin | inv | legs | real
  Discretization disc = Discretization::zoh;
  double dt_min = 1e-3, dt_max = 1e-1;
  int64_t channels = 1;       // 2 for a bidirectional layer
  int64_t chunk = 256;        // Vandermonde block along L
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
  std::vector<std::string> ssm_parameter_names() const { return {"log_dt", "inv_A_real", "A_imag", "B"}; }

  Var log_dt, inv_A_real, A_imag, B, C;
  int64_t H, N2;
  S4DKernelOptions opt;
};

struct S4DOptions {
  S4DKernelOptions kernel;
  bool bidirectional = false;
  double dropout = 0.0;
};

class S4D : public SequenceLayer {
 public:
  S4D(int64_t d_model, const S4DOptions& opt, Generator& g);
  static std::shared_ptr<S4D> from_config(int64_t d_model, const LayerConfig& cfg, Generator& g);
  std::string type_name() const override { return "S4D"; }
  Var forward(const Var& x, const Tensor& mask) override;  // (B, L, H) -> (B, L, H)
  bool is_causal() const override { return !opt.bidirectional; }

  // Convolution mode without the output projection: y = K * u + D u, (B, L, H).
  Var ssm(const Var& u) const;
  // Recurrent mode of the same map, step by step over L, float64 (for generation and the agreement test).
  Tensor ssm_recurrent(const Tensor& u) const;
  // Dotted names of the SSM group (lr 1e-3, weight decay 0).
  std::vector<std::string> ssm_parameter_names() const;

  std::shared_ptr<S4DKernel> kernel;
  Var D;
  std::shared_ptr<Dropout> drop;
  std::shared_ptr<Linear> output_linear;
  S4DOptions opt;
  int64_t H;
  Generator* gen;
};

}  // namespace dl::nn
