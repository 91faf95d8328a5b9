// tests/apps/test_studies.cpp - the studies app (apps/studies): FAVOR+ approximates softmax attention better with more
// random features and worse with larger query/key norms, elu+1 does not converge to it, and the study writes its
// table, JSON and plots.
#include <gtest/gtest.h>

#include <filesystem>

#include "app_test_util.h"
#include "apps/common/results.h"
#include "apps/studies/attention_approx.h"

using namespace studies;

namespace {
double mean_error(const std::string& kind, int L, int m, double scale) {
  double s = 0;
  for (int seed = 0; seed < 3; seed++) s += approx_error(kind, L, m, scale, seed);
  return s / 3;
}
}  // namespace

TEST(StudiesAttentionApprox, FavorConvergesToSoftmaxAndEluDoesNot) {
  const double e16 = mean_error("favor", 256, 16, 0.25), e1024 = mean_error("favor", 256, 1024, 0.25);
  EXPECT_LT(e1024, 0.1) << "with small norms and many features FAVOR+ is close to softmax attention";
  EXPECT_LT(e1024, e16 / 4) << "64x the features: about 8x less error (1/sqrt(m))";
  EXPECT_GT(mean_error("favor", 256, 256, 1.0), 2 * mean_error("favor", 256, 256, 0.25))
      << "the estimator's variance grows with |q|^2 + |k|^2";
  // elu+1 is a different kernel: at a scale where softmax attention is far from uniform, it stays off
  EXPECT_GT(mean_error("elu", 256, 0, 1.0), 0.5);
  EXPECT_THROW(approx_error("cosine", 16, 0, 1.0, 0), std::invalid_argument);
}

TEST(StudiesAttentionApprox, WritesItsTableAndPlots) {
  ApproxOptions o;
  o.out = dl::test::app_temp_dir("studies_aa");
  o.features = {16, 64}, o.lengths = {128}, o.cost_lengths = {128}, o.length = 128, o.m = 32, o.seeds = 2, o.d_model = 32;
  run_attention_approx(o);
  const std::string md = dl::harness::read_text(o.out + "/attention_approx.md");
  EXPECT_NE(md.find("| error vs m | favor | 0.5 | 128 | 16 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| performer (m = 32) | 128 |"), std::string::npos) << md;
  EXPECT_TRUE(std::filesystem::exists(o.out + "/attention_approx.json"));
  EXPECT_TRUE(std::filesystem::exists(o.out + "/plots/error_vs_features.dat"));
}
