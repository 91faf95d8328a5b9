// The bf16 attention's exponential (nn/fused/softmax_exp.h): its error bound against std::exp in float64, its exact
// values (0 for masked keys, 1 at the row's maximum, NaN kept), and the AVX-512 spelling bit for bit the plain one.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "nn/fused/softmax_exp.h"

namespace {

using dl::nn::softmax_exp::exp_short;

// The header's bound: 2.9e-6 from the polynomial, 7.5e-8 |x| from t = x log2(e) (measured: 7.07e-8 |x| at x = -44.8).
double bound(float x) { return 2.9e-6 + 7.5e-8 * std::abs((double)x); }
double rel_error(float x) {
  const double want = std::exp((double)x);
  return std::abs((double)exp_short(x) - want) / want;
}

// The polynomial alone: t = x log2(e) across [-1/2, 1/2], where the second term of the bound is below 3e-8. A
// coefficient off in its fifth digit breaks it (c2 + 1e-5 gives 6.4e-6).
TEST(SoftmaxExp, PolynomialWithinItsFit) {
  double worst = 0;
  for (int i = 0; i <= 200000; i++) {
    const float x = (float)((-0.5 + i / 200000.0) / M_LOG2E);
    worst = std::max(worst, rel_error(x));
  }
  EXPECT_LT(worst, 2.9e-6);
  EXPECT_GT(worst, 1e-6) << "a fit this good would be a degree-5 polynomial: is the header's bound stale?";
}

// Everything the softmax feeds it: x - max in [-87.3, 0], where the result is a normal float.
TEST(SoftmaxExp, WithinTheBoundOverTheSoftmaxRange) {
  for (int i = 0; i <= 1000000; i++) {
    const float x = (float)(-87.3 * i / 1000000.0);
    ASSERT_LE(rel_error(x), bound(x)) << "x = " << x;
  }
}

TEST(SoftmaxExp, ExactValues) {
  EXPECT_EQ(exp_short(0.f), 1.f);  // the row's maximum
  EXPECT_EQ(exp_short(-INFINITY), 0.f);  // a masked key
  EXPECT_EQ(exp_short(-88.f), 0.f);  // t = -126.96 < -126: below float32's normal range
  EXPECT_EQ(exp_short(-1e30f), 0.f);
  EXPECT_GT(exp_short(-87.f), 0.f);  // t = -125.5: kept
  EXPECT_TRUE(std::isnan(exp_short(std::numeric_limits<float>::quiet_NaN())));
}

#if defined(__AVX512F__)
// The 16-lane intrinsics give the plain function's bits: the sweep above, the specials, and the rounding ties of n
// (t exactly k + 1/2, where round-to-nearest-even and the 1.5 2^23 trick must agree).
TEST(SoftmaxExp, SixteenLanesAreThePlainFunctionBitForBit) {
  std::vector<float> xs = {0.f,    -0.f,   -INFINITY, -88.f, -87.f,
                           -87.3f, -1e30f, 1e-30f,    0.5f,  std::numeric_limits<float>::quiet_NaN()};
  for (int k = 0; k < 126; k++) xs.push_back((float)(-(k + 0.5) / M_LOG2E)), xs.push_back(std::nextafter(xs.back(), 0.f));
  for (int i = 0; i <= 100000; i++) xs.push_back((float)(-90.0 * i / 100000.0));
  while (xs.size() % 16) xs.push_back(-1.f);
  for (size_t i = 0; i < xs.size(); i += 16) {
    float got[16];
    _mm512_storeu_ps(got, dl::nn::softmax_exp::exp_short16(_mm512_loadu_ps(xs.data() + i)));
    for (int j = 0; j < 16; j++) {
      const float want = exp_short(xs[i + j]);
      if (std::isnan(want)) EXPECT_TRUE(std::isnan(got[j])) << "x = " << xs[i + j];
      else ASSERT_EQ(std::bit_cast<uint32_t>(got[j]), std::bit_cast<uint32_t>(want)) << "x = " << xs[i + j];
    }
  }
}
#endif

}  // namespace
