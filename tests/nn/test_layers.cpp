// tests/nn/test_layers.cpp - nn/layers.h against PyTorch (tests/fixtures/nn_layers.py) and finite differences.
#include "nn/layers.h"

#include "nn_test_util.h"

using namespace dl;
using namespace dl::test;
using namespace dl::nn;

namespace {

// One fixture: build the module, load its state, run `fwd` on the fixture's input, compare everything.
template <class M, class F> void expect_matches(const std::string& name, M& m, F fwd, Tol tol = kFixture) {
  TensorFile f = nn_fixture(name);
  load_fixture_state(m, f);
  Var x = fixture_input(f);
  Var y = fwd(m, x);
  EXPECT_TRUE(check_fixture(m, f, y, {{"input", x}}, tol)) << name;
}

auto fwd = [](auto& m, const Var& x) { return m.forward(x); };

}  // namespace

TEST(LayersPyTorch, Linear) {
  Generator g(0);
  Linear a(5, 4, g);
  expect_matches("linear", a, fwd);
  Linear b(5, 4, g, false);
  expect_matches("linear_nobias", b, fwd);
}

TEST(LayersPyTorch, Embedding) {
  Generator g(0);
  Embedding m(10, 4, g);
  TensorFile f = nn_fixture("embedding");
  load_fixture_state(m, f);
  Var y = m.forward(f.at("input"));
  EXPECT_TRUE(check_fixture(m, f, y, {}));
}

TEST(LayersPyTorch, Norms) {
  LayerNorm ln(6);
  expect_matches("layer_norm", ln, fwd);
  RMSNorm rms(6);
  expect_matches("rms_norm", rms, fwd);
}

TEST(LayersPyTorch, Activations) {
  GELU gelu_exact, gelu_t(true);
  SiLU si;
  GLU gl;
  expect_matches("gelu", gelu_exact, fwd);
  expect_matches("gelu_tanh", gelu_t, fwd);
  expect_matches("silu", si, fwd);
  expect_matches("glu", gl, fwd);
}

TEST(LayersPyTorch, Blocks) {
  Generator g(0);
  FeedForward ff(6, 12, 0.1, g);
  ff.eval();  // the fixture has no dropout
  expect_matches("feed_forward", ff, fwd);
  GLUBlock gb(6, 8, 0.0, g);
  expect_matches("glu_block", gb, fwd);
}

TEST(LayersPyTorch, BatchNormTrainUpdatesRunningStats) {
  for (std::string name : {"batch_norm_2d", "batch_norm_3d"}) {
    BatchNorm1d bn(4);
    bn.train();
    TensorFile f = nn_fixture(name + "_train");
    load_fixture_state(bn, f);
    Var x = fixture_input(f);
    Var y = bn.forward(x);
    EXPECT_TRUE(check_fixture(bn, f, y, {{"input", x}})) << name;
    auto sd = bn.state_dict();
    EXPECT_TRUE(all_close(sd["running_mean"], f.at("extra.running_mean"), kFixture, name + " running_mean"));
    EXPECT_TRUE(all_close(sd["running_var"], f.at("extra.running_var"), kFixture, name + " running_var"));
    EXPECT_EQ(sd["num_batches_tracked"].item(), f.at("extra.num_batches_tracked").item());
  }
}

TEST(LayersPyTorch, BatchNormEvalUsesRunningStats) {
  for (std::string name : {"batch_norm_2d", "batch_norm_3d"}) {
    BatchNorm1d bn(4);
    bn.eval();
    expect_matches(name + "_eval", bn, fwd);
    // eval leaves the buffers alone
    TensorFile f = nn_fixture(name + "_eval");
    EXPECT_TRUE(all_close(bn.state_dict()["running_mean"], f.at("running_mean"), kFixture, "running_mean unchanged"));
  }
}

TEST(LayersBehaviour, BatchNormTrainAndEvalDiffer) {
  BatchNorm1d bn(3);
  Generator g(1);
  Var x(add_scalar(mul_scalar(randn({8, 3}, g), 2.0), 5.0));
  Tensor y_train = bn.forward(x).data();
  // train: per-channel batch mean ~0
  Tensor m = mean(y_train, {0});
  for (int c = 0; c < 3; c++) EXPECT_NEAR(m.at({c}), 0.0, 1e-5);
  bn.eval();
  Tensor y_eval = bn.forward(x).data();  // running stats after one step: mostly the initial (0, 1)
  EXPECT_GT(std::abs(y_eval.at({0, 0}) - y_train.at({0, 0})), 0.5);
}

TEST(LayersBehaviour, DropoutFollowsTrainingFlag) {
  Generator g(3);
  Dropout d(0.5, g);
  Var x(ones({1000}));
  Tensor y = d.forward(x).data();
  int zeros_n = 0;
  for (int i = 0; i < 1000; i++) zeros_n += y.at({i}) == 0;
  EXPECT_GT(zeros_n, 400);
  EXPECT_LT(zeros_n, 600);
  d.eval();
  EXPECT_TRUE(all_close(d.forward(x).data(), x.data(), kAgreeF64, "eval dropout is identity"));
}

TEST(LayersErrors, LinearFeatureMismatchNamesExpectedAndFound) {
  Generator g(0);
  Linear l(5, 4, g);
  try {
    l.forward(Var(zeros({2, 7})));
    FAIL() << "no error";
  } catch (const ShapeError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("in_features = 5"), std::string::npos) << msg;
    EXPECT_NE(msg.find("found 7"), std::string::npos) << msg;
  }
}

// ---- finite differences on tiny float64 instances ----
TEST(LayersGradcheck, AllLayers) {
  Generator g(7);
  {
    Linear m(3, 2, g);
    to_f64(m);
    Var x = randn_var({2, 3}, 1);
    EXPECT_TRUE(module_gradcheck(m, {x}, [&] { return m.forward(x); })) << "Linear";
  }
  {
    Embedding m(5, 3, g);
    to_f64(m);
    Tensor idx = from_vector(std::vector<int64_t>{0, 3, 3, 1}, {2, 2});
    EXPECT_TRUE(module_gradcheck(m, {}, [&] { return m.forward(idx); })) << "Embedding";
  }
  {
    LayerNorm m(4);
    to_f64(m);
    Var x = randn_var({3, 4}, 2);
    EXPECT_TRUE(module_gradcheck(m, {x}, [&] { return m.forward(x); })) << "LayerNorm";
  }
  {
    RMSNorm m(4);
    to_f64(m);
    Var x = randn_var({3, 4}, 3);
    EXPECT_TRUE(module_gradcheck(m, {x}, [&] { return m.forward(x); })) << "RMSNorm";
  }
  for (Shape s : {Shape{5, 3}, Shape{2, 3, 4}}) {
    BatchNorm1d m(3);
    to_f64(m);
    Var x = randn_var(s, 4);
    EXPECT_TRUE(module_gradcheck(m, {x}, [&] { return m.forward(x); })) << "BatchNorm1d train " << shape_str(s);
    m.eval();
    EXPECT_TRUE(module_gradcheck(m, {x}, [&] { return m.forward(x); })) << "BatchNorm1d eval " << shape_str(s);
  }
  {
    FeedForward m(3, 5, 0.0, g);
    to_f64(m);
    Var x = randn_var({2, 3}, 5);
    EXPECT_TRUE(module_gradcheck(m, {x}, [&] { return m.forward(x); })) << "FeedForward";
  }
  {
    GLUBlock m(3, 4, 0.0, g);
    to_f64(m);
    Var x = randn_var({2, 3}, 6);
    EXPECT_TRUE(module_gradcheck(m, {x}, [&] { return m.forward(x); })) << "GLUBlock";
  }
}
