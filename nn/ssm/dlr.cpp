// nn/ssm/dlr.cpp - the diagonal linear RNN (math in nn/ssm/dlr.h).
#include "nn/ssm/dlr.h"

#include <cmath>

namespace dl::nn {

DLRKernel::DLRKernel(int64_t H, int64_t N, int64_t channels, double dt_min, double dt_max, Generator& g) {
  if (N < 1) fail("DLRKernel: N must be >= 1, found " + std::to_string(N));
  std::vector<double> x(N), y(N);
  for (int64_t n = 0; n < N; n++) {  // omega init: Lambda = -dt/2 + 2 pi i n/N
    const double dt = std::exp(std::log(dt_min) + g.uniform() * (std::log(dt_max) - std::log(dt_min)));
    x[n] = std::sqrt(0.5 * dt);
    y[n] = 2.0 * M_PI * (double)n / (double)N;
  }
  Lambda_log_neg_re = register_parameter("Lambda_log_neg_re", from_vector(x, {N}).to(DType::f32));
  Lambda_im = register_parameter("Lambda_im", from_vector(y, {N}).to(DType::f32));
  W = register_parameter("W", mul_scalar(randn({channels, H, N, 2}, g), 1.0 / std::sqrt((double)N)));
}

Var DLRKernel::forward(int64_t L, int64_t chunk) const { return dlr_kernel(Lambda_log_neg_re, Lambda_im, W, L, chunk); }

DLR::DLR(int64_t d_model, const DLROptions& o, Generator& g) : SSMLayer("dlr", d_model, o.bidirectional), opt(o) {
  kernel = register_module("kernel", std::make_shared<DLRKernel>(H, o.d_state, o.bidirectional ? 2 : 1, o.dt_min, o.dt_max, g));
  add_output(o.dropout, /*glu=*/false, g);
}

std::shared_ptr<DLR> DLR::from_config(int64_t d_model, const LayerConfig& cfg, Generator& g) {
  const std::string L = "dlr";
  check_config_keys(cfg, L, config_keys());
  SSMLayerOptions s = read_ssm_options(cfg, L, config_keys(), /*conjugate_pairs=*/false, /*max_state=*/4096);
  DLROptions o;
  o.d_state = s.d_state, o.dt_min = s.dt_min, o.dt_max = s.dt_max, o.bidirectional = s.bidirectional, o.dropout = s.dropout;
  o.chunk = cfg_int(cfg, L, "chunk", 256);
  if (o.chunk < 1) config_error(L, "chunk", "must be >= 1", std::to_string(o.chunk));
  return std::make_shared<DLR>(d_model, o, g);
}

SSMLayer::DiagonalRecurrence DLR::diagonal_recurrence() const {
  const int64_t N = kernel->Lambda_im.size(0);
  const std::vector<double> xs = to_doubles(kernel->Lambda_log_neg_re.data()), ys = to_doubles(kernel->Lambda_im.data());
  DiagonalRecurrence r{N, std::vector<cplx>(H * N), std::vector<cplx>(H * N, 1.0), to_cplx(kernel->W.data()), 1.0};
  r.C.resize(H * N);  // W's first channel
  for (int64_t h = 0; h < H; h++)
    for (int64_t n = 0; n < N; n++) r.dA[h * N + n] = std::exp(cplx(-xs[n] * xs[n], ys[n]));  // lambda, every channel
  return r;
}

Tensor DLR::ssm_recurrent(const Tensor& u_) const {
  if (opt.bidirectional) fail("DLR::ssm_recurrent: a bidirectional layer has no recurrent mode (it looks ahead)");
  const int64_t Bn = u_.size(0), L = u_.size(1), N = kernel->Lambda_im.size(0);
  Tensor u = u_.to(DType::f64).contiguous(), y = zeros({Bn, L, H}, DType::f64);
  Tensor xs = kernel->Lambda_log_neg_re.data().to(DType::f64).contiguous(),
         ys = kernel->Lambda_im.data().to(DType::f64).contiguous();
  Tensor Dd = D.data().to(DType::f64).contiguous();
  std::vector<cplx> W = to_cplx(kernel->W.data()), lam(N);
  for (int64_t n = 0; n < N; n++) {
    const double x = xs.data<double>()[n];
    lam[n] = std::exp(cplx(-x * x, ys.data<double>()[n]));
  }
  for (int64_t b = 0; b < Bn; b++)
    for (int64_t h = 0; h < H; h++) {
      std::vector<cplx> st(N, 0.0);
      for (int64_t t = 0; t < L; t++) {
        const double ut = u.data<double>()[(b * L + t) * H + h];
        double acc = 0;
        for (int64_t n = 0; n < N; n++) {
          st[n] = lam[n] * st[n] + ut;           // x_k = lambda x_{k-1} + u_k
          acc += (W[h * N + n] * st[n]).real();  // y_k = Re(W x_k)
        }
        y.data<double>()[(b * L + t) * H + h] = acc + Dd.data<double>()[h] * ut;
      }
    }
  return y;
}

}  // namespace dl::nn
