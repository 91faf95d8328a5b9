// nn/exact_loss.h - EXACT: train the expected accuracy itself (Karpukhin, Dereka, Kolesnikov, "EXACT: How to Train
// Your Accuracy", arXiv 2205.09615; official code tinkoff-ai/exact, read for the formulas, not copied).
//
// Shape letters: B batch, C classes, D = C - 1 (the "other" classes of a row).
//
// What P(correct) is. Accuracy is a step function of the logits, so its gradient is zero almost everywhere. EXACT
// makes the classifier stochastic: the scores are s = mu + sigma * eps with eps ~ N(0, I_C), mu the logits. The
// prediction argmax(s) is right when s_y > s_i for every i != y. Write z_i = s_y - s_i (i != y, a D-vector):
//     z = d + sigma * (eps_y - eps_i),   d_i = mu_y - mu_i,
//     Cov(z_i, z_j) = sigma^2 (Var eps_y + [i = j] Var eps_i) = sigma^2 (1 + [i = j])   ->   z ~ N(d, sigma^2 (I + 11^T)).
// So P(correct) = P(z > 0) is the mass of a correlated Gaussian in the positive orthant, a smooth function of d / sigma,
// and 1 - mean_batch P(correct) is the expected error rate of the stochastic classifier: a loss whose minimum (sigma
// -> 0) is the 0-1 loss.
//
// The orthant integral P(N(a, Sigma) > 0), a = d / sigma, Sigma = I + 11^T (diagonal 2, off-diagonal 1):
//   D = 1 (C = 2)   Phi(a / sqrt 2)                                              (closed form)
//   D = 2 (C = 3)   Phi2(a_1 / sqrt 2, a_2 / sqrt 2; rho = 1/2)                  (bivariate normal CDF, bvn_cdf below)
//   D >= 3          Genz's sequential Monte Carlo (Genz 1992, "Numerical computation of multivariate normal
//                   probabilities"), as the official code does for every D.
// How Genz's method works. Factor Sigma = L L^T (lower triangular) and write z = a + L u with u ~ N(0, I). The
// constraints become sequential: z_i > 0  <=>  u_i > -(a_i + sum_{j<i} L_ij u_j) / L_ii =: -t_i, a bound that depends
// only on the u_j already drawn. So P = E[ prod_i e_i ] with e_i = P(u_i > -t_i | u_<i) = Phi(t_i), where each u_i is
// drawn from N(0, 1) truncated to (-t_i, inf) by inversion: u_i = -Phi^-1(v_i e_i), v_i ~ U(0, 1). Every sample
// lands inside the orthant, so no sample is wasted (plain Monte Carlo would count hits); with a fixed set of v the
// estimate is a smooth function of a. Sigma = I + 11^T has a closed-form Cholesky factor whose below-diagonal entries
// are constant down each column: L_ii = sqrt(2 - S_i), L_ji = L_ii - 1 / L_ii (j > i), S_i = sum_{k<i} L_ki^2
// (from Sigma_ii = 2 and Sigma_ji = 1). Like the official code the a are sorted ascending first (the tightest
// constraint first lowers the variance; P is symmetric in the a because Sigma is) and the gradient is un-permuted.
//
// Gradients.
//   D = 1:  dP/da = phi(a / sqrt 2) / sqrt 2.
//   D = 2:  dP/da_1 = phi(h_1) Phi((h_2 - rho h_1) / sqrt(1 - rho^2)) / sqrt 2, h = a / sqrt 2 (and symmetric).
//   D >= 3: the exact derivative of the estimate with its draws v held fixed (reverse mode through t_i, e_i, u_i,
//           with du_i/de_i = -v_i / phi(u_i)); O(D) per sample because the columns of L are constant. Its mean is the
//           gradient of P, and finite differences of the estimate check it. (The official code uses another
//           unbiased estimator of the same gradient, dP/da_k = p_k(0) P(z_-k > 0 | z_k = 0), sampled by Genz again.)
//
// The loss (the official criterion.py with `margin` and an explicit std):
//   d = min(mu_y - mu_i, margin)  (B, D);  a = d / sigma;  loss = 1 - mean_b P(N(a_b, Sigma) > 0).
// The margin stops pushing rows already right by `margin`. sigma is a positive scalar: a fixed number or a Var (e.g.
// exp(log_sigma), learned as in the official examples/toy.py). The batch normalisation of the logits that the official
// code applies with an explicit std is not done here (the caller scales its logits).
// Gradient normalisation (named in the paper's recipe): GradientNormalizer below divides the parameter gradient by a
// running mean of its norm (momentum 0.9, floored at 0.01), applied between backward and the step - as a
// `GradientNormalizer` in public training code of that family does (its repository not confirmed: our reading).
//
// Determinism: the uniforms v come from a counter-based hash of (seed, row, sample, dimension), so a row's estimate
// depends on the seed, the sample count and its row index only - not on the thread count or the evaluation order.
// What it is not: a general multivariate normal CDF (only Sigma = I + 11^T), nor a quasi-Monte-Carlo integrator.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "autograd/ops.h"

namespace dl::nn {

// ---- scalar building blocks (double precision) ---------------------------------------------------------------
double normal_cdf(double x);       // Phi(x) = erfc(-x / sqrt 2) / 2, accurate in the lower tail
double normal_pdf(double x);       // phi(x)
double normal_quantile(double p);  // Phi^-1(p), p in (0, 1): an Abramowitz-Stegun 26.2.23 start, then Halley steps
// P(X < h, Y < k) for a standard bivariate normal with correlation r, |r| < 0.925: the Drezner-Wesolowsky
// integral Phi(h) Phi(k) + (1 / 2 pi) int_0^r exp(-(h^2 - 2 t h k + k^2) / (2 (1 - t^2))) / sqrt(1 - t^2) dt,
// after t = sin(theta), on 20 Gauss-Legendre nodes (Genz's BVNU takes 12 at this |r|; 20 reach double precision).
double bvn_cdf(double h, double k, double r);

struct OrthantOptions {
  int samples = 16;        // Genz samples per row (the official default)
  uint64_t seed = 0;       // the draws; change it per step to see fresh noise
  bool force_genz = false; // use Genz for D = 1, 2 as well (tests: the two methods agree)
};
struct OrthantValue {
  double p = 0;   // P(N(a, I + 11^T) > 0)
  double se = 0;  // Monte Carlo standard error of p (0 for the closed forms)
};
// One row: a (D), optional grad (D) receives dp/da. `row` picks the row's draws.
OrthantValue orthant_prob(const double* a, int64_t D, double* grad, const OrthantOptions& o, uint64_t row = 0);

// ---- autograd ----------------------------------------------------------------------------------------------------
// a (B, D) -> P (B); backward: da = dy[:, None] * dP/da (saved by the forward). Output in a's dtype.
Var positive_normal_prob(const Var& a, const OrthantOptions& o = {});

// d_i = mu_y - mu_i for the classes i != y in increasing order: logits (B, C), labels (B) -> (B, C - 1).
Var exact_deltas(const Var& logits, const Tensor& labels);

struct ExactOptions {
  double margin = INFINITY;  // d is clipped at margin (before the division by sigma); inf = no margin
  OrthantOptions orthant;
};
// 1 - mean_b P(correct) (shape []). sigma: a Var with one element (> 0), or a fixed value.
Var exact_loss(const Var& logits, const Tensor& labels, const Var& sigma, const ExactOptions& o = {});
Var exact_loss(const Var& logits, const Tensor& labels, double sigma, const ExactOptions& o = {});

// ---- gradient normalisation --------------------------------------------------------------------------------------
// m <- momentum m + (1 - momentum) |g| (m = |g| at the first call), then g <- g / max(m, floor), over all params
// together; returns |g| / max(m, floor).
struct GradientNormalizer {
  double momentum = 0.9, floor = 0.01;
  double moving_norm = 0;
  bool first = true;
  double apply(const std::vector<Var>& params);
};

}  // namespace dl::nn
