// tests/autograd/test_anomaly.cpp - anomaly mode (autograd/anomaly.h): the first op whose forward output or whose
// backward gradient holds a NaN or an infinity is named - its op name as graph_string prints it, the pass and the
// shape - and a clean model trains through it unchanged. With the mode off nothing is checked.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "autograd/anomaly.h"
#include "autograd/ops.h"
#include "op_harness.h"

using namespace dl;

namespace {

// Runs f, which must throw AnomalyError; returns it.
AnomalyError anomaly_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const AnomalyError& e) {
    return e;
  }
  ADD_FAILURE() << "no AnomalyError was thrown";
  return AnomalyError("", "", "", {});
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(Anomaly, OffByDefaultAndNothingIsChecked) {
  EXPECT_FALSE(anomaly_mode());
  Var x(from_vector(std::vector<float>{1, -1, 2}, {3}), true);
  Var y = log(x);  // NaN at element 1, silently, as before
  EXPECT_TRUE(std::isnan(y.data().data<float>()[1]));
  EXPECT_NO_THROW(sum(y).backward());
}

TEST(Anomaly, GuardRestoresTheMode) {
  {
    AnomalyModeGuard on;
    EXPECT_TRUE(anomaly_mode());
    {
      AnomalyModeGuard off(false);
      EXPECT_FALSE(anomaly_mode());
    }
    EXPECT_TRUE(anomaly_mode());
  }
  EXPECT_FALSE(anomaly_mode());
}

TEST(Anomaly, SummaryNamesTheFirstBadElementAndCounts) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(non_finite_summary(from_vector(std::vector<float>{1, 2, 3}, {3})), "");
  EXPECT_EQ(non_finite_summary(from_vector(std::vector<float>{1, inf, nan}, {3})), "+Inf at element 1 (2 of 3 elements not finite)");
  EXPECT_EQ(non_finite_summary(from_vector(std::vector<double>{-INFINITY, 0}, {2})), "-Inf at element 0 (1 of 2 elements not finite)");
  EXPECT_EQ(non_finite_summary(from_vector(std::vector<int64_t>{1, 2}, {2})), "");  // integers are always finite
  // a view that is not contiguous: element order is the logical (row-major) one
  Tensor t = from_vector(std::vector<float>{1, 2, nan, 4, 5, 6}, {2, 3}).transpose(0, 1);  // (3, 2): [[1,4],[2,5],[nan,6]]
  EXPECT_EQ(non_finite_summary(t), "NaN at element 4 (1 of 6 elements not finite)");
}

TEST(Anomaly, ForwardNaNOfLogOfANegativeNamesLog) {
  AnomalyModeGuard on;
  Var x(from_vector(std::vector<float>{1, -1, 2}, {3}), true);
  Var a = mul_scalar(x, 2.0);  // a clean op first: it must not be blamed
  AnomalyError e = anomaly_of([&] { log(a); });
  EXPECT_EQ(e.op, "log");
  EXPECT_EQ(e.pass, "forward");
  EXPECT_EQ(e.shape, (Shape{3}));
  EXPECT_TRUE(contains(e.what(), "the forward of op 'log' produced NaN at element 1")) << e.what();
  EXPECT_TRUE(contains(e.what(), "output of shape [3]")) << e.what();
}

TEST(Anomaly, ForwardNaNOfZeroOverZeroNamesDivAsGraphStringPrintsIt) {
  AnomalyModeGuard on;
  Var num(from_vector(std::vector<float>{0, 1, 0, 3}, {2, 2}), true), den(from_vector(std::vector<float>{1, 1, 0, 1}, {2, 2}));
  AnomalyError e = anomaly_of([&] { div(num, den); });
  EXPECT_EQ(e.op, "div");
  EXPECT_EQ(e.shape, (Shape{2, 2}));
  EXPECT_TRUE(contains(e.what(), "NaN at element 2")) << e.what();
  AnomalyModeGuard off(false);  // the op's name is the one graph_string prints for the node
  EXPECT_TRUE(contains(graph_string(div(num, den)), "#0 " + e.op + " ")) << graph_string(div(num, den));
}

TEST(Anomaly, BackwardOnlyInfOfSqrtAtZeroNamesSqrt) {
  AnomalyModeGuard on;
  Var x(from_vector(std::vector<float>{0, 1, 4}, {3}), true), w(from_vector(std::vector<float>{1, 2, 3}, {3}), true);
  Var loss;
  EXPECT_NO_THROW(loss = sum(mul(sqrt(x), w)));  // the forward is finite: sqrt(0) = 0
  EXPECT_TRUE(contains(graph_string(loss), "sqrt"));
  AnomalyError e = anomaly_of([&] { loss.backward(); });
  EXPECT_EQ(e.op, "sqrt");  // d sqrt(x) / dx = 1 / (2 sqrt(x)) = inf at 0; mul and sum before it were finite
  EXPECT_EQ(e.pass, "backward");
  EXPECT_EQ(e.shape, (Shape{3}));
  EXPECT_TRUE(contains(e.what(), "the backward of op 'sqrt' (output of shape [3]) produced +Inf at element 0")) << e.what();
  EXPECT_TRUE(contains(e.what(), "gradient for its input 0 of shape [3]")) << e.what();
}

TEST(Anomaly, ACleanModelRaisesNothingAndGetsTheSameGradients) {
  Generator g(3);
  Var x(randn({8, 5}, g)), w1(randn({5, 6}, g), true), b1(zeros({6}), true), w2(randn({6, 3}, g), true);
  Var gamma(ones({6}), true), beta(zeros({6}), true);
  Tensor target = from_vector(std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0, 1}, {8});
  auto grads = [&] {
    for (Var* p : {&w1, &b1, &w2, &gamma, &beta}) p->zero_grad();
    Var h = layer_norm(tanh(matmul(x, w1) + b1), gamma, beta);  // (8, 6)
    Var loss = cross_entropy(matmul(sqrt(add_scalar(mul(h, h), 1.0)), w2), target);
    loss.backward();
    std::vector<Tensor> gs;
    for (Var* p : {&w1, &b1, &w2, &gamma, &beta}) gs.push_back(p->grad().clone());
    return gs;
  };
  std::vector<Tensor> off = grads(), on;
  {
    AnomalyModeGuard guard;
    EXPECT_NO_THROW(on = grads());
  }
  ASSERT_EQ(on.size(), off.size());
  for (size_t i = 0; i < off.size(); i++)
    EXPECT_EQ(0, std::memcmp(on[i].raw_data(), off[i].raw_data(), off[i].numel() * sizeof(float))) << "parameter " << i;
}
