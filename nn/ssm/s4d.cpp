// nn/ssm/s4d.cpp - S4D kernel and layer (math and references in nn/ssm/s4d.h).
#include "nn/ssm/s4d.h"

#include <cmath>

#include "nn/ssm/hippo.h"

namespace dl::nn {

// The initialisations of A (nn/ssm/s4d.h), checked in one place for the kernel and the registry's config.
static constexpr const char* kInits = "lin, inv, legs, real or random";
static bool known_init(const std::string& init) {
  return init == "lin" || init == "inv" || init == "legs" || init == "real" || init == "random";
}

S4DKernel::S4DKernel(int64_t H_, const S4DKernelOptions& o, Generator& g) : H(H_), N2(o.d_state / 2), opt(o) {
  if (o.d_state < 2 || o.d_state % 2) fail("S4DKernel: d_state must be even and >= 2, found " + std::to_string(o.d_state));
  if (!known_init(o.init)) fail("S4DKernel: init must be " + std::string(kInits) + ", found \"" + o.init + "\"");
  std::vector<double> ldt(H), a_re(H * N2), a_im(H * N2);
  std::vector<cplx> B(H * N2, cplx(1.0, 0.0)), C(opt.channels * H * N2);
  for (int64_t h = 0; h < H; h++)  // log-uniform dt in [dt_min, dt_max]
    ldt[h] = std::log(opt.dt_min) + g.uniform() * (std::log(opt.dt_max) - std::log(opt.dt_min));
  hippo::DPLR legs;
  if (opt.init == "legs") legs = hippo::legs_dplr(opt.d_state);
  const double N = (double)opt.d_state;
  for (int64_t h = 0; h < H; h++)
    for (int64_t n = 0; n < N2; n++) {
      cplx A;
      if (opt.init == "random") {  // real part first, then imaginary: two draws per mode, in (h, n) order
        const double re = -(1.0 - g.uniform());  // uniform() is in [0, 1): -U(0, 1], never 0
        A = cplx(re, std::exp(g.normal()));
      } else if (opt.init == "lin") A = cplx(-0.5, M_PI * n);
      else if (opt.init == "inv") A = cplx(-0.5, N / M_PI * (N / (2.0 * n + 1) - 1));
      else if (opt.init == "real") A = cplx(-(double)(n + 1), 0.0);
      else A = legs.Lambda[n], B[h * N2 + n] = legs.B[n];  // legs
      a_re[h * N2 + n] = std::log(-A.real());  // A_re = -exp(inv_A_real)
      a_im[h * N2 + n] = A.imag();
    }
  const double s = std::sqrt(0.5);  // complex normal, variance 1
  for (auto& c : C) c = cplx(s * g.normal(), s * g.normal());
  log_dt = register_parameter("log_dt", from_vector(ldt, {H}).to(DType::f32));
  inv_A_real = register_parameter("inv_A_real", from_vector(a_re, {H, N2}).to(DType::f32));
  A_imag = register_parameter("A_imag", from_vector(a_im, {H, N2}).to(DType::f32));
  this->B = register_parameter("B", from_cplx(B, {H, N2, 2}, DType::f32));
  this->C = register_parameter("C", from_cplx(C, {opt.channels, H, N2, 2}, DType::f32));
}

std::string S4DKernel::extra_repr() const {
  return "H=" + std::to_string(H) + ", N=" + std::to_string(2 * N2) + ", init=" + opt.init +
         ", disc=" + (opt.disc == Discretization::zoh ? "zoh" : "bilinear") + ", channels=" + std::to_string(opt.channels);
}

Var S4DKernel::forward(int64_t L) const {
  DiagKernelOptions o;
  o.disc = opt.disc;
  o.chunk = opt.chunk;
  return diag_ssm_kernel(log_dt, inv_A_real, A_imag, B, C, L, o);
}

S4DKernel::StepParams S4DKernel::step_params() const {
  auto ldt = log_dt.data().to(DType::f64).contiguous(), ar = inv_A_real.data().to(DType::f64).contiguous(),
       ai = A_imag.data().to(DType::f64).contiguous();
  std::vector<cplx> Bc = to_cplx(B.data());
  StepParams s;
  s.C = to_cplx(C.data());
  s.dA.resize(H * N2), s.dB.resize(H * N2);
  for (int64_t h = 0; h < H; h++) {
    const double dt = std::exp(ldt.data<double>()[h]);
    for (int64_t n = 0; n < N2; n++) {
      const int64_t i = h * N2 + n;
      const cplx A(-std::exp(ar.data<double>()[i]), ai.data<double>()[i]), dtA = dt * A;
      if (opt.disc == Discretization::zoh) {
        s.dA[i] = std::exp(dtA);
        s.dB[i] = (std::exp(dtA) - 1.0) / A * Bc[i];
      } else {
        s.dA[i] = (1.0 + dtA / 2.0) / (1.0 - dtA / 2.0);
        s.dB[i] = dt / (1.0 - dtA / 2.0) * Bc[i];
      }
    }
  }
  return s;
}

// ---------------------------------------------------------------------------------------------------
S4D::S4D(int64_t d_model, const S4DOptions& o, Generator& g) : SSMLayer("s4d", d_model, o.bidirectional), opt(o) {
  opt.kernel.channels = opt.bidirectional ? 2 : 1;
  kernel = register_module("kernel", std::make_shared<S4DKernel>(H, opt.kernel, g));
  add_output(opt.dropout, /*glu=*/true, g);
}

std::vector<std::string> S4D::config_keys() {
  return {"d_state", "init", "disc", "dt_min", "dt_max", "bidirectional", "dropout", "chunk"};
}

std::shared_ptr<S4D> S4D::from_config(int64_t d_model, const LayerConfig& cfg, Generator& g) {
  const std::string L = "s4d";
  check_config_keys(cfg, L, config_keys());
  SSMLayerOptions s = read_ssm_options(cfg, L, config_keys(), /*conjugate_pairs=*/true);
  S4DOptions o;
  o.kernel.d_state = s.d_state, o.kernel.dt_min = s.dt_min, o.kernel.dt_max = s.dt_max;
  o.bidirectional = s.bidirectional, o.dropout = s.dropout;
  o.kernel.init = cfg_str(cfg, L, "init", "lin");
  if (!known_init(o.kernel.init)) config_error(L, "init", std::string("must be ") + kInits, "\"" + o.kernel.init + "\"");
  o.kernel.disc = parse_discretization(cfg_str(cfg, L, "disc", "zoh"), L);
  o.kernel.chunk = cfg_int(cfg, L, "chunk", 256);
  if (o.kernel.chunk < 1) config_error(L, "chunk", "must be >= 1", std::to_string(o.kernel.chunk));
  return std::make_shared<S4D>(d_model, o, g);
}

SSMLayer::DiagonalRecurrence S4D::diagonal_recurrence() const {
  auto s = kernel->step_params();
  return {kernel->N2, s.dA, s.dB, std::vector<cplx>(s.C.begin(), s.C.begin() + H * kernel->N2), 2.0};  // C's first channel
}

Tensor S4D::ssm_recurrent(const Tensor& u_) const {
  if (opt.bidirectional) fail("S4D::ssm_recurrent: a bidirectional layer has no recurrent mode (it looks ahead)");
  const int64_t Bn = u_.size(0), L = u_.size(1), N2 = kernel->N2;
  Tensor u = u_.to(DType::f64).contiguous(), y = zeros({Bn, L, H}, DType::f64);
  Tensor Dd = D.data().to(DType::f64).contiguous();
  auto s = kernel->step_params();
  const double *pu = u.data<double>(), *pD = Dd.data<double>();
  double* py = y.data<double>();
  for (int64_t b = 0; b < Bn; b++)
    for (int64_t h = 0; h < H; h++) {
      std::vector<cplx> x(N2, 0.0);  // state, (N2)
      for (int64_t t = 0; t < L; t++) {
        const double ut = pu[(b * L + t) * H + h];
        double acc = 0;
        for (int64_t n = 0; n < N2; n++) {
          const int64_t i = h * N2 + n;
          x[n] = s.dA[i] * x[n] + s.dB[i] * ut;  // x_k = Abar x_{k-1} + Bbar u_k
          acc += 2.0 * (s.C[i] * x[n]).real();   // y_k = 2 Re(C x_k)
        }
        py[(b * L + t) * H + h] = acc + pD[h] * ut;
      }
    }
  return y;
}

}  // namespace dl::nn
