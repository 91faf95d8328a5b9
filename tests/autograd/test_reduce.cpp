// tests/autograd/test_reduce.cpp - reductions: finite differences and PyTorch (one OpCase each), indices,
// errors, fast path == plain path, and thread-count independence.
#include <omp.h>

#include <cmath>

#include "op_harness.h"

using namespace dl;
using namespace dl::test;

// clang-format off
static std::vector<OpCase> reduce_cases() {
  Shape X{2, 3, 4};
  return {
      {"sum_dims_keepdim", {randn_input(X)}, [](auto& x) { return sum(x[0], {0, 2}, true); }},
      {"sum_dim1", {randn_input(X)}, [](auto& x) { return sum(x[0], {1}); }},
      {"sum_all", {randn_input({3, 4})}, [](auto& x) { return sum(x[0]); }},
      // a broadcast (stride-0) input: the plain path copies it
      {"sum_expanded", {randn_input({3, 1})}, [](auto& x) { return sum(expand(x[0], {2, 3, 4}), {0, 1}); }},
      {"mean_dims", {randn_input(X)}, [](auto& x) { return mean(x[0], {1, 2}); }},
      {"mean_all", {randn_input({3, 4})}, [](auto& x) { return mean(x[0]); }},
      {"mean_last_keepdim", {randn_input(X)}, [](auto& x) { return mean(x[0], {-1}, true); }},
      {"var_unbiased", {randn_input({3, 5})}, [](auto& x) { return var(x[0], {1}); }},
      {"var_biased_keepdim", {randn_input(X)}, [](auto& x) { return var(x[0], {0, 2}, false, true); }},
      {"var_all", {randn_input({3, 4})}, [](auto& x) { return var(x[0], {}); }},
      {"max_dim1", {randn_input({3, 4, 5})}, [](auto& x) { return max(x[0], 1).values; }},
      {"max_dim0_keepdim", {randn_input({3, 4})}, [](auto& x) { return max(x[0], 0, true).values; }},
      {"min_last", {randn_input({3, 4})}, [](auto& x) { return min(x[0], -1).values; }},
      {"logsumexp_dim1", {randn_input({3, 4, 5})}, [](auto& x) { return logsumexp(x[0], {1}); }},
      {"logsumexp_dims_keepdim", {randn_input(X)}, [](auto& x) { return logsumexp(x[0], {0, 2}, true); }},
      // |x| ~ 50: exp would overflow float32 without the max shift
      {"logsumexp_large", {randn_input({3, 4}, 50.0)}, [](auto& x) { return logsumexp(x[0], {-1}); }},
  };
}
// clang-format on

DL_OP_TESTS(Reduce, reduce_cases());

TEST(Reduce, MaxMinReturnFirstIndexAndArgmaxAgrees) {
  Tensor x = from_vector(std::vector<float>{1, 5, 5, 2, -1, 0, -1, 3}, {2, 4});
  ValuesIndices mx = max(x, 1), mn = min(x, 1);
  EXPECT_EQ(mx.values.to_vector(), (std::vector<float>{5, 3}));
  EXPECT_EQ(mx.indices.dtype(), DType::i64);
  EXPECT_EQ(mx.indices.at({0}), 1);  // first of the tied 5s
  EXPECT_EQ(mx.indices.at({1}), 3);
  EXPECT_EQ(mn.indices.at({0}), 0);
  EXPECT_EQ(mn.indices.at({1}), 0);  // first of the tied -1s
  EXPECT_EQ(argmax(x, 1).to_vector(), mx.indices.to_vector());
  EXPECT_EQ(argmin(x, 0, true).shape(), (Shape{1, 4}));
  EXPECT_EQ(argmin(x, 0, true).to_vector(), (std::vector<float>{1, 1, 1, 0}));
}

TEST(Reduce, MaxGradientGoesToTheSelectedElementOnly) {
  Var x(from_vector(std::vector<float>{1, 5, 5, 2}, {1, 4}), true);
  VarIndices m = max(x, 1);
  m.values.backward(ones({1}));
  EXPECT_EQ(x.grad().to_vector(), (std::vector<float>{0, 1, 0, 0}));
}

TEST(Reduce, NaNPropagatesThroughMaxLikePyTorch) {
  Tensor x = from_vector(std::vector<float>{1, NAN, 3}, {3});
  ValuesIndices m = max(x, 0);
  EXPECT_TRUE(std::isnan(m.values.item()));
  EXPECT_EQ(m.indices.item(), 1);
}

TEST(Reduce, LogsumexpOfAllMinusInfIsMinusInf) {
  Tensor x = full({2, 3}, -INFINITY);
  Tensor y = logsumexp(x, {1});
  EXPECT_TRUE(std::isinf(y.at({0})) && y.at({0}) < 0);
}

TEST(Reduce, WholeTensorSumAndMeanShapes) {
  Tensor x = arange(0.0, 10.0, 1.0, DType::f64).reshape({2, 5});
  EXPECT_EQ(sum(x).shape(), Shape{});
  EXPECT_DOUBLE_EQ(sum(x).item(), 45.0);
  EXPECT_DOUBLE_EQ(mean(x).item(), 4.5);
  EXPECT_EQ(sum(x, {0, 1}, true).shape(), (Shape{1, 1}));
}

// The plain path (permute + copy) and the fast paths (contiguous rows, column strips) must agree.
TEST(Reduce, FastPathAgreesWithPlain) {
  Generator g(5);
  Tensor x = randn({16, 33, 70}, g);                           // contiguous: fast paths
  Tensor xt = x.transpose(0, 2).contiguous().transpose(0, 2);  // same values, non-contiguous: plain path
  for (Dims d : {Dims{2}, Dims{1}, Dims{0}, Dims{0, 1}, Dims{1, 2}, Dims{0, 2}, Dims{}}) {
    EXPECT_TRUE(all_close(sum(x, d), sum(xt, d), kAgreeF32, "sum"));
    EXPECT_TRUE(all_close(var(x, d), var(xt, d), kAgreeF32, "var"));
    EXPECT_TRUE(all_close(logsumexp(x, d), logsumexp(xt, d), kAgreeF32, "logsumexp"));
    EXPECT_TRUE(all_close(amax(x, d), amax(xt, d), kAgreeF32, "amax"));
  }
  // against a float64 reference
  Tensor ref = sum(x.to(DType::f64), {0, 2});
  EXPECT_TRUE(all_close(sum(x, {0, 2}), ref, kAgreeF32, "sum vs f64"));
}

TEST(Reduce, ResultsDoNotDependOnThreadCount) {
  Generator g(6);
  Tensor x = randn({3, 200000}, g);  // long rows: chunked partial sums
  int prev = omp_get_max_threads();
  omp_set_num_threads(1);
  Tensor s1 = sum(x, {1}), a1 = sum(x), v1 = var(x, {0});
  omp_set_num_threads(2);
  Tensor s2 = sum(x, {1}), a2 = sum(x), v2 = var(x, {0});
  omp_set_num_threads(prev);
  EXPECT_EQ(s1.to_vector(), s2.to_vector());
  EXPECT_EQ(a1.item(), a2.item());
  EXPECT_EQ(v1.to_vector(), v2.to_vector());
}

// ---- errors ----
TEST(ReduceErrors, BadDimNamesOpDimAndShape) {
  Tensor x = ones({2, 3});
  try {
    (void)sum(x, {3});
    FAIL();
  } catch (const ShapeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("sum"), std::string::npos) << m;
    EXPECT_NE(m.find("dim 3"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, 3]"), std::string::npos) << m;
  }
  EXPECT_THROW(mean(x, {-3}), ShapeError);
  EXPECT_THROW(max(x, 2), ShapeError);
  EXPECT_THROW(logsumexp(x, {0, 0}), ShapeError);  // a repeated dim
  EXPECT_THROW(sum(ones({2}, DType::i64)), ShapeError);
}
