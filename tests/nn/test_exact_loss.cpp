// tests/nn/test_exact_loss.cpp - nn/exact_loss.h: the official unit-test oracle, symmetric cases with known answers,
// the closed forms and Genz against a brute Monte Carlo of the stochastic classifier itself, Genz against the
// bivariate normal, finite differences (logits and sigma, C = 2, 3, 5), PyTorch-recorded values for C = 2 and 3
// (tests/fixtures/nn_exact.py), determinism, gradient normalisation and the error messages.
#include "nn/exact_loss.h"

#include <cmath>

#include "nn_test_util.h"

using namespace dl;
using namespace dl::test;
using namespace dl::nn;

namespace {

struct NoParams : nn::Module {
  std::string type_name() const override { return "NoParams"; }
};

// P(argmax(mu + sigma eps) = y), eps ~ N(0, I_C), counted over n draws: the definition, not the orthant integral.
struct Brute {
  double p, se;
};
Brute brute_correct(const std::vector<double>& mu, int64_t y, double sigma, int n, uint64_t seed) {
  Generator g(seed);
  const int64_t C = (int64_t)mu.size();
  Tensor eps = randn({n, C}, g, DType::f64);
  const double* pe = eps.data<double>();
  int64_t hits = 0;
  for (int s = 0; s < n; s++) {
    int64_t best = 0;
    for (int64_t i = 1; i < C; i++)
      if (mu[i] + sigma * pe[s * C + i] > mu[best] + sigma * pe[s * C + best]) best = i;
    hits += best == y;
  }
  double p = (double)hits / n;
  return {p, std::sqrt(p * (1 - p) / n)};
}

// a_i = (mu_y - mu_i) / sigma for i != y, in class order
std::vector<double> deltas(const std::vector<double>& mu, int64_t y, double sigma) {
  std::vector<double> a;
  for (size_t i = 0; i < mu.size(); i++)
    if ((int64_t)i != y) a.push_back((mu[y] - mu[i]) / sigma);
  return a;
}

}  // namespace

TEST(ExactLoss, OfficialOracleTwoClasses) {
  // tinkoff-ai/exact tests/test_criterion.py: logits [-1, 3], label 1 -> accuracy Phi(4 / sqrt 2), to 5 decimals
  Var x(from_vector(std::vector<double>{-1, 3}, {1, 2}));
  Tensor y = from_vector(std::vector<int64_t>{1}, {1});
  const double want = 1 - normal_cdf(4 / std::sqrt(2.0));
  EXPECT_NEAR(exact_loss(x, y, 1.0).item(), want, 1e-12);
  ExactOptions genz;
  genz.orthant.force_genz = true, genz.orthant.samples = 1024;
  EXPECT_NEAR(exact_loss(x, y, 1.0, genz).item(), want, 1e-5) << "Genz on one dimension is exact too";
  EXPECT_NEAR(normal_cdf(4 / std::sqrt(2.0)), 0.99766, 1e-5);
}

TEST(ExactLoss, EqualLogitsGiveOneOverC) {
  // all logits equal: by symmetry every class wins with probability 1 / C
  for (int64_t C : {2, 3}) {
    std::vector<double> a((size_t)(C - 1), 0.0);
    EXPECT_NEAR(orthant_prob(a.data(), C - 1, nullptr, {}).p, 1.0 / (double)C, 1e-13) << "C = " << C;
  }
  for (int64_t C : {5, 10}) {
    std::vector<double> a((size_t)(C - 1), 0.0);
    OrthantOptions o;
    o.samples = 4000;
    OrthantValue r = orthant_prob(a.data(), C - 1, nullptr, o);
    EXPECT_GT(r.se, 0);
    EXPECT_NEAR(r.p, 1.0 / (double)C, 4 * r.se) << "C = " << C << " se " << r.se;
  }
}

TEST(ExactLoss, BivariateNormalKnownValues) {
  // Phi2(0, 0; r) = 1/4 + asin(r) / (2 pi) (Sheppard); r = 0 factorises; Phi2(h, inf) = Phi(h)
  for (double r : {-0.9, -0.5, 0.0, 0.3, 0.5, 0.9})
    EXPECT_NEAR(bvn_cdf(0, 0, r), 0.25 + std::asin(r) / (2 * M_PI), 1e-14) << "r = " << r;
  EXPECT_NEAR(bvn_cdf(0.7, -1.3, 0.0), normal_cdf(0.7) * normal_cdf(-1.3), 1e-15);
  EXPECT_NEAR(bvn_cdf(0.4, 9.0, 0.5), normal_cdf(0.4), 1e-14);
  EXPECT_NEAR(bvn_cdf(-9.0, 0.4, 0.5), 0.0, 1e-14);
  // P(X < h, Y < k) + P(X < h, Y > k) = Phi(h): the second is Phi2(h, -k; -r)
  EXPECT_NEAR(bvn_cdf(0.8, -0.3, 0.5) + bvn_cdf(0.8, 0.3, -0.5), normal_cdf(0.8), 1e-14);
  EXPECT_NE(error_of([] { bvn_cdf(0, 0, 0.95); }).find("|r| >= 0.925"), std::string::npos);
}

TEST(ExactLoss, NormalQuantileInvertsTheCdf) {
  for (double p : {1e-300, 1e-100, 1e-20, 1e-5, 0.01, 0.3, 0.5, 0.7, 0.99, 1 - 1e-10})
    EXPECT_NEAR(normal_cdf(normal_quantile(p)) / p, 1.0, 1e-13) << "p = " << p;
  EXPECT_NEAR(normal_quantile(0.975), 1.959963984540054, 1e-14);
  EXPECT_THROW(normal_quantile(0.0), std::invalid_argument);
}

TEST(ExactLoss, ClosedFormsMatchTheStochasticClassifier) {
  // C = 2 and 3: the orthant integral equals the hit rate of argmax(mu + sigma eps) = y
  Generator g(7);
  for (int64_t C : {2, 3}) {
    for (int rep = 0; rep < 3; rep++) {
      Tensor m = randn({C}, g, DType::f64);
      std::vector<double> mu(m.data<double>(), m.data<double>() + C);
      const int64_t y = rep % C;
      const double sigma = 0.7;
      std::vector<double> a = deltas(mu, y, sigma);
      double p = orthant_prob(a.data(), C - 1, nullptr, {}).p;
      Brute b = brute_correct(mu, y, sigma, 200000, 100 + rep);
      EXPECT_NEAR(p, b.p, 4 * b.se + 1e-9) << "C = " << C << " rep " << rep;
    }
  }
}

TEST(ExactLoss, GenzMatchesTheStochasticClassifier) {
  Generator g(11);
  for (int64_t C : {4, 6, 10}) {
    Tensor m = randn({C}, g, DType::f64);
    std::vector<double> mu(m.data<double>(), m.data<double>() + C);
    const int64_t y = 1;
    mu[y] += 1.0;  // a likely but not certain winner
    std::vector<double> a = deltas(mu, y, 0.8);
    OrthantOptions o;
    o.samples = 20000;
    OrthantValue r = orthant_prob(a.data(), C - 1, nullptr, o);
    Brute b = brute_correct(mu, y, 0.8, 200000, 5);
    EXPECT_NEAR(r.p, b.p, 4 * std::hypot(r.se, b.se)) << "C = " << C << ": genz " << r.p << " +- " << r.se;
  }
}

TEST(ExactLoss, GenzOnThreeClassesMatchesTheBivariateNormal) {
  const double a[2] = {0.3, 1.2};
  double g_exact[2], g_genz[2];
  OrthantValue exact = orthant_prob(a, 2, g_exact, {});
  OrthantOptions o;
  o.force_genz = true, o.samples = 20000;
  OrthantValue genz = orthant_prob(a, 2, g_genz, o);
  EXPECT_NEAR(genz.p, exact.p, 4 * genz.se);
  EXPECT_LT(genz.se, 3e-3);
  // the gradient of the estimate is an unbiased estimate of the gradient
  EXPECT_NEAR(g_genz[0], g_exact[0], 5e-3);
  EXPECT_NEAR(g_genz[1], g_exact[1], 5e-3);
}

TEST(ExactLoss, FiniteDifferencesLogitsAndSigma) {
  NoParams none;
  for (int64_t C : {2, 3, 5}) {
    for (double margin : {(double)INFINITY, 0.8}) {
      Var x = randn_var({4, C}, 20 + C);
      Var sigma(full({}, 0.9, DType::f64), true);
      Tensor y = from_vector(std::vector<int64_t>{0, C - 1, 1, 0}, {4});
      ExactOptions o;
      o.margin = margin;
      o.orthant.samples = 64, o.orthant.seed = 3;
      EXPECT_TRUE(module_gradcheck(none, {x, sigma}, [&] { return exact_loss(x, y, sigma, o); }))
          << "C = " << C << " margin " << margin;
    }
  }
  // Genz forced on C = 3 (one random dimension) and the raw orthant op on D = 4
  Var x = randn_var({3, 3}, 31);
  Tensor y = from_vector(std::vector<int64_t>{2, 0, 1}, {3});
  ExactOptions o;
  o.orthant.force_genz = true, o.orthant.samples = 32;
  EXPECT_TRUE(module_gradcheck(none, {x}, [&] { return exact_loss(x, y, 0.5, o); })) << "forced Genz, C = 3";
  Var a = randn_var({3, 4}, 32);
  EXPECT_TRUE(module_gradcheck(none, {a}, [&] { return positive_normal_prob(a, o.orthant); })) << "orthant op, D = 4";
}

TEST(ExactLoss, MatchesPyTorch) {
  // tests/fixtures/nn_exact.py: C = 2 with torch.distributions.Normal, C = 3 with Phi2 integrated on a fine grid
  NoParams none;
  for (const char* name : {"exact_c2", "exact_c3"}) {
    TensorFile f = nn_fixture(name);
    Var x = fixture_input(f), sigma = fixture_input(f, "input2");
    ExactOptions o;
    o.margin = f.at("extra.margin").item();
    EXPECT_TRUE(check_fixture(none, f, exact_loss(x, f.at("input1"), sigma, o), {{"input", x}, {"input2", sigma}},
                              kAgreeF64))
        << name;
  }
}

TEST(ExactLoss, DeterministicForASeed) {
  Var x = randn_var({6, 7}, 40, false);
  Tensor y = from_vector(std::vector<int64_t>{0, 1, 2, 3, 4, 5}, {6});
  ExactOptions o;
  o.orthant.seed = 9;
  const double l1 = exact_loss(x, y, 1.0, o).item(), l2 = exact_loss(x, y, 1.0, o).item();
  EXPECT_EQ(l1, l2);
  o.orthant.seed = 10;
  EXPECT_NE(exact_loss(x, y, 1.0, o).item(), l1) << "another seed draws other points";
}

TEST(ExactLoss, LossFallsAsTheRightClassWins) {
  // 1 - P(correct) goes from 1 - 1/C (equal logits) towards 0 as the label's logit grows, and sigma sharpens it
  Tensor y = from_vector(std::vector<int64_t>{2}, {1});
  auto loss = [&](double boost, double sigma) {
    std::vector<double> mu = {0.1, -0.2, 0.0 + boost, 0.3, 0.0};
    return exact_loss(Var(from_vector(mu, {1, 5})), y, sigma).item();
  };
  EXPECT_GT(loss(0, 1), loss(1, 1));
  EXPECT_GT(loss(1, 1), loss(3, 1));
  EXPECT_LT(loss(5, 1), 0.01);
  EXPECT_LT(loss(1, 0.2), loss(1, 1)) << "less noise: closer to the 0-1 loss of a right argmax";
}

TEST(ExactLoss, GradientNormalizerDividesByTheRunningNorm) {
  Var p(from_vector(std::vector<double>{3, 4}, {2}), true);
  p.mutable_grad() = from_vector(std::vector<double>{3, 4}, {2});  // |g| = 5
  GradientNormalizer gn;
  EXPECT_NEAR(gn.apply({p}), 1.0, 1e-15);
  EXPECT_NEAR(p.grad().at({0}), 0.6, 1e-15);
  p.mutable_grad() = from_vector(std::vector<double>{0, 15}, {2});  // |g| = 15: m = 0.9 * 5 + 0.1 * 15 = 6
  EXPECT_NEAR(gn.apply({p}), 2.5, 1e-12);
  EXPECT_NEAR(p.grad().at({1}), 2.5, 1e-12);
}

TEST(ExactLoss, BadInputsNameTheProblem) {
  Var x(zeros({4, 3}, DType::f64));
  Tensor y = from_vector(std::vector<int64_t>{0, 1, 2, 0}, {4});
  EXPECT_NE(error_of([&] { exact_loss(Var(zeros({4}, DType::f64)), y, 1.0); }).find("expected logits (B, C)"), std::string::npos);
  EXPECT_NE(error_of([&] { exact_loss(Var(zeros({4, 1}, DType::f64)), y, 1.0); }).find("C >= 2"), std::string::npos);
  EXPECT_NE(error_of([&] { exact_loss(x, from_vector(std::vector<int64_t>{0, 1}, {2}), 1.0); }).find("expected labels (B) = (4)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { exact_loss(x, from_vector(std::vector<int64_t>{0, 3, 1, 0}, {4}), 1.0); })
                .find("label 3 at row 1 is outside [0, 3)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { exact_loss(x, from_vector(std::vector<int64_t>{0, 1, -1, 0}, {4}), 1.0); }).find("label -1 at row 2"),
            std::string::npos);
  EXPECT_NE(error_of([&] { exact_loss(x, from_vector(std::vector<float>{0, 1, 1, 0}, {4}), 1.0); }).find("int64"), std::string::npos);
  EXPECT_NE(error_of([&] { exact_loss(x, y, 0.0); }).find("sigma must be > 0"), std::string::npos);
  ExactOptions o;
  o.margin = -1;
  EXPECT_NE(error_of([&] { exact_loss(x, y, 1.0, o); }).find("margin must be > 0"), std::string::npos);
  EXPECT_NE(error_of([&] { positive_normal_prob(Var(zeros({3}, DType::f64))); }).find("positive_normal_prob: expected a (B, D)"),
            std::string::npos);
}
