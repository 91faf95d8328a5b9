// tests/optim/test_optimizers.cpp - SGD, Adam, AdamW against recorded torch.optim trajectories
// (tests/fixtures/optim_steps.py), parameter groups, frozen parameters and the optimiser state round trip.
#include <cstring>
#include <nlohmann/json.hpp>

#include "op_harness.h"
#include "optim/adam.h"
#include "optim/param_groups.h"
#include "optim/sgd.h"
#include "tiny_model.h"

using namespace dl;
using namespace dl::test;
using namespace dl::optim;
using json = nlohmann::json;

namespace {

// Build the optimiser the fixture's config describes (torch's group keys mapped to ours).
std::unique_ptr<Optimizer> make_from_config(const json& cfg, const std::map<std::string, Var>& params) {
  std::vector<ParamGroup> groups;
  for (auto& jg : cfg["groups"]) {
    ParamGroup g;
    g.name = "group" + std::to_string(groups.size());
    for (auto& n : jg["params"]) g.params.push_back({n.get<std::string>(), params.at(n.get<std::string>())});
    g.lr = jg["lr"].get<double>();
    g.weight_decay = jg.value("weight_decay", 0.0);
    if (jg.contains("momentum")) g.options["momentum"] = jg["momentum"];
    if (jg.contains("dampening")) g.options["dampening"] = jg["dampening"];
    if (jg.contains("nesterov")) g.options["nesterov"] = jg["nesterov"].get<bool>() ? 1.0 : 0.0;
    if (jg.contains("betas")) {
      g.options["beta1"] = jg["betas"][0];
      g.options["beta2"] = jg["betas"][1];
    }
    if (jg.contains("eps")) g.options["eps"] = jg["eps"];
    groups.push_back(g);
  }
  std::string type = cfg["optimizer"];
  if (type == "SGD") return std::make_unique<SGD>(groups);
  if (type == "Adam") return std::make_unique<Adam>(groups);
  if (type == "AdamW") return std::make_unique<AdamW>(groups);
  throw std::runtime_error("unknown optimizer " + type);
}

class TorchTrajectory : public ::testing::TestWithParam<std::string> {};

TEST_P(TorchTrajectory, EveryStepMatchesTorch) {
  TensorFile f = load_safetensors(fixture_path("optim/" + GetParam() + ".safetensors"));
  json cfg = json::parse(f.metadata.at("config"));
  std::map<std::string, Var> params{{"p0", Var(f.at("init.p0").clone(), true)}, {"p1", Var(f.at("init.p1").clone(), true)}};
  // keep raw pointers: the update must happen in place, never re-allocating a parameter
  std::map<std::string, const void*> storage;
  for (auto& [n, v] : params) storage[n] = v.data().raw_data();
  auto opt = make_from_config(cfg, params);
  EXPECT_EQ(opt->type_name(), cfg["optimizer"].get<std::string>());
  for (int s = 0; s < 5; s++) {
    for (auto& [n, v] : params) {
      std::string key = "grad." + std::to_string(s) + "." + n;
      v.mutable_grad() = f.has(key) ? f.at(key).clone() : Tensor();
    }
    opt->step();
    for (auto& [n, v] : params) {
      EXPECT_TRUE(all_close(v.data(), f.at("after." + std::to_string(s) + "." + n), kFixture,
                            GetParam() + " step " + std::to_string(s) + " " + n));
      EXPECT_EQ(v.data().raw_data(), storage[n]) << n << " was re-allocated";
    }
  }
  EXPECT_EQ(opt->step_count(), 5);
}

INSTANTIATE_TEST_SUITE_P(Optim, TorchTrajectory,
                         ::testing::Values("sgd_plain", "sgd_momentum", "sgd_dampening_wd", "sgd_nesterov", "sgd_skipped",
                                           "adam_wd", "adam_betas", "adam_skipped", "adamw_default", "adamw_wd", "adamw_groups"),
                         [](const auto& i) { return i.param; });

TEST(Optimizer, DefaultsMatchTorch) {
  AdamWOptions w;
  EXPECT_EQ(w.weight_decay, 0.01);
  EXPECT_EQ(w.eps, 1e-8);
  EXPECT_EQ(w.beta1, 0.9);
  EXPECT_EQ(w.beta2, 0.999);
  EXPECT_EQ(AdamOptions().weight_decay, 0.0);
}

TEST(Optimizer, FrozenAndGradlessParametersAreUntouched) {
  Var a(randn({4, 3}), true), frozen(randn({5}), false), unused(randn({2, 2}), true);
  Tensor frozen0 = frozen.data().clone(), unused0 = unused.data().clone(), a0 = a.data().clone();
  AdamW opt({a, frozen, unused}, AdamWOptions());
  for (int i = 0; i < 3; i++) {
    a.mutable_grad() = ones({4, 3});
    opt.step();
  }
  EXPECT_EQ(std::memcmp(frozen.data().raw_data(), frozen0.raw_data(), 5 * 4), 0);
  EXPECT_EQ(std::memcmp(unused.data().raw_data(), unused0.raw_data(), 4 * 4), 0);
  EXPECT_NE(std::memcmp(a.data().raw_data(), a0.raw_data(), 12 * 4), 0);
  OptimizerState st = opt.state_dict();
  EXPECT_TRUE(st.tensors.count("param0.exp_avg"));
  EXPECT_FALSE(st.tensors.count("param1.exp_avg")) << "a frozen parameter must get no moments";
  EXPECT_FALSE(st.tensors.count("param2.exp_avg"));
}

TEST(Optimizer, ZeroGradDropsGradients) {
  Var a(randn({3}), true);
  SGD opt({a}, SGDOptions{0.1});
  a.mutable_grad() = ones({3});
  opt.zero_grad();
  EXPECT_FALSE(a.grad().defined());
}

TEST(Optimizer, ViewsOfAParameterSeeTheUpdate) {
  Var a(zeros({2, 3}), true);
  Tensor row = a.data().select(0, 1);  // a view sharing storage
  SGD opt({a}, SGDOptions{1.0});
  a.mutable_grad() = full({2, 3}, -2.0);
  opt.step();
  EXPECT_EQ(row.to_vector(), (std::vector<float>{2, 2, 2}));
}

TEST(Optimizer, LargeTensorsUseTheSameFormula) {
  // big enough to be split across both cores: every element must still get exactly the scalar formula
  const int64_t n = 200000;
  Generator g(3);
  Var big(randn({n}, g), true);
  Var head(big.data().narrow(0, 0, 7).clone(), true), tail(big.data().narrow(0, n - 7, 7).clone(), true);
  Tensor grad = randn({n}, g);
  AdamW opt_big({big}, AdamWOptions()), opt_small({head, tail}, AdamWOptions());
  for (int i = 0; i < 3; i++) {
    big.mutable_grad() = grad.clone();
    head.mutable_grad() = grad.narrow(0, 0, 7).clone();
    tail.mutable_grad() = grad.narrow(0, n - 7, 7).clone();
    opt_big.step();
    opt_small.step();
  }
  EXPECT_EQ(std::memcmp(big.data().raw_data(), head.data().raw_data(), 7 * 4), 0);
  EXPECT_EQ(std::memcmp(big.data().narrow(0, n - 7, 7).raw_data(), tail.data().raw_data(), 7 * 4), 0);
}

TEST(Optimizer, RejectsBadConfigurations) {
  Var a(randn({3}), true);
  ParamGroup g = make_group({a}, 0.1);
  g.options["betas"] = 0.9;
  try {
    Adam opt({g});
    FAIL() << "an unknown option must be refused";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown option 'betas'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("beta1"), std::string::npos) << "lists the known options: " << e.what();
  }
  EXPECT_THROW(SGD({a}, SGDOptions{0.1, 0.0, 0.0, 0.0, true}), ShapeError);  // nesterov without momentum
  EXPECT_THROW(SGD({a, a}, SGDOptions{0.1}), ShapeError);                    // the same Var twice
}

TEST(Optimizer, StateRoundTripContinuesIdentically) {
  Generator g(5);
  Var a(randn({4, 4}, g), true), b(randn({4}, g), true);
  Var a2(a.data().clone(), true), b2(b.data().clone(), true);
  std::vector<Tensor> grads;
  for (int i = 0; i < 6; i++) grads.push_back(randn({4, 4}, g));
  SGDOptions so{0.05, 0.9, 0, 0.01, true};
  SGD o1({a, b}, so);
  for (int i = 0; i < 3; i++) {
    a.mutable_grad() = grads[i].clone();
    b.mutable_grad() = grads[i].select(0, 0).clone();
    o1.step();
  }
  OptimizerState st = o1.state_dict();
  EXPECT_TRUE(st.tensors.count("param0.momentum_buffer"));
  // a second optimiser over copies of the parameters, restored from the state
  a2.mutable_data().copy_(a.data());
  b2.mutable_data().copy_(b.data());
  SGD o2({a2, b2}, so);
  o2.load_state_dict(st);
  EXPECT_EQ(o2.step_count(), 3);
  for (int i = 3; i < 6; i++) {
    for (auto v : {a, a2}) v.mutable_grad() = grads[i].clone();
    for (auto v : {b, b2}) v.mutable_grad() = grads[i].select(0, 0).clone();
    o1.step();
    o2.step();
  }
  EXPECT_EQ(std::memcmp(a.data().raw_data(), a2.data().raw_data(), 16 * 4), 0);
  EXPECT_EQ(std::memcmp(b.data().raw_data(), b2.data().raw_data(), 4 * 4), 0);
}

TEST(Optimizer, LoadStateNamesAMissingMoment) {
  Var a(randn({3}), true);
  Adam o1({a});
  a.mutable_grad() = ones({3});
  o1.step();
  OptimizerState st = o1.state_dict();
  st.tensors.erase("param0.exp_avg_sq");
  Adam o2({Var(randn({3}), true)});
  try {
    o2.load_state_dict(st);
    FAIL() << "a missing moment must be refused";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("param0.exp_avg_sq"), std::string::npos) << e.what();
  }
  EXPECT_EQ(o2.step_count(), 0) << "a failed load changes nothing";
  SGD o3({Var(randn({3}), true)}, SGDOptions{0.1});
  EXPECT_THROW(o3.load_state_dict(o1.state_dict()), ShapeError) << "an Adam state is not an SGD state";
}

// ---- parameter groups from a module ----
class S4Like : public nn::Module {
 public:
  S4Like() {
    register_parameter("encoder.weight", zeros({8, 4}));
    register_parameter("encoder.bias", zeros({8}));
    register_parameter("layers.0.kernel.log_dt", zeros({8}));
    register_parameter("layers.0.kernel.A_real", zeros({8, 2}));
    register_parameter("layers.0.kernel.A_imag", zeros({8, 2}));
    register_parameter("layers.0.kernel.B", zeros({8, 2}));
    register_parameter("layers.0.kernel.C", zeros({8, 2}));
    register_parameter("layers.0.norm.weight", zeros({8}));
    register_parameter("layers.0.output_linear.weight", zeros({8, 8}));
    register_parameter("wte.weight", zeros({10, 8}));
    register_parameter("frozen.weight", zeros({2, 2}), false);
  }
  std::string type_name() const override { return "S4Like"; }
};

static std::map<std::string, const ParamGroup*> group_of(const std::vector<ParamGroup>& gs) {
  std::map<std::string, const ParamGroup*> m;
  for (auto& g : gs)
    for (auto& p : g.params) m[p.name] = &g;
  return m;
}

TEST(ParamGroups, S4RuleAndNoDecay) {
  S4Like m;
  GroupingOptions o;
  o.lr = 4e-3;
  o.weight_decay = 0.05;
  o.rules.push_back(s4_rule());
  o.no_decay_norm_bias_embed = true;
  auto groups = make_param_groups(m, o);
  ASSERT_EQ(groups.size(), 3u) << describe_groups(groups);
  auto g = group_of(groups);
  for (auto n : {"layers.0.kernel.log_dt", "layers.0.kernel.A_real", "layers.0.kernel.A_imag", "layers.0.kernel.B"}) {
    ASSERT_TRUE(g.count(n)) << n;
    EXPECT_EQ(g[n]->name, "ssm") << n;
    EXPECT_EQ(g[n]->lr, 1e-3);
    EXPECT_EQ(g[n]->weight_decay, 0.0);
  }
  for (auto n : {"encoder.weight", "layers.0.kernel.C", "layers.0.output_linear.weight"}) {
    EXPECT_EQ(g[n]->name, "default") << n;
    EXPECT_EQ(g[n]->lr, 4e-3);
    EXPECT_EQ(g[n]->weight_decay, 0.05);
  }
  for (auto n : {"encoder.bias", "layers.0.norm.weight", "wte.weight"}) {
    EXPECT_EQ(g[n]->name, "no_decay") << n;
    EXPECT_EQ(g[n]->lr, 4e-3);
    EXPECT_EQ(g[n]->weight_decay, 0.0);
  }
  EXPECT_FALSE(g.count("frozen.weight")) << "frozen parameters stay out";
  // the optimiser honours each group's lr and weight decay
  AdamW opt(groups);
  EXPECT_EQ(opt.num_groups(), 3u);
  EXPECT_EQ(opt.group(2).lr, 1e-3);
  EXPECT_EQ(opt.group(2).base_lr, 1e-3);
}

TEST(ParamGroups, PatternsAreConfigurableAndDecayRuleIsOptional) {
  S4Like m;
  GroupingOptions o;
  o.lr = 0.1;
  o.weight_decay = 0.01;
  o.rules.push_back(s4_rule(2e-3, {"log_dt"}));
  auto groups = make_param_groups(m, o);
  auto g = group_of(groups);
  EXPECT_EQ(g["layers.0.kernel.log_dt"]->lr, 2e-3);
  EXPECT_EQ(g["layers.0.kernel.B"]->name, "default");
  EXPECT_EQ(g["encoder.bias"]->name, "default") << "without no_decay_norm_bias_embed biases decay";
  EXPECT_EQ(groups.size(), 2u);
}

TEST(ParamGroups, DecoupledDecayOnlyWhereAsked) {
  // with zero gradients AdamW changes a parameter only through its weight decay: p *= 1 - lr * wd
  S4Like m;
  for (auto& [n, v] : m.named_parameters()) v.mutable_data().fill_(1.0);
  GroupingOptions o;
  o.lr = 0.5;
  o.weight_decay = 0.1;
  o.no_decay_norm_bias_embed = true;
  AdamW opt(make_param_groups(m, o));
  for (auto& [n, v] : m.named_parameters(true)) v.mutable_grad() = zeros(v.shape());
  opt.step();
  for (auto& [n, v] : m.named_parameters(true)) {
    // 1-D (biases, log_dt, norm weights) and embeddings (wte) do not decay
    bool decays = v.dim() >= 2 && n != "wte.weight";
    EXPECT_FLOAT_EQ(v.data().to_vector()[0], decays ? 1.0f - 0.05f : 1.0f) << n;
  }
}

}  // namespace
