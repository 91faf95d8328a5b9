// nn/ssm/s4.h - S4: the structured state space layer with a diagonal-plus-low-rank (DPLR) state matrix
// (Gu, Goel, Re 2022, "Efficiently Modeling Long Sequences with Structured State Spaces"). The diagonal
// variant is nn/ssm/s4d.h. Shape letters: B batch, H channels, N state, N2 = N/2 conjugate pairs, L length,
// Lk = the kernel length C tilde currently refers to (>= L), M = Lk/2 + 1 FFT nodes.
//
// From the math to the code:
//   1. A = Lambda - P P^* (HiPPO-LegS in its diagonalised NPLR form, rank 1; nn/ssm/hippo.h), per channel h.
//      Lambda = -exp(inv_A_real) + i A_imag; B, P, C complex; dt = exp(log_dt).        [S4Kernel: parameters]
//   2. bilinear discretisation: Abar = (I - dt/2 A)^{-1}(I + dt/2 A), Bbar = (I - dt/2 A)^{-1} dt B.
//   3. kernel K[l] = C Abar^l Bbar, l < Lk. Its truncated generating function at the roots of unity
//      z = omega^m = exp(-2 pi i m/Lk) is  Khat(z) = sum_l K[l] z^l = C (I - Abar^Lk)(I - Abar z)^{-1} Bbar,
//      so with "C tilde" = C (I - Abar^Lk) (stored as the parameter kernel.C, as the official code does)
//         Khat(z) = Ct (I - Abar z)^{-1} Bbar = 2 dt/(1+z) * Ct (g(z) - dt A)^{-1} B,  g(z) = 2(1-z)/(1+z).
//                                                                               [S4Kernel::setup_C, double_length]
//   4. (g - dt Lambda + dt P P^*)^{-1} by Woodbury: with Cauchy sums r_ab(z) = dt sum_n a_n b_n/(g - dt Lambda_n)
//      (+ the conjugate modes), Khat = 2/(1+z) [r_CB - r_CP r_QB / (1 + r_QP)], Q = conj P.
//      Multiplying numerator and denominator by (1+z) removes the pole at z = -1:
//         s_ab = dt sum_n [a b / (2(1-z) - (1+z) dt Lambda_n) + conj(a b)/(2(1-z) - (1+z) dt conj Lambda_n)]
//         Khat = 2 [s_CB - (1+z) s_CP s_QB / (1 + (1+z) s_QP)].                  [s4_dplr_kernel forward]
//   5. K = irfft(Khat, Lk)[:L]; then y = K * u + D u by FFT (nn/ssm/ssm_ops.h ssm_conv), GELU, dropout,
//      output_linear + GLU: the shell every SSM layer shares (nn/ssm/ssm_layer.h).
//   Lengths that change: a longer L doubles Lk (Ct <- Ct (I + Abar^Lk), no gradient) until Lk >= L; a shorter
//   L truncates the length-Lk kernel (its first L taps do not depend on Lk).
// The naive twin (naive_kernel) builds the dense (N, N) Abar in float64 and multiplies powers; the recurrent
// mode (ssm_recurrent) steps x_k = Abar x_{k-1} + Bbar u_k, y_k = Re(C x_k) + D u_k in O(N) per step: the
// bilinear step needs only (I + dt/2 A) x and a solve with the diagonal-plus-rank-1 I - dt/2 A, which
// Sherman-Morrison does in O(N) (DPLRStep); ssm_recurrent_dense is its twin with the dense Abar.
// Parameter names follow state-spaces/s4's SSMKernelDPLR: kernel.log_dt, kernel.inv_A_real, kernel.A_imag,
// kernel.B, kernel.P, kernel.C (= C tilde), buffer kernel.l_kernel; D; output_linear.
// On a device (parameters there): step 4's Cauchy sums and Woodbury correction run there, one thread per (h, node)
// (the backend's dplr_spectrum, cuda/ops/dplr.cuh), and step 5's irfft is cuFFT's; the (H, N2) products of step 4's
// pairs and the last links of the backward's chain rule stay on the host (O(Cc H N2)). C tilde's setup and doubling
// (setup_C, no gradient, once per length) run on the host and write the parameter back where it lives.
// What it is not: rank > 1; more than 2 kernel channels on a device.
#pragma once
#include "nn/ssm/ssm_layer.h"
#include "nn/ssm/ssm_ops.h"

namespace dl::nn {

// The fused DPLR kernel primitive: K (Cc, H, Lk) from log_dt (H), inv_A_real (H, N2), A_imag (H, N2),
// B (H, N2, 2), P (1, H, N2, 2), Ct (Cc, H, N2, 2). Forward and backward in float64 (formulas in s4.cpp), on the CPU or,
// for parameters on a device, with the spectrum computed there.
Var s4_dplr_kernel(const Var& log_dt, const Var& inv_A_real, const Var& A_imag, const Var& B, const Var& P, const Var& Ct,
                   int64_t Lk);

struct S4KernelOptions {
  int64_t d_state = 64;
  double dt_min = 1e-3, dt_max = 1e-1;
  int64_t channels = 1;
};

class S4Kernel : public Module {
 public:
  S4Kernel(int64_t H, const S4KernelOptions& opt, Generator& g);
  std::string type_name() const override { return "S4Kernel"; }
  std::string extra_repr() const override;
  Var forward(int64_t L);         // K (channels, H, L); may grow l_kernel first
  void ensure_length(int64_t L);  // set up / double C tilde until l_kernel >= L
  int64_t l_kernel() const { return l_kernel_; }
  Tensor naive_kernel(int64_t L) const;  // float64 (channels, H, L) from dense powers; needs l_kernel > 0

  struct StepParams {  // per channel h: dense Abar (n, n), Bbar (n), C (first channel's, n); n = 2 N2
    std::vector<std::vector<cplx>> dA, dB, C;
    void step(int64_t h, std::vector<cplx>& x, double u) const;  // x <- Abar x + Bbar u in O(n^2)
  };
  StepParams step_params() const;
  struct DPLRStep {  // per channel h, on the conjugate-pair state (n = 2 N2): what the O(N) bilinear step needs
    std::vector<std::vector<cplx>> Lambda, p, B, C;  // A = diag(Lambda) - p p^*; C (first channel's) from C tilde
    std::vector<std::vector<cplx>> dinv, w;          // 1 / (1 - dt/2 Lambda), w = dinv * p
    std::vector<cplx> denom;                         // 1 + dt/2 p^* w
    std::vector<double> dt;
    void step(int64_t h, std::vector<cplx>& x, double u) const;  // x <- Abar x + Bbar u in O(n)
  };
  DPLRStep dplr_step_params() const;
  std::vector<std::string> ssm_parameter_names() const { return {"log_dt", "inv_A_real", "A_imag", "B", "P"}; }

  Var log_dt, inv_A_real, A_imag, B, P, C;
  int64_t H, N2;
  S4KernelOptions opt;

 private:
  void setup_C(int64_t L, bool double_length);
  int64_t l_kernel_ = 0;
};

using S4Options = SSMOptions<S4KernelOptions>;

class S4 : public SSMLayer {
 public:
  S4(int64_t d_model, const S4Options& opt, Generator& g);
  // registry "s4": d_state [64], dt_min [1e-3], dt_max [1e-1], bidirectional [false], dropout [0]
  static std::shared_ptr<S4> from_config(int64_t d_model, const LayerConfig& cfg, Generator& g);
  static std::vector<std::string> config_keys() { return {"d_state", "dt_min", "dt_max", "bidirectional", "dropout"}; }
  std::string type_name() const override { return "S4"; }
  Var kernel_forward(int64_t L) override { return kernel->forward(L); }
  double kernel_flops(int64_t L) const override;
  Tensor ssm_recurrent(const Tensor& u) const;        // ssm() by the recurrence, O(N) per step (Woodbury), float64
  Tensor ssm_recurrent_dense(const Tensor& u) const;  // twin: the recurrence with the dense Abar, O(N^2) per step
  // Streaming: ssm_recurrent's O(N) DPLR step one position at a time; the state x (B, H, N) complex float64 on the
  // host, the step's constants (DPLRStep) computed once per stream.
  StreamState start_stream(int64_t batch) const override;
  Var step(const Var& x, StreamState& s) override;
  bool streams_in_constant_memory() const override { return !opt.bidirectional; }

  std::shared_ptr<S4Kernel> kernel;
  S4Options opt;

 protected:
  std::vector<std::string> kernel_ssm_parameters() const override { return kernel->ssm_parameter_names(); }
};

}  // namespace dl::nn
