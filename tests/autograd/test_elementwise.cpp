// tests/autograd/test_elementwise.cpp - elementwise and view primitives: finite differences and PyTorch.
#include <cmath>

#include "op_harness.h"

using namespace dl;
using namespace dl::test;

// clang-format off
static std::vector<OpCase> elementwise_cases() {
  Shape A{3, 4};
  auto un = [](Var (*f)(const Var&)) { return [f](const std::vector<Var>& x) { return f(x[0]); }; };
  auto pos = uniform_input(A, 0.5, 3.0);
  auto ramp = [](const Shape& s) { return arange(0.0, (double)shape_numel(s), 1.0, DType::f64).reshape(s); };
  return {
      {"add_broadcast", {randn_input(A), randn_input({4})}, [](auto& x) { return x[0] + x[1]; }},
      {"sub", {randn_input(A), randn_input(A)}, [](auto& x) { return x[0] - x[1]; }},
      {"mul_broadcast", {randn_input({2, 3, 4}), randn_input({3, 1})}, [](auto& x) { return x[0] * x[1]; }},
      {"div", {randn_input(A), uniform_input(A, 0.5, 2.0)}, [](auto& x) { return x[0] / x[1]; }},
      {"neg", {randn_input(A)}, un(neg)},
      {"pow3", {randn_input(A)}, [](auto& x) { return pow(x[0], 3.0); }},
      {"exp", {randn_input(A)}, un(exp)},
      {"log", {pos}, un(log)},
      {"sqrt", {pos}, un(sqrt)},
      {"rsqrt", {pos}, un(rsqrt)},
      {"abs", {randn_input(A)}, un(abs)},
      {"tanh", {randn_input(A)}, un(tanh)},
      {"sigmoid", {randn_input(A)}, un(sigmoid)},
      {"relu", {randn_input(A)}, un(relu)},
      {"gelu", {randn_input(A)}, [](auto& x) { return gelu(x[0]); }},
      {"gelu_tanh", {randn_input(A)}, [](auto& x) { return gelu(x[0], true); }},
      {"silu", {randn_input(A)}, un(silu)},
      {"softplus", {randn_input(A, 3.0)}, un(softplus)},
      {"elu", {randn_input(A)}, [](auto& x) { return elu(x[0]); }},
      {"clamp", {randn_input(A)}, [](auto& x) { return clamp(x[0], -0.5, 0.7); }},
      {"where", {randn_input(A), randn_input(A)},
       [](auto& x) { return where(gt(x[0].data(), zeros({}, x[0].dtype(), x[0].data().device())), x[0], x[1]); }},
      {"sin", {randn_input(A)}, un(sin)},
      {"cos", {randn_input(A)}, un(cos)},
      {"add_scalar_mul_scalar", {randn_input(A)}, [](auto& x) { return x[0] * 2.5 + 1.0; }},
      {"reshape", {randn_input(A)}, [ramp](auto& x) { return reshape(x[0], {4, 3}) * Var(ramp({4, 3}).to(x[0].dtype()).to(x[0].data().device())); }},
      {"permute", {randn_input({2, 3, 4})},
       [ramp](auto& x) { return permute(x[0], {2, 0, 1}) * Var(ramp({4, 2, 3}).to(x[0].dtype()).to(x[0].data().device())); }},
      {"narrow", {randn_input(A)}, [](auto& x) { return narrow(x[0], 1, 1, 2); }},
      {"select", {randn_input(A)}, [](auto& x) { return select(x[0], 0, 1); }},
      {"expand", {randn_input({3, 1})}, [](auto& x) { return expand(x[0], {2, 3, 4}); }},
      {"unsqueeze_squeeze", {randn_input(A)}, [](auto& x) { return squeeze(unsqueeze(x[0], 1), 1) * 2.0; }},
  };
}
// clang-format on

DL_OP_TESTS(Elementwise, elementwise_cases());

// ---- autograd engine behaviour ----
TEST(Autograd, GradientsAccumulateAcrossBackwardCalls) {
  Var x(from_vector(std::vector<float>{1, 2, 3}, {3}), true);
  Var w(from_vector(std::vector<float>{4, 5, 6}, {3}), true);
  for (int i = 0; i < 2; i++) {
    Var y = x * w;
    y.backward(ones({3}));
  }
  EXPECT_EQ(x.grad().to_vector(), (std::vector<float>{8, 10, 12}));
  x.zero_grad();
  EXPECT_FALSE(x.grad().defined());
}

TEST(Autograd, SharedSubexpressionSumsBothPaths) {
  Var x(from_vector(std::vector<float>{3}, {1}), true);
  Var y = x * x + x;  // dy/dx = 2x + 1 = 7
  y.backward();
  EXPECT_FLOAT_EQ(x.grad().item(), 7.0f);
}

TEST(Autograd, SecondBackwardWithoutRetainGraphIsAClearError) {
  Var x(from_vector(std::vector<float>{1, 2}, {2}), true);
  Var y = exp(x) * x;
  y.backward(ones({2}));
  try {
    y.backward(ones({2}));
    FAIL() << "expected an error";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("retain_graph"), std::string::npos) << e.what();
  }
}

TEST(Autograd, RetainGraphAllowsSecondBackward) {
  Var x(from_vector(std::vector<float>{1, 2}, {2}), true);
  Var y = exp(x) * x;
  y.backward(ones({2}), /*retain_graph=*/true);
  y.backward(ones({2}));
  std::vector<float> g = x.grad().to_vector();  // 2 * (e^x + x e^x)
  EXPECT_NEAR(g[0], 2 * (std::exp(1.0) * 2), 1e-4);
}

TEST(Autograd, NoGradRecordsNothing) {
  Var x(ones({2}), true);
  NoGradGuard ng;
  Var y = x * x;
  EXPECT_FALSE(y.requires_grad());
}

TEST(Autograd, DetachCutsHistory) {
  Var x(ones({2}), true);
  Var y = (x * x).detach();
  EXPECT_FALSE(y.requires_grad());
  EXPECT_TRUE(y.is_leaf());
}

TEST(Autograd, UnneededInputGradientsAreSkipped) {
  Var x(ones({2}), true);
  Var c(ones({2}) /* constant */);
  Var y = x * c;
  y.backward(ones({2}));
  EXPECT_TRUE(x.grad().defined());
  EXPECT_FALSE(c.grad().defined());
}

TEST(Autograd, BackwardOnNonScalarWithoutGradientNamesTheShape) {
  Var x(ones({2, 3}), true);
  Var y = x * 2.0;
  try {
    y.backward();
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 3]"), std::string::npos) << e.what();
  }
}

TEST(Autograd, GraphPrintsOpNames) {
  Var x(ones({2}), true);
  x.set_name("x");
  Var y = exp(x * 2.0) + x;
  std::string g = graph_string(y);
  EXPECT_NE(g.find("add"), std::string::npos) << g;
  EXPECT_NE(g.find("exp"), std::string::npos) << g;
  EXPECT_NE(g.find("mul_scalar"), std::string::npos) << g;
  EXPECT_NE(g.find("x [2]"), std::string::npos) << g;
}

TEST(Autograd, SavedTensorsAreFreedAfterBackward) {
  Var x(ones({1000}), true);
  Var y = exp(x);
  std::weak_ptr<Storage> saved = y.data().storage();
  Tensor keep_out;  // the node saved y; after backward only our Var y holds it
  auto n = y.grad_fn();
  y.backward(ones({1000}));
  EXPECT_TRUE(n->released);
}

TEST(Errors, MismatchedShapesNameOpAndShapes) {
  Var a(ones({2, 3}), true), b(ones({4}), true);
  try {
    (void)(a + b);
    FAIL();
  } catch (const ShapeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("add"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, 3]"), std::string::npos) << m;
    EXPECT_NE(m.find("[4]"), std::string::npos) << m;
  }
}

TEST(Errors, WrongDtypeIsNamed) {
  Tensor a = ones({2}), b = ones({2}, DType::i64);
  try {
    (void)add(a, b);
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("i64"), std::string::npos) << e.what();
  }
  EXPECT_THROW(exp(ones({2}, DType::i64)), ShapeError);
}

TEST(Errors, BadDimIsNamed) {
  try {
    (void)ones({2, 3}).transpose(0, 5);
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("dim 5"), std::string::npos) << e.what();
  }
}
