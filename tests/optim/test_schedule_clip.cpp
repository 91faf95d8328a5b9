// tests/optim/test_schedule_clip.cpp - learning-rate schedules (recorded reference-formula values and hand
// values), global-norm clipping against torch.nn.utils.clip_grad_norm_, gradient accumulation.
#include <cmath>
#include <nlohmann/json.hpp>

#include "op_harness.h"
#include "optim/clip.h"
#include "optim/schedule.h"
#include "optim/sgd.h"
#include "tiny_model.h"

using namespace dl;
using namespace dl::test;
using namespace dl::optim;
using json = nlohmann::json;

namespace {

// ---- schedules ----
TEST(Schedule, MatchesReferenceFormulas) {
  TensorFile f = load_safetensors(fixture_path("optim/schedules.safetensors"));
  double base = std::stod(f.metadata.at("base_lr")), min_lr = std::stod(f.metadata.at("min_lr"));
  int64_t W = std::stoll(f.metadata.at("warmup")), T = std::stoll(f.metadata.at("total"));
  FactorParams fp;
  fp.warmup_steps = W;
  fp.decay_factor = std::stod(f.metadata.at("decay_factor"));
  fp.steps_per_decay = std::stoll(f.metadata.at("steps_per_decay"));
  fp.steps_per_cycle = std::stoll(f.metadata.at("steps_per_cycle"));
  std::map<std::string, Schedule> s{{"constant", constant_schedule()},
                                    {"linear_warmup", linear_warmup(W)},
                                    {"warmup_linear_decay", warmup_linear_decay(W, T)},
                                    {"warmup_cosine", warmup_cosine(W, T)},
                                    {"warmup_cosine_min", warmup_cosine(W, T, min_lr)},
                                    {"inverse_sqrt", inverse_sqrt(W)}};
  json factors = json::parse(f.metadata.at("factors"));
  for (auto& [name, spec] : factors.items()) s.emplace(name, factor_schedule(spec.get<std::string>(), fp));
  Tensor steps = f.at("steps");
  ASSERT_EQ(s.size(), 11u);
  for (auto& [name, sched] : s) {
    Tensor got = Tensor::empty(steps.shape(), DType::f64);
    for (int64_t i = 0; i < steps.numel(); i++) got.data<double>()[i] = sched(steps.data<int64_t>()[i], base);
    EXPECT_TRUE(all_close(got, f.at(name), kAgreeF64, name + " = " + sched.str()));
  }
}

TEST(Schedule, HandComputedValues) {
  // linear warmup over 4 steps then constant 0.1: 0, 0.025, 0.05, 0.075, 0.1, 0.1
  Schedule w = linear_warmup(4);
  std::vector<double> expect{0, 0.025, 0.05, 0.075, 0.1, 0.1};
  for (int s = 0; s < 6; s++) EXPECT_NEAR(w(s, 0.1), expect[s], 1e-15) << s;
  // cosine, warmup 2, total 6, base 1: at step 4 halfway (p = 0.5) -> 0.5; step 6 -> 0; past the end stays 0
  Schedule c = warmup_cosine(2, 6);
  EXPECT_NEAR(c(1, 1.0), 0.5, 1e-15);
  EXPECT_NEAR(c(2, 1.0), 1.0, 1e-15);
  EXPECT_NEAR(c(4, 1.0), 0.5, 1e-15);
  EXPECT_NEAR(c(6, 1.0), 0.0, 1e-15);
  EXPECT_NEAR(c(9, 1.0), 0.0, 1e-15);
  EXPECT_NEAR(warmup_cosine(2, 6, 0.1)(4, 1.0), 0.55, 1e-15);
  // linear decay: warmup 2, total 6: step 4 -> (6-4)/(6-2) = 0.5
  EXPECT_NEAR(warmup_linear_decay(2, 6)(4, 2.0), 1.0, 1e-15);
  // inverse sqrt with warmup 4: step 2 -> 0.5/2 = 0.25 (base 1); step 4 -> 1/2; step 16 -> 1/4
  Schedule r = inverse_sqrt(4);
  EXPECT_NEAR(r(2, 1.0), 0.25, 1e-15);
  EXPECT_NEAR(r(4, 1.0), 0.5, 1e-15);
  EXPECT_NEAR(r(16, 1.0), 0.25, 1e-15);
  // LRA's default string is the same function as inverse_sqrt
  FactorParams p;
  p.warmup_steps = 4;
  Schedule lra = factor_schedule("constant * linear_warmup * rsqrt_decay", p);
  for (int s : {0, 1, 3, 4, 5, 100}) EXPECT_DOUBLE_EQ(lra(s, 0.05), r(s, 0.05)) << s;
  // decay_every 10 by 0.5, no constant: independent of base
  p.steps_per_decay = 10;
  EXPECT_DOUBLE_EQ(factor_schedule("decay_every", p)(25, 123.0), 0.25);
}

TEST(Schedule, UnknownFactorListsTheKnownOnes) {
  try {
    factor_schedule("constant * linear_warmup * rsqrt");
    FAIL();
  } catch (const ShapeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("unknown factor 'rsqrt'"), std::string::npos) << m;
    for (auto& k : known_factors()) EXPECT_NE(m.find(k), std::string::npos) << "should list " << k << ": " << m;
  }
  EXPECT_THROW(inverse_sqrt(0), ShapeError);
  EXPECT_THROW(warmup_cosine(10, 10), ShapeError);
  ScheduleConfig bad;
  bad.kind = "cosine";
  EXPECT_THROW(make_schedule(bad), ShapeError);
}

TEST(Schedule, MakeScheduleByName) {
  ScheduleConfig c;
  c.kind = "constant * linear_warmup * rsqrt_normalized_decay";
  c.warmup = 100;
  Schedule s = make_schedule(c);
  EXPECT_DOUBLE_EQ(s(100, 0.01), 0.01);  // fairseq-style: peaks at base
  EXPECT_DOUBLE_EQ(s(400, 0.01), 0.005);
  c = ScheduleConfig();
  c.kind = "warmup_cosine";
  c.warmup = 10;
  c.total = 110;
  EXPECT_DOUBLE_EQ(make_schedule(c)(60, 2.0), 1.0);
}

TEST(Schedule, ApplySetsEveryGroupFromItsBaseLr) {
  Var a(randn({2}), true), b(randn({2}), true);
  ParamGroup g0 = make_group({a}, 0.1), g1 = make_group({b}, 1e-3);
  SGD opt({g0, g1});
  Schedule s = linear_warmup(10);
  apply_schedule(opt, s, 5);
  EXPECT_DOUBLE_EQ(opt.lr(0), 0.05);
  EXPECT_DOUBLE_EQ(opt.lr(1), 5e-4);
  apply_schedule(opt, s, 20);
  EXPECT_DOUBLE_EQ(opt.lr(0), 0.1);
  EXPECT_DOUBLE_EQ(opt.lr(1), 1e-3);
}

// ---- clipping ----
TEST(Clip, MatchesTorchClipGradNorm) {
  TensorFile f = load_safetensors(fixture_path("optim/clip.safetensors"));
  json cases = json::parse(f.metadata.at("cases"));
  for (auto& [c, v] : cases.items()) {
    double max_norm = v[0].get<double>();
    double q = v[1].is_string() ? INFINITY : v[1].get<double>();
    std::vector<Var> ps;
    for (int i = 0; i < 3; i++) {
      Var p(zeros(f.at("g" + std::to_string(i)).shape()), true);
      p.mutable_grad() = f.at("g" + std::to_string(i)).clone();
      ps.push_back(p);
    }
    ps.push_back(Var(zeros({3}), true));  // no gradient: ignored, as torch does
    double total = clip_grad_norm(ps, max_norm, q);
    EXPECT_NEAR(total, f.at("total." + c).item(), 1e-5 * std::abs(f.at("total." + c).item())) << c;
    for (int i = 0; i < 3; i++)
      EXPECT_TRUE(
          all_close(ps[i].grad(), f.at("clipped." + c + ".g" + std::to_string(i)), kFixture, c + " g" + std::to_string(i)));
    EXPECT_FALSE(ps[3].grad().defined());
  }
}

TEST(Clip, HandValueAndNonFinite) {
  Var a(zeros({2}), true), b(zeros({1}), true);
  a.mutable_grad() = from_vector(std::vector<float>{3, 0}, {2});
  b.mutable_grad() = from_vector(std::vector<float>{4}, {1});
  EXPECT_DOUBLE_EQ(grad_norm({a, b}), 5.0);
  EXPECT_DOUBLE_EQ(clip_grad_norm({a, b}, 1.0), 5.0);
  EXPECT_NEAR(a.grad().to_vector()[0], 0.6, 1e-6);
  EXPECT_NEAR(b.grad().to_vector()[0], 0.8, 1e-6);
  b.mutable_grad() = from_vector(std::vector<float>{INFINITY}, {1});
  EXPECT_THROW(clip_grad_norm({a, b}, 1.0, 2.0, true), ShapeError);
}

// ---- accumulation ----
TEST(Accumulation, BothWaysEqualTheFullBatchGradient) {
  // loss = mean over rows of sum((y - t)^2)/O; four micro-batches of 2 rows vs one batch of 8
  TinyMLP m(3, 5, 2, 7);
  Generator g(11);
  Tensor x = randn({8, 3}, g), t = randn({8, 2}, g);
  auto backward_mean = [&](const Tensor& xb, const Tensor& tb, double scale) {
    Var y = m.forward(Var(xb));
    Tensor dy = mul_scalar(sub(y.data(), tb), 2.0 / (double)y.numel() * scale);  // d mean((y - t)^2) / dy
    y.backward(dy);
  };
  auto grads = [&] {
    std::vector<Tensor> out;
    for (auto& p : m.parameters()) out.push_back(p.grad().clone());
    return out;
  };
  backward_mean(x, t, 1.0);
  auto full = grads();
  // (a) scale each micro-batch loss by 1/k
  m.zero_grad();
  GradAccumulation acc(4);
  int steps = 0;
  for (int i = 0; i < 4; i++) {
    backward_mean(x.narrow(0, 2 * i, 2), t.narrow(0, 2 * i, 2), acc.loss_scale());
    steps += acc.micro_batch_done();
  }
  EXPECT_EQ(steps, 1);
  EXPECT_EQ(acc.pending(), 0);
  auto way_a = grads();
  // (b) plain micro-batch losses, then scale_grads once
  m.zero_grad();
  for (int i = 0; i < 4; i++) backward_mean(x.narrow(0, 2 * i, 2), t.narrow(0, 2 * i, 2), 1.0);
  scale_grads(m.parameters(), 0.25);
  auto way_b = grads();
  for (size_t i = 0; i < full.size(); i++) {
    EXPECT_TRUE(all_close(way_a[i], full[i], kAgreeF32, "accumulated (loss scaled) vs full batch"));
    EXPECT_TRUE(all_close(way_b[i], full[i], kAgreeF32, "accumulated (grads scaled) vs full batch"));
  }
  EXPECT_THROW(GradAccumulation(0), ShapeError);
}

}  // namespace
