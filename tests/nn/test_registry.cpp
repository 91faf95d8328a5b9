// tests/nn/test_registry.cpp - every registry layer through make_layer: causality, padding, construction with defaults,
// and the error messages (bad config field, wrong channel count).
#include <gtest/gtest.h>

#include "nn/models/model_registry.h"
#include "nn/registry.h"
#include "nn/ssm/s4.h"
#include "nn/ssm/s4d.h"
#include "op_harness.h"

using dl::test::error_of;
using namespace dl;
using namespace dl::nn;
using dl::test::all_close;

// A causal layer's output at t must not change when inputs after t change.

TEST(Registry, CausalLayersDoNotLookAhead) {
  for (std::string name : {"s4", "s4d", "s4d_minimal", "dlr", "lstm", "lightconv", "dynamicconv", "dilatedconv"}) {
    Generator g(15);
    LayerConfig cfg = LayerConfig::object();
    if (name == "s4" || name == "s4d" || name == "s4d_minimal" || name == "dlr") cfg["d_state"] = 8;
    if (name == "lightconv" || name == "dynamicconv" || name == "dilatedconv") cfg["causal"] = true;
    auto layer = make_layer(name, 4, cfg, g);
    ASSERT_TRUE(layer->is_causal()) << name;
    Tensor x = randn({1, 10, 4}, g), x2 = x.clone();
    x2.narrow(1, 6, 4).copy_(randn({1, 4, 4}, g));
    NoGradGuard ng;
    Tensor y = layer->forward(Var(x), Tensor()).data(), y2 = layer->forward(Var(x2), Tensor()).data();
    EXPECT_TRUE(all_close(y.narrow(1, 0, 6), y2.narrow(1, 0, 6), {1e-5, 1e-5}, name + " prefix"));
  }
}

TEST(Registry, PaddingDoesNotLeakIntoRealPositions) {
  for (std::string name : {"s4", "s4d", "dlr", "lightconv", "dynamicconv", "dilatedconv"}) {
    Generator g(16);
    LayerConfig cfg = LayerConfig::object();
    if (name == "s4" || name == "s4d" || name == "dlr") cfg["d_state"] = 8, cfg["bidirectional"] = true;
    auto layer = make_layer(name, 4, cfg, g);
    Tensor x = randn({1, 8, 4}, g), x2 = x.clone();
    x2.narrow(1, 5, 3).copy_(randn({1, 3, 4}, g));  // change only the padding
    Tensor mask = ones({1, 8});
    mask.narrow(1, 5, 3).fill_(0.0);
    NoGradGuard ng;
    Tensor y = layer->forward(Var(x), mask).data(), y2 = layer->forward(Var(x2), mask).data();
    EXPECT_TRUE(all_close(y.narrow(1, 0, 5), y2.narrow(1, 0, 5), {1e-5, 1e-5}, name + " real positions"));
  }
}

TEST(Registry, RegistryBuildsEveryLayerWithDefaults) {
  for (std::string name : {"s4", "s4d", "s4d_minimal", "dlr", "lstm", "lightconv", "dynamicconv", "dilatedconv"}) {
    Generator g(17);
    auto layer = make_layer(name, 8, LayerConfig::object(), g);
    Tensor x = randn({2, 16, 8}, g);
    Var y = layer->forward(Var(x), Tensor());
    EXPECT_EQ(y.shape(), (Shape{2, 16, 8})) << name;
  }
}

TEST(Registry, BadConfigNamesLayerAndField) {
  Generator g(18);
  struct Case {
    std::string layer, field;
    LayerConfig cfg;
  };
  // clang-format off
  std::vector<Case> cases = {
      {"s4d", "d_state", {{"d_state", 7}}},       {"s4d", "init", {{"init", "hippo"}}},
      {"s4d", "disc", {{"disc", "euler"}}},       {"s4", "dropout", {{"dropout", 1.5}}},
      {"dlr", "d_state", {{"d_state", "big"}}},   {"lstm", "num_layers", {{"num_layers", 0}}},
      {"lightconv", "kernel_size", {{"kernel_size", 4}}}, {"dynamicconv", "num_heads", {{"num_heads", 3}}},
      {"dilatedconv", "dilation", {{"dilation", 0}}},     {"s4d_minimal", "colour", {{"colour", 1}}},
  };
  // clang-format on
  for (auto& c : cases) {
    std::string msg = error_of([&] { make_layer(c.layer, 8, c.cfg, g); });
    EXPECT_NE(msg.find("layer " + c.layer), std::string::npos) << msg;
    EXPECT_NE(msg.find("'" + c.field + "'"), std::string::npos) << msg;
  }
}

TEST(Registry, WrongChannelCountNamesExpectedAndFound) {
  for (std::string name : {"s4", "s4d", "s4d_minimal", "dlr", "lstm", "lightconv", "dynamicconv", "dilatedconv"}) {
    Generator g(19);
    auto layer = make_layer(name, 8, LayerConfig::object(), g);
    std::string msg = error_of([&] { layer->forward(Var(zeros({2, 5, 6})), Tensor()); });
    EXPECT_NE(msg.find("6 channels, expected 8"), std::string::npos) << name << ": " << msg;
    EXPECT_NE(msg.find(name), std::string::npos) << msg;
  }
}

TEST(Registry, OwnLrParameterNamesAreParameters) {
  Generator g(20);
  S4D s4d(4, S4DOptions{}, g);
  S4 s4(4, S4Options{}, g);
  auto check = [](Module& m, const std::vector<std::string>& names) {
    auto params = m.named_parameters();
    for (auto& n : names) {
      bool found = false;
      for (auto& [pn, p] : params) found |= pn == n;
      EXPECT_TRUE(found) << n;
    }
  };
  check(s4d, s4d.own_lr_parameters());
  check(s4, s4.own_lr_parameters());
  EXPECT_EQ(s4d.own_lr_parameters(),
            (std::vector<std::string>{"kernel.log_dt", "kernel.inv_A_real", "kernel.A_imag", "kernel.B"}));
}

// The model registry: "transformer" first (the registry's attention with positions), every other layer under its own
// name, then the variants; what apps ask (family, positions) comes with the entry, and a wrong name lists the known.
TEST(ModelRegistry, EveryLayerIsAModelAndTheTransformerIsAttention) {
  const std::vector<ModelEntry>& models = model_registry();
  ASSERT_FALSE(models.empty());
  EXPECT_EQ(models.front().name, "transformer");
  EXPECT_EQ(models.front().layer, "attention");
  EXPECT_TRUE(models.front().positions);
  for (const LayerEntry& e : layer_registry()) {
    if (e.name == "attention") {
      EXPECT_THROW(find_model("attention"), std::exception);
      continue;
    }
    const ModelEntry& m = find_model(e.name);
    EXPECT_EQ(m.layer, e.name);
    EXPECT_EQ(m.family, e.family) << e.name;
    EXPECT_FALSE(m.positions) << e.name;
  }
  const ModelEntry& r = find_model("s4d-random");
  EXPECT_EQ(r.layer, "s4d");
  EXPECT_EQ(r.family, LayerFamily::state_space);
  EXPECT_EQ(LayerConfig::parse(r.layer_cfg).at("init").get<std::string>(), "random");
  EXPECT_EQ(model_names().size(), layer_registry().size() + 1);  // - attention + transformer + s4d-random
}

TEST(ModelRegistry, FamiliesAreTheLayersFolders) {
  for (std::string n : {"s4", "s4d", "s4d_minimal", "dlr", "ema"}) EXPECT_EQ(find_layer(n).family, LayerFamily::state_space) << n;
  for (std::string n : {"attention", "linear_attention", "performer"}) EXPECT_EQ(find_layer(n).family, LayerFamily::attention) << n;
  for (std::string n : {"lightconv", "dynamicconv", "dilatedconv"}) EXPECT_EQ(find_layer(n).family, LayerFamily::convolution) << n;
  EXPECT_EQ(find_layer("lstm").family, LayerFamily::recurrent);
  EXPECT_EQ(find_layer("fnet").family, LayerFamily::mixing);
  EXPECT_STREQ(family_name(LayerFamily::state_space), "state-space");
}

TEST(ModelRegistry, UnknownModelListsTheKnownOnes) {
  std::string msg = error_of([] { find_model("s5"); });
  EXPECT_NE(msg.find("unknown model 's5'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("transformer"), std::string::npos) << msg;
  EXPECT_NE(msg.find("s4d-random"), std::string::npos) << msg;
}
