// tests/nn/test_losses.cpp - nn/losses.h against PyTorch (tests/fixtures/nn_models.py) and finite differences.
#include "nn/losses.h"

#include "nn_test_util.h"

using namespace dl;
using namespace dl::test;
using namespace dl::nn;

namespace {
struct NoParams : nn::Module {
  std::string type_name() const override { return "NoParams"; }
};
}  // namespace

TEST(Losses, MaskedTokenLoss) {
  NoParams none;
  TensorFile f = nn_fixture("loss_masked_ce");
  Var x = fixture_input(f);
  EXPECT_TRUE(check_fixture(none, f, masked_token_loss(x, f.at("input1")), {{"input", x}}));
}

TEST(Losses, MaskedMseAndL1) {
  NoParams none;
  TensorFile f = nn_fixture("loss_masked_mse");
  Var p = fixture_input(f), t = fixture_input(f, "input1");
  EXPECT_TRUE(check_fixture(none, f, masked_mse(p, t, f.at("input2")), {{"input", p}, {"input1", t}}));
  TensorFile f2 = nn_fixture("loss_masked_l1");
  Var p2 = fixture_input(f2), t2 = fixture_input(f2, "input1");
  EXPECT_TRUE(check_fixture(none, f2, masked_l1(p2, t2, f2.at("input2")), {{"input", p2}, {"input1", t2}}));
}

TEST(Losses, CoSENT) {
  NoParams none;
  TensorFile f = nn_fixture("loss_cosent");
  Var c = fixture_input(f);
  EXPECT_TRUE(check_fixture(none, f, cosent_loss(c, f.at("input1")), {{"input", c}}));
}

TEST(Losses, CoSENTOrdersPairs) {
  // a perfectly ordered batch (higher label, higher cosine, by a margin) has a loss near 0
  Var good(from_vector(std::vector<float>{0.9f, 0.1f, 0.5f}, {3}));
  Var bad(from_vector(std::vector<float>{0.1f, 0.9f, 0.5f}, {3}));
  Tensor labels = from_vector(std::vector<float>{2, 0, 1}, {3});
  EXPECT_LT(cosent_loss(good, labels).item(), 1e-3);
  EXPECT_GT(cosent_loss(bad, labels).item(), 10.0);
}

TEST(Losses, FiniteDifferences) {
  NoParams none;
  Var lg = randn_var({2, 3, 4}, 1);
  Tensor tg = from_vector(std::vector<int64_t>{0, -100, 3, 2, 1, -100}, {2, 3});
  EXPECT_TRUE(module_gradcheck(none, {lg}, [&] { return masked_token_loss(lg, tg); })) << "masked_token_loss";
  Var p = randn_var({2, 3, 2}, 2), t = randn_var({2, 3, 2}, 3);
  Tensor m = from_vector(std::vector<float>{1, 0, 1, 1, 1, 0}, {2, 3});
  EXPECT_TRUE(module_gradcheck(none, {p, t}, [&] { return masked_mse(p, t, m); })) << "masked_mse";
  EXPECT_TRUE(module_gradcheck(none, {p, t}, [&] { return masked_l1(p, t, m); })) << "masked_l1";
  Var c = randn_var({5}, 4);
  Tensor y = from_vector(std::vector<float>{0, 1, 2, 1, 0}, {5});
  EXPECT_TRUE(module_gradcheck(none, {c}, [&] { return cosent_loss(c, y, 2.0); })) << "cosent";
}
