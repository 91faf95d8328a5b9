// nn/ssm/s4d_minimal.cpp - the minimal S4D (math in nn/ssm/s4d_minimal.h).
#include "nn/ssm/s4d_minimal.h"

#include <cmath>

#include "nn/ssm/ssm_ops.h"

namespace dl::nn {

MinimalS4DKernel::MinimalS4DKernel(int64_t H, int64_t N, Generator& g, double dt_min, double dt_max) {
  if (N < 2 || N % 2) fail("MinimalS4DKernel: N must be even and >= 2, found " + std::to_string(N));
  const int64_t N2 = N / 2;
  Tensor ldt = add_scalar(mul_scalar(rand({H}, g), std::log(dt_max) - std::log(dt_min)), std::log(dt_min));
  Tensor C = mul_scalar(randn({H, N2, 2}, g), std::sqrt(0.5));  // complex normal, variance 1
  std::vector<float> im(H * N2);
  for (int64_t h = 0; h < H; h++)
    for (int64_t n = 0; n < N2; n++) im[h * N2 + n] = (float)(M_PI * n);  // S4D-Lin
  log_dt = register_parameter("log_dt", ldt);
  log_A_real = register_parameter("log_A_real", full({H, N2}, std::log(0.5)));  // Re A = -1/2
  A_imag = register_parameter("A_imag", from_vector(im, {H, N2}));
  this->C = register_parameter("C", C);
}

Var MinimalS4DKernel::forward(int64_t L) const {
  // dt A = a + i b                                                     (H, N2)
  Var dt = unsqueeze(exp(log_dt), 1);  // (H, 1)
  Var A_re = neg(exp(log_A_real));     // (H, N2)
  Var a = A_re * dt, b = A_imag * dt;  // (H, N2)
  // Bbar = (exp(dt A) - 1)/A = (p + i q)/(A_re + i A_imag)
  Var e = exp(a);
  Var p = e * cos(b) - 1.0, q = e * sin(b);  // (H, N2)
  Var den = A_re * A_re + A_imag * A_imag;
  Var f_re = (p * A_re + q * A_imag) / den, f_im = (q * A_re - p * A_imag) / den;
  // Ct = C Bbar                                                        (H, N2)
  Var C_re = select(C, 2, 0), C_im = select(C, 2, 1);
  Var ct_re = C_re * f_re - C_im * f_im, ct_im = C_re * f_im + C_im * f_re;
  // Abar^l = exp(l dt A) = exp(l a) (cos(l b) + i sin(l b))            (H, N2, L)
  Var l(arange(0.0, (double)L, 1.0, C.dtype()).reshape({1, 1, L}));
  Var la = unsqueeze(a, 2) * l, lb = unsqueeze(b, 2) * l;
  Var el = exp(la);
  Var v_re = el * cos(lb), v_im = el * sin(lb);
  // K = 2 Re sum_n Ct Abar^l                                           (H, L)
  Var terms = unsqueeze(ct_re, 2) * v_re - unsqueeze(ct_im, 2) * v_im;
  return sum(terms, {1}) * 2.0;
}

SSMLayer::DiagonalRecurrence S4DMinimal::diagonal_recurrence() const {
  const std::vector<double> ldt = to_doubles(kernel->log_dt.data()), lar = to_doubles(kernel->log_A_real.data()),
                            aim = to_doubles(kernel->A_imag.data());
  const int64_t N2 = kernel->log_A_real.size(1);
  DiagonalRecurrence r{N2, std::vector<cplx>(H * N2), std::vector<cplx>(H * N2), to_cplx(kernel->C.data()), 2.0};
  for (int64_t h = 0; h < H; h++)
    for (int64_t n = 0; n < N2; n++) {
      const int64_t i = h * N2 + n;
      const cplx A(-std::exp(lar[i]), aim[i]), dtA = std::exp(ldt[h]) * A;
      r.dA[i] = std::exp(dtA), r.dB[i] = (std::exp(dtA) - 1.0) / A;  // ZOH, B = 1
    }
  return r;
}

S4DMinimal::S4DMinimal(int64_t d_model, int64_t d_state, Generator& g, double dropout)
    : SSMLayer("s4d_minimal", d_model, /*bidirectional=*/false) {
  kernel = register_module("kernel", std::make_shared<MinimalS4DKernel>(H, d_state, g));
  add_output(dropout, /*glu=*/true, g);
}

std::shared_ptr<S4DMinimal> S4DMinimal::from_config(int64_t d_model, const LayerConfig& cfg, Generator& g) {
  check_config_keys(cfg, "s4d_minimal", config_keys());
  SSMLayerOptions s = read_ssm_options(cfg, "s4d_minimal", config_keys(), /*conjugate_pairs=*/true);
  return std::make_shared<S4DMinimal>(d_model, s.d_state, g, s.dropout);
}

}  // namespace dl::nn
