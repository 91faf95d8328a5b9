// tests/apps/test_unargmaxable.cpp - the unargmaxable-class check (apps/unargmaxable): the constructed cases of
// Grivas et al. (a point inside a triangle; identical rows split by their biases), agreement with a convex-hull
// oracle in 2-D, random Gaussian heads, the two prevention transforms, the reflection search never claiming a class
// the LP refutes, and the executable on a file it reads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>

#include "app_test_util.h"
#include "apps/common/results.h"
#include "apps/unargmaxable/unargmaxable.h"
#include "tensor/safetensors.h"

using namespace unargmax;

namespace {

Head head(const std::vector<std::vector<double>>& rows, std::vector<double> b = {}) {
  Head h;
  h.C = (int64_t)rows.size(), h.d = (int64_t)rows[0].size();
  for (auto& r : rows) h.W.insert(h.W.end(), r.begin(), r.end());
  h.b = std::move(b);
  return h;
}

Head gaussian(int64_t C, int64_t d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n(0, 1);
  Head h;
  h.C = C, h.d = d;
  for (int64_t i = 0; i < C * d; i++) h.W.push_back(n(rng));
  return h;
}

// Indices of the 2-D points that are vertices of their convex hull (Andrew's monotone chain, collinear points
// excluded) - the argmaxable classes of a bias-free 2-D head (Cover 1967).
std::vector<int64_t> hull_vertices(const Head& h) {
  std::vector<int64_t> idx(h.C);
  for (int64_t i = 0; i < h.C; i++) idx[i] = i;
  std::sort(idx.begin(), idx.end(),
            [&](int64_t a, int64_t b) { return h.w(a, 0) < h.w(b, 0) || (h.w(a, 0) == h.w(b, 0) && h.w(a, 1) < h.w(b, 1)); });
  auto cross = [&](int64_t o, int64_t a, int64_t b) {
    return (h.w(a, 0) - h.w(o, 0)) * (h.w(b, 1) - h.w(o, 1)) - (h.w(a, 1) - h.w(o, 1)) * (h.w(b, 0) - h.w(o, 0));
  };
  std::vector<int64_t> hull;
  for (int pass = 0; pass < 2; pass++) {
    const size_t start = hull.size();
    for (int64_t p : idx) {
      while (hull.size() >= start + 2 && cross(hull[hull.size() - 2], hull.back(), p) <= 0) hull.pop_back();
      hull.push_back(p);
    }
    hull.pop_back();
    std::reverse(idx.begin(), idx.end());
  }
  std::sort(hull.begin(), hull.end());
  return hull;
}

}  // namespace

TEST(Unargmaxable, APointInsideATriangleCannotWin) {
  // no bias: class 3 lies inside the triangle of the others, so some other class always scores higher
  Head h = head({{0, 0}, {2, 0}, {0, 2}, {0.5, 0.5}});
  Report r = check_head(h);
  EXPECT_EQ(r.unargmaxable, (std::vector<int64_t>{3}));
  EXPECT_EQ(r.classes[3].decided_by, "lp");
  for (int64_t i = 0; i < 3; i++) {
    ASSERT_TRUE(r.classes[i].argmaxable);
    EXPECT_EQ(argmax_of(h, r.classes[i].witness), i) << "the witness must make its class the argmax";
  }
  // moved outside the triangle, it becomes a hull vertex and argmaxable
  Head out = head({{0, 0}, {2, 0}, {0, 2}, {3, 3}});
  EXPECT_TRUE(check_head(out).unargmaxable.empty());
  // with the LP for every class the verdicts are the same
  Options o;
  o.exact_all = true;
  EXPECT_EQ(check_head(h, o).unargmaxable, (std::vector<int64_t>{3}));
}

TEST(Unargmaxable, IdenticalRowsAreDecidedByTheirBiases) {
  Head h = head({{1, 0}, {1, 0}, {0, 1}}, {0.0, 0.5, 0.0});
  EXPECT_EQ(check_head(h).unargmaxable, (std::vector<int64_t>{0})) << "row 1 beats row 0 everywhere by 0.5";
  Head tie = head({{1, 0}, {1, 0}, {0, 1}}, {0.0, 0.0, 0.0});
  EXPECT_EQ(check_head(tie).unargmaxable, (std::vector<int64_t>{0, 1})) << "an exact tie never wins strictly";
}

TEST(Unargmaxable, AgreesWithTheConvexHullIn2D) {
  for (uint64_t seed : {1, 2, 3, 4, 5}) {
    Head h = gaussian(40, 2, seed);  // 40 points in the plane: most are inside their hull
    Report r = check_head(h);
    std::vector<int64_t> argmaxable;
    for (int64_t i = 0; i < h.C; i++)
      if (r.classes[i].argmaxable) argmaxable.push_back(i);
    EXPECT_EQ(argmaxable, hull_vertices(h)) << "seed " << seed;
    EXPECT_GT(r.unargmaxable.size(), 20u) << "seed " << seed;
  }
}

TEST(Unargmaxable, RandomHighDimensionalHeadsHaveNone) {
  Head h = gaussian(300, 32, 7);  // C >> d + 1, yet in 32 dimensions every Gaussian row is a hull vertex
  Report r = check_head(h);
  EXPECT_TRUE(r.unargmaxable.empty());
  EXPECT_GT(r.by_reflect, 0);
}

TEST(Unargmaxable, ThePreventionTransformsLeaveNone) {
  Head h = gaussian(40, 2, 11);
  ASSERT_FALSE(check_head(h).unargmaxable.empty());
  EXPECT_TRUE(check_head(unit_norm_rows(h)).unargmaxable.empty()) << "unit rows lie on the circle: all hull vertices";
  EXPECT_TRUE(check_head(nearest_neighbour_bias(h)).unargmaxable.empty()) << "nearest-neighbour argmax: a Voronoi cell each";
}

TEST(Unargmaxable, ReflectionNeverClaimsWhatTheLpRefutes) {
  for (uint64_t seed : {21, 22, 23}) {
    Head h = gaussian(60, 3, seed);
    h.b.resize(60);
    std::mt19937_64 rng(seed);
    for (auto& v : h.b) v = std::normal_distribution<double>(0, 1)(rng);
    Options exact;
    exact.exact_all = true;
    Report lp = check_head(h, exact);
    for (int64_t i = 0; i < h.C; i++) {
      std::vector<double> x;
      if (reflect_search(h, i, 2500, &x)) {
        EXPECT_TRUE(lp.classes[i].argmaxable) << "class " << i << " seed " << seed;
        EXPECT_EQ(argmax_of(h, x), i);
      }
    }
    EXPECT_EQ(check_head(h).unargmaxable, lp.unargmaxable) << "seed " << seed;
  }
}

TEST(Unargmaxable, TheExecutableReadsAHeadAndNamesBadInput) {
  const std::string d = dl::test::app_temp_dir("unargmax"), exe = std::string(DL_BINARY_DIR) + "/unargmaxable";
  dl::Tensor w = dl::Tensor::empty({4, 2}), b = dl::zeros({4});
  const float rows[8] = {0, 0, 2, 0, 0, 2, 0.5f, 0.5f};
  std::copy(rows, rows + 8, w.data<float>());
  dl::save_safetensors(d + "/head.safetensors", {{"lm_head.weight", w}, {"lm_head.bias", b}});
  ASSERT_EQ(std::system((exe + " --file " + d + "/head.safetensors --weight lm_head.weight --bias lm_head.bias --json " + d +
                         "/r.json > " + d + "/out.txt 2>&1")
                            .c_str()),
            0)
      << dl::harness::read_text(d + "/out.txt");
  EXPECT_NE(dl::harness::read_text(d + "/out.txt").find("1 unargmaxable: 3"), std::string::npos)
      << dl::harness::read_text(d + "/out.txt");
  nlohmann::json j = nlohmann::json::parse(dl::harness::read_text(d + "/r.json"));
  EXPECT_EQ(j.at("unargmaxable"), nlohmann::json::array({3}));
  ASSERT_EQ(std::system((exe + " --file " + d + "/head.safetensors --weight lm_head.weight --transform unit_norm > " + d +
                         "/unit.txt 2>&1")
                            .c_str()),
            0);
  EXPECT_NE(dl::harness::read_text(d + "/unit.txt").find("0 unargmaxable"), std::string::npos);
  EXPECT_NE(std::system((exe + " --file " + d + "/head.safetensors --weight nope > " + d + "/bad.txt 2>&1").c_str()), 0);
  EXPECT_NE(dl::harness::read_text(d + "/bad.txt").find("no tensor 'nope' (its 2-D tensors: lm_head.weight [4, 2])"),
            std::string::npos)
      << dl::harness::read_text(d + "/bad.txt");
}
