// nn/exact_loss.cpp - the EXACT loss: orthant probabilities of N(a, I + 11^T) and their gradients (formulas in
// nn/exact_loss.h).
#include "nn/exact_loss.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "autograd/shape_ops.h"

namespace dl::nn {

// ---- scalar building blocks ------------------------------------------------------------------------------------

static constexpr double kSqrt2 = 1.4142135623730950488, kInvSqrt2Pi = 0.39894228040143267794, kPi = 3.14159265358979323846;

double normal_cdf(double x) { return 0.5 * std::erfc(-x / kSqrt2); }
double normal_pdf(double x) { return kInvSqrt2Pi * std::exp(-0.5 * x * x); }

double normal_quantile(double p) {
  if (!(p > 0 && p < 1)) throw std::invalid_argument("normal_quantile: p must be in (0, 1), got " + std::to_string(p));
  if (p > 0.5) return -normal_quantile(1 - p);  // 1 - p is exact for p in [0.5, 1]
  // Abramowitz & Stegun 26.2.23 (|error| < 4.5e-4) as the start ...
  double t = std::sqrt(-2 * std::log(p));
  double x = -(t - (2.515517 + 0.802853 * t + 0.010328 * t * t) / (1 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t));
  // ... then Halley's method on f(x) = Phi(x) - p (cubic convergence: 4e-4 -> 1e-10 -> machine precision).
  for (int it = 0; it < 3; it++) {
    double u = (normal_cdf(x) - p) / normal_pdf(x);  // f / f'
    x -= u / (1 + 0.5 * x * u);                       // f'' / f' = -x
  }
  return x;
}

// Gauss-Legendre nodes and weights on [-1, 1]: the roots of P_n by Newton's method from Chebyshev starts, the
// weights 2 / ((1 - x^2) P_n'(x)^2). Computed once.
struct GaussLegendre {
  std::vector<double> x, w;
  explicit GaussLegendre(int n) : x(n), w(n) {
    for (int i = 0; i < n; i++) {
      double z = std::cos(kPi * (i + 0.75) / (n + 0.5)), dp = 0;
      for (int it = 0; it < 100; it++) {
        double p0 = 1, p1 = z;  // P_0, P_1, then the three-term recurrence up to P_n
        for (int k = 2; k <= n; k++) {
          double pk = ((2 * k - 1) * z * p1 - (k - 1) * p0) / k;
          p0 = p1, p1 = pk;
        }
        dp = n * (z * p1 - p0) / (z * z - 1);  // P_n'(z)
        double dz = p1 / dp;
        z -= dz;
        if (std::abs(dz) < 1e-16) break;
      }
      x[i] = z, w[i] = 2 / ((1 - z * z) * dp * dp);
    }
  }
};

double bvn_cdf(double h, double k, double r) {
  if (!(std::abs(r) < 0.925))
    throw std::invalid_argument("bvn_cdf: |r| >= 0.925 is not implemented (the EXACT loss needs r = 1/2), got r = " +
                                std::to_string(r));
  static const GaussLegendre gl(20);
  const double hs = 0.5 * (h * h + k * k), hk = h * k, asr = std::asin(r);
  double s = 0;
  for (size_t i = 0; i < gl.x.size(); i++) {
    double sn = std::sin(0.5 * asr * (gl.x[i] + 1));  // theta in (0, asin r), t = sin(theta)
    s += gl.w[i] * std::exp((sn * hk - hs) / (1 - sn * sn));
  }
  return normal_cdf(h) * normal_cdf(k) + s * asr / (4 * kPi);
}

// ---- the orthant probability ------------------------------------------------------------------------------------

namespace {

// splitmix64 of a combined counter: one uniform in (0, 1) per (seed, row, sample, dimension).
double draw(uint64_t seed, uint64_t row, uint64_t sample, uint64_t dim) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull ^ (row + 1) * 0xBF58476D1CE4E5B9ull ^ (sample + 1) * 0x94D049BB133111EBull ^
               (dim + 1) * 0xD6E8FEB86659FD93ull;
  for (int r = 0; r < 2; r++) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
  }
  return ((double)(z >> 11) + 0.5) * (1.0 / 9007199254740992.0);  // (k + 1/2) / 2^53: never 0 or 1
}

// Genz's sequential estimate on sorted a (D >= 1). grad (D) gets the derivative of the estimate.
OrthantValue genz(const double* a, int64_t D, double* grad, const OrthantOptions& o, uint64_t row) {
  // closed-form Cholesky factor of I + 11^T: diag[i] on the diagonal, alt[i] below it in column i
  std::vector<double> diag(D), alt(D);
  double S = 0;
  for (int64_t i = 0; i < D; i++) {
    diag[i] = std::sqrt(2 - S);
    alt[i] = diag[i] - 1 / diag[i];
    S += alt[i] * alt[i];
  }
  std::vector<double> t(D), e(D), u(D), v(D), pre(D + 1), suf(D + 1);
  double sum = 0, sum2 = 0;
  if (grad) std::fill(grad, grad + D, 0.0);
  const int n = std::max(1, o.samples);
  for (int s = 0; s < n; s++) {
    double acc = 0;  // sum_{j<i} L_ij u_j
    for (int64_t i = 0; i < D; i++) {
      t[i] = (a[i] + acc) / diag[i];
      e[i] = normal_cdf(t[i]);  // P(z_i > 0 | u_<i)
      if (i + 1 < D) {
        v[i] = draw(o.seed, row, s, i);
        double q = std::max(v[i] * e[i], 1e-300);  // u_i ~ N(0,1) truncated to (-t_i, inf), by inversion
        u[i] = -normal_quantile(q);
        if (v[i] * e[i] < 1e-300) v[i] = 0;  // floored: u_i no longer moves with e_i
        acc += alt[i] * u[i];
      }
    }
    pre[0] = 1, suf[D] = 1;
    for (int64_t i = 0; i < D; i++) pre[i + 1] = pre[i] * e[i];
    for (int64_t i = D - 1; i >= 0; i--) suf[i] = suf[i + 1] * e[i];
    const double P = pre[D];
    sum += P, sum2 += P * P;
    if (!grad) continue;
    // reverse mode, i from last to first: t_i = (a_i + sum_{j<i} alt_j u_j) / diag_i, e_i = Phi(t_i),
    // u_i = -Phi^-1(v_i e_i)  =>  du_i/de_i = -v_i / phi(u_i);  P = prod e_i.
    double tbar_sum = 0;  // sum_{k>i} tbar_k / diag_k, so ubar_i = alt_i * tbar_sum
    for (int64_t i = D - 1; i >= 0; i--) {
      double ebar = pre[i] * suf[i + 1];  // dP/de_i holding the u fixed
      if (i + 1 < D) ebar += alt[i] * tbar_sum * (-v[i] / normal_pdf(u[i]));
      double tbar = ebar * normal_pdf(t[i]);
      grad[i] += tbar / diag[i] / n;
      tbar_sum += tbar / diag[i];
    }
  }
  double p = sum / n, var = n > 1 ? std::max(0.0, (sum2 - n * p * p) / (n - 1)) : 0.0;
  return {p, std::sqrt(var / n)};
}

}  // namespace

OrthantValue orthant_prob(const double* a, int64_t D, double* grad, const OrthantOptions& o, uint64_t row) {
  if (D < 1) throw std::invalid_argument("orthant_prob: need at least one dimension (two classes)");
  if (!o.force_genz && D == 1) {
    if (grad) grad[0] = normal_pdf(a[0] / kSqrt2) / kSqrt2;
    return {normal_cdf(a[0] / kSqrt2), 0};
  }
  if (!o.force_genz && D == 2) {
    const double rho = 0.5, c = std::sqrt(1 - rho * rho), h1 = a[0] / kSqrt2, h2 = a[1] / kSqrt2;
    if (grad) {
      grad[0] = normal_pdf(h1) * normal_cdf((h2 - rho * h1) / c) / kSqrt2;
      grad[1] = normal_pdf(h2) * normal_cdf((h1 - rho * h2) / c) / kSqrt2;
    }
    return {bvn_cdf(h1, h2, rho), 0};
  }
  std::vector<int64_t> order(D);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return a[i] < a[j]; });
  std::vector<double> as(D), gs(D);
  for (int64_t i = 0; i < D; i++) as[i] = a[order[i]];
  OrthantValue r = genz(as.data(), D, grad ? gs.data() : nullptr, o, row);
  if (grad)
    for (int64_t i = 0; i < D; i++) grad[order[i]] = gs[i];  // un-permute
  return r;
}

// ---- autograd ----------------------------------------------------------------------------------------------------

namespace {

struct PositiveNormalProbNode : Node {
  Tensor dp;  // (B, D) float64: dP_b / da_b, computed by the forward
  DType dtype;
  const char* name() const override { return "positive_normal_prob"; }
  std::vector<Tensor> apply(const Tensor& dy) override {  // da = dy[:, None] * dP/da
    return {mul(dp, dy.to(DType::f64).reshape({-1, 1})).to(dtype)};
  }
  void release() override { dp = Tensor(); }
};

}  // namespace

Var positive_normal_prob(const Var& a, const OrthantOptions& o) {
  if (a.dim() != 2 || a.size(1) < 1)
    fail("positive_normal_prob: expected a (B, D) with D >= 1, found " + shape_str(a.shape()));
  const int64_t B = a.size(0), D = a.size(1);
  Tensor x = a.data().to(Device::cpu).to(DType::f64).contiguous();
  Tensor p = Tensor::empty({B}, DType::f64), dp = Tensor::empty({B, D}, DType::f64);
  const double* px = x.data<double>();
  double *pp = p.data<double>(), *pdp = dp.data<double>();
  const bool need_grad = any_requires_grad({a});
#pragma omp parallel for schedule(static) if (B * D * o.samples > 4096)
  for (int64_t b = 0; b < B; b++) pp[b] = orthant_prob(px + b * D, D, need_grad ? pdp + b * D : nullptr, o, b).p;
  Tensor out = p.to(a.dtype());
  if (!need_grad) return Var(out);
  auto n = std::make_shared<PositiveNormalProbNode>();
  n->dp = dp;
  n->dtype = a.dtype();
  return record(n, out, {a});
}

Var exact_deltas(const Var& logits, const Tensor& labels) {
  if (logits.dim() != 2 || logits.size(1) < 2)
    fail("exact_loss: expected logits (B, C) with C >= 2 classes, found " + shape_str(logits.shape()));
  const int64_t B = logits.size(0), C = logits.size(1);
  if (labels.dim() != 1 || labels.size(0) != B)
    fail("exact_loss: expected labels (B) = (" + std::to_string(B) + "), found " + shape_str(labels.shape()));
  if (labels.dtype() != DType::i64) fail("exact_loss: labels must be int64 class indices");
  Tensor y = labels.to(Device::cpu).contiguous();
  std::vector<int64_t> others((size_t)(B * (C - 1)));
  for (int64_t b = 0; b < B; b++) {
    int64_t yb = y.data<int64_t>()[b];
    if (yb < 0 || yb >= C)
      fail("exact_loss: label " + std::to_string(yb) + " at row " + std::to_string(b) + " is outside [0, " +
           std::to_string(C) + ")");
    for (int64_t i = 0, k = 0; i < C; i++)
      if (i != yb) others[b * (C - 1) + k++] = i;
  }
  Var mu_y = gather(logits, 1, y.reshape({B, 1}));                                   // (B, 1)
  Var mu_o = gather(logits, 1, from_vector(others, {B, C - 1}).to(logits.data().device()));  // (B, D)
  return mu_y - mu_o;                                                                  // (B, D)
}

Var exact_loss(const Var& logits, const Tensor& labels, const Var& sigma, const ExactOptions& o) {
  if (!sigma.defined() || sigma.numel() != 1) fail("exact_loss: sigma must hold one value");
  if (!(sigma.item() > 0)) fail("exact_loss: sigma must be > 0, got " + std::to_string(sigma.item()));
  if (!(o.margin > 0)) fail("exact_loss: margin must be > 0 (inf for none), got " + std::to_string(o.margin));
  Var d = exact_deltas(logits, labels);  // (B, D)
  if (std::isfinite(o.margin)) d = clamp(d, -INFINITY, o.margin);
  Var a = d / reshape(sigma, {1, 1});
  return 1.0 - mean(positive_normal_prob(a, o.orthant));
}

Var exact_loss(const Var& logits, const Tensor& labels, double sigma, const ExactOptions& o) {
  return exact_loss(logits, labels, Var(full({}, sigma, logits.dtype())), o);
}

// ---- gradient normalisation --------------------------------------------------------------------------------------

double GradientNormalizer::apply(const std::vector<Var>& params) {
  double sq = 0;
  for (auto& p : params) {
    if (!p.grad().defined()) continue;
    Tensor g = p.grad().to(DType::f64).contiguous();
    for (int64_t i = 0; i < g.numel(); i++) sq += g.data<double>()[i] * g.data<double>()[i];
  }
  const double norm = std::sqrt(sq);
  moving_norm = first ? norm : momentum * moving_norm + (1 - momentum) * norm;
  first = false;
  const double m = std::max(moving_norm, floor);
  for (auto& p : params)
    if (p.grad().defined()) p.mutable_grad() = mul_scalar(p.grad(), 1.0 / m);
  return norm / m;
}

}  // namespace dl::nn
