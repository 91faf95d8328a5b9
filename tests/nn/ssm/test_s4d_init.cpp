// tests/nn/ssm/test_s4d_init.cpp - S4D's initialisations of A (nn/ssm/s4d.h): the closed forms of S4D-Lin and
// S4D-Real, and init "random", the non-HiPPO control of the parameterisation experiment (apps/lra_benchmark's
// "s4d-random"): Re A ~ -U(0, 1], Im A = exp(z) with z ~ N(0, 1), drawn per channel and mode from the seed.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "nn/registry.h"
#include "nn/ssm/s4d.h"

using namespace dl;
using namespace dl::nn;

namespace {

// A of the kernel as (real, imaginary) parts, float64, row-major (H, N2).
struct AParts {
  std::vector<double> re, im;
};
AParts a_of(const S4DKernel& k) {
  Tensor ar = k.inv_A_real.data().to(DType::f64).contiguous(), ai = k.A_imag.data().to(DType::f64).contiguous();
  AParts a;
  for (int64_t i = 0; i < ar.numel(); i++)
    a.re.push_back(-std::exp(ar.data<double>()[i])), a.im.push_back(ai.data<double>()[i]);
  return a;
}

S4DKernel kernel(const std::string& init, int64_t H, int64_t N, uint64_t seed) {
  S4DKernelOptions o;
  o.d_state = N, o.init = init;
  Generator g(seed);
  return S4DKernel(H, o, g);
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / v.size();
}
double sd(const std::vector<double>& v) {
  const double m = mean(v);
  double var = 0;
  for (double x : v) var += (x - m) * (x - m) / (v.size() - 1);
  return std::sqrt(var);
}

}  // namespace

TEST(S4DInit, LinAndRealAreTheirClosedForms) {
  const int64_t H = 3, N = 8, N2 = N / 2;
  AParts lin = a_of(kernel("lin", H, N, 1)), real = a_of(kernel("real", H, N, 1));
  for (int64_t h = 0; h < H; h++)
    for (int64_t n = 0; n < N2; n++) {
      const int64_t i = h * N2 + n;
      EXPECT_NEAR(lin.re[i], -0.5, 1e-6);
      EXPECT_NEAR(lin.im[i], M_PI * n, 1e-5);
      EXPECT_NEAR(real.re[i], -(double)(n + 1), 1e-5);
      EXPECT_EQ(real.im[i], 0.0);
    }
}

// 64 channels x 32 modes = 2048 draws of each part: the sample moments are within a few standard errors of the
// distribution's (Re A: mean -1/2 and sd sqrt(1/12) = 0.29, se 0.0064 and 0.0026; log Im A: mean 0, sd 1, se 0.022
// and 0.016).
TEST(S4DInit, RandomDrawsBothPartsFromTheirDistributions) {
  AParts a = a_of(kernel("random", 64, 64, 7));
  ASSERT_EQ(a.re.size(), 64u * 32u);
  std::vector<double> log_im;
  for (size_t i = 0; i < a.re.size(); i++) {
    EXPECT_LT(a.re[i], 0.0) << "mode " << i << ": Re A must be negative (a stable mode)";
    EXPECT_GE(a.re[i], -1.0 - 1e-6) << "mode " << i;
    EXPECT_GT(a.im[i], 0.0) << "mode " << i << ": Im A = exp(z) is positive";
    log_im.push_back(std::log(a.im[i]));
  }
  EXPECT_NEAR(mean(a.re), -0.5, 0.03);
  EXPECT_NEAR(sd(a.re), std::sqrt(1.0 / 12), 0.03) << "Re A is not spread as U(0, 1] (constant -1/2 is S4D-Lin's)";
  EXPECT_NEAR(mean(log_im), 0.0, 0.1);
  EXPECT_NEAR(sd(log_im), 1.0, 0.08);
  // no HiPPO structure: unlike lin/inv/legs, whose every channel holds the same modes, the channels differ
  int same = 0;
  for (int64_t n = 0; n < 32; n++) same += a.im[n] == a.im[32 + n];
  EXPECT_EQ(same, 0) << "channel 0 and channel 1 share imaginary parts: not drawn per channel";
}

TEST(S4DInit, RandomIsFixedByTheSeedAndLeavesTheOtherDrawsAlone) {
  AParts a = a_of(kernel("random", 4, 16, 3)), b = a_of(kernel("random", 4, 16, 3)), c = a_of(kernel("random", 4, 16, 4));
  EXPECT_EQ(a.re, b.re);
  EXPECT_EQ(a.im, b.im);
  EXPECT_NE(a.re, c.re);
  EXPECT_NE(a.im, c.im);
  // dt is drawn before A, so the same seed gives the same dt as S4D-Lin; B is still 1
  S4DKernel r = kernel("random", 4, 16, 3), l = kernel("lin", 4, 16, 3);
  Tensor dr = r.log_dt.data().to(DType::f64).contiguous(), dl_ = l.log_dt.data().to(DType::f64).contiguous();
  for (int64_t h = 0; h < 4; h++) EXPECT_EQ(dr.data<double>()[h], dl_.data<double>()[h]);
  Tensor B = r.B.data().to(DType::f64).contiguous();  // (H, N2, 2): real, imaginary
  for (int64_t i = 0; i < B.numel(); i++) EXPECT_EQ(B.data<double>()[i], i % 2 == 0 ? 1.0 : 0.0);
}

TEST(S4DInit, RegistryAcceptsRandomAndNamesTheChoicesOtherwise) {
  Generator g(0);
  LayerConfig cfg = {{"d_state", 8}, {"init", "random"}};
  auto layer = std::dynamic_pointer_cast<S4D>(make_layer("s4d", 4, cfg, g));
  ASSERT_TRUE(layer);
  EXPECT_EQ(layer->kernel->opt.init, "random");
  cfg["init"] = "rand";
  try {
    make_layer("s4d", 4, cfg, g);
    FAIL() << "init \"rand\" was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("random"), std::string::npos) << e.what();
  }
}
