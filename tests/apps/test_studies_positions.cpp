// tests/apps/test_studies_positions.cpp - `studies positions` (apps/studies/positions.h): the RoPE score it measures
// is the rotation formula by hand and depends on t - s only, the sinusoidal table and its dot product are the
// closed forms, the tasks' targets and the accuracy (overall, beyond the training length) are what they say, the
// extrapolation test really runs the model at the longer length, the learned table's unseen rows stay at their init;
// as an experiment on the harness: bad settings are named, the old command line is read as before, a miniature run
// writes its tables and plots, and a run killed twice resumes to the uninterrupted one's results and tables.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "app_test_util.h"
#include "apps/common/results.h"
#include "apps/studies/cli.h"
#include "apps/studies/positions.h"
#include "optim/adam.h"
#include "tasks/objectives.h"

using namespace studies;
using namespace dl;

// Hand computation: with R(a) = [[cos a, -sin a], [sin a, cos a]] on each pair and a = t theta_i,
// (R(t) q) . (R(s) k) = q^T R(s - t) k = sum_i cos(phi_i) (q0 k0 + q1 k1) + sin(phi_i) (q1 k0 - q0 k1), phi_i = (s - t)
// theta_i; for HS = 4, theta_0 = 1 and theta_1 = 10000^(-2/4) = 0.01.
TEST(StudiesPositions, RopeScoreIsTheRotationFormulaAndDependsOnlyOnTheOffset) {
  const std::vector<double> q = {1, 2, 0.5, -1}, k = {3, -1, 2, 1};
  auto hand = [](double t, double s) {
    const double p0 = s - t, p1 = 0.01 * (s - t);
    return std::cos(p0) * (1 * 3 + 2 * -1) + std::sin(p0) * (2 * 3 - 1 * -1) +        // pair 0: dot 1, cross 7
           std::cos(p1) * (0.5 * 2 + -1 * 1) + std::sin(p1) * (-1 * 2 - 0.5 * 1);      // pair 1: dot 0, cross -2.5
  };
  EXPECT_NEAR(rope_score(q, k, 5, 2), hand(5, 2), 1e-12);
  EXPECT_NEAR(rope_score(q, k, 2, 5), hand(2, 5), 1e-12);
  EXPECT_NEAR(rope_score(q, k, 0, 0), 1 + 0, 1e-12);  // no rotation: the plain dot product
  for (int64_t d : {1, 7, 100, 5000}) {
    EXPECT_NEAR(rope_score(q, k, 5 + d, 2 + d), rope_score(q, k, 5, 2), 1e-9) << "shift by " << d;
    EXPECT_NEAR(rope_score(q, k, 2 + d, 5 + d), rope_score(q, k, 2, 5), 1e-9) << "shift by " << d;
  }
  EXPECT_GT(std::abs(rope_score(q, k, 5, 2) - rope_score(q, k, 2, 5)), 1) << "t - s, not |t - s|: the sign matters";
  EXPECT_THROW(rope_score({1, 2, 3}, {1, 2, 3}, 0, 0), std::invalid_argument);
}

// pe[t, 2i] = sin(t w_i), pe[t, 2i+1] = cos(t w_i), w_i = 10000^(-2i/C): for C = 4, w = (1, 0.01).
TEST(StudiesPositions, SinusoidalTableAndItsScoresByHand) {
  const Tensor pe = nn::sinusoidal_table(6, 4, DType::f64).contiguous();
  const double* p = pe.data<double>();
  const std::vector<double> row0 = {0, 1, 0, 1}, row3 = {std::sin(3.0), std::cos(3.0), std::sin(0.03), std::cos(0.03)};
  for (int i = 0; i < 4; i++) {
    EXPECT_DOUBLE_EQ(p[0 * 4 + i], row0[i]) << "pe[0][" << i << "]";
    EXPECT_NEAR(p[3 * 4 + i], row3[i], 1e-15) << "pe[3][" << i << "]";
  }
  EXPECT_NEAR(p[1 * 4 + 2], std::sin(0.01), 1e-15);
  // sin a sin b + cos a cos b = cos(a - b): pe[t] . pe[s] = cos(t - s) + cos(0.01 (t - s))
  EXPECT_NEAR(table_score(pe, 3, 1), std::cos(2.0) + std::cos(0.02), 1e-14);
  EXPECT_NEAR(table_score(pe, 5, 3), table_score(pe, 3, 1), 1e-14);
  EXPECT_NEAR(table_score(pe, 2, 2), 2.0, 1e-14);  // C / 2
  // through a bilinear form that mixes a sine and a cosine coordinate: sin(t) cos(s), not a function of t - s
  std::vector<double> A(16, 0.0);
  A[0 * 4 + 1] = 1;
  EXPECT_NEAR(table_score(pe, 3, 1, A), std::sin(3.0) * std::cos(1.0), 1e-14);
  EXPECT_GT(std::abs(table_score(pe, 3, 1, A) - table_score(pe, 5, 3, A)), 0.1);
  EXPECT_THROW(table_score(pe, 6, 0), std::invalid_argument);
}

TEST(StudiesPositions, TaskTargetsAreTheRules) {
  const SeqBatch lb = task_batch("lookback", 2, 6, 5, 2, 11), fb = task_batch("first", 2, 6, 5, 2, 11);
  const int64_t *x = lb.inputs.data<int64_t>(), *y = lb.targets.data<int64_t>(), *z = fb.targets.data<int64_t>();
  EXPECT_EQ(fb.inputs.data<int64_t>()[7], x[7]) << "same seed, same symbols";
  for (int b = 0; b < 2; b++)
    for (int t = 0; t < 6; t++) {
      EXPECT_TRUE(x[b * 6 + t] >= 0 && x[b * 6 + t] < 5);
      EXPECT_EQ(y[b * 6 + t], t < 2 ? tasks::kIgnoreIndex : x[b * 6 + t - 2]) << b << ", " << t;
      EXPECT_EQ(z[b * 6 + t], t < 1 ? tasks::kIgnoreIndex : x[b * 6]) << b << ", " << t;
    }
  EXPECT_NE(test::error_of([] { task_batch("copy", 1, 4, 3, 1, 0); }).find("unknown task 'copy'"), std::string::npos);
  EXPECT_NE(test::error_of([] { task_batch("lookback", 1, 4, 3, 4, 0); }).find("offset 4"), std::string::npos);
}

// A model that always answers symbol 3 (head weight 0, bias one-hot): its accuracy is the share of targets equal to 3,
// counted by hand over all positions and over the positions t >= train_len; and the evaluation at 4x the training
// length runs the model on inputs of that length (and a learned table too short for it is an error).
TEST(StudiesPositions, AccuracyCountsByHandAtTheLongerLength) {
  PosModelConfig c;
  c.pos = "rotary", c.vocab = 5, c.d_model = 8, c.heads = 2, c.depth = 1, c.dim_ff = 8;
  Generator g(3);
  PosModel m(c, g);
  m.head->weight.mutable_data() = zeros({5, 8});
  m.head->bias.mutable_data() = from_vector(std::vector<float>{0, 0, 0, 1, 0}, {5});
  const int64_t L = 8, T = 4 * L;
  const std::vector<SeqBatch> set = {task_batch("lookback", 3, T, 5, 2, 1), task_batch("lookback", 2, T, 5, 2, 2)};
  int64_t n = 0, hit = 0, nb = 0, hitb = 0;
  for (const SeqBatch& b : set)
    for (int64_t i = 0; i < b.targets.numel(); i++) {
      const int64_t y = b.targets.data<int64_t>()[i], t = i % T;
      if (y == tasks::kIgnoreIndex) continue;
      n++, hit += y == 3;
      if (t >= L) nb++, hitb += y == 3;
    }
  const LengthAccuracy a = task_accuracy(m, set, L);
  EXPECT_EQ(a.length, T) << "the model ran at 4x the training length";
  EXPECT_EQ(a.counted, 5 * (T - 2));
  EXPECT_EQ(a.beyond_counted, 5 * (T - L));
  EXPECT_EQ(n, a.counted);
  EXPECT_EQ(nb, a.beyond_counted);
  EXPECT_DOUBLE_EQ(a.all, (double)hit / n);
  EXPECT_DOUBLE_EQ(a.beyond, (double)hitb / nb);
  ASSERT_EQ(a.per_position.size(), (size_t)T);
  EXPECT_TRUE(std::isnan(a.per_position[1]));
  EXPECT_TRUE(std::isnan(task_accuracy(m, {task_batch("lookback", 2, L, 5, 2, 1)}, L).beyond)) << "nothing beyond L at L";
  PosModelConfig lc = c;
  lc.pos = "learned", lc.max_len = L;
  PosModel short_table(lc, g);
  EXPECT_NE(test::error_of([&] { task_accuracy(short_table, set, L); }).find("max_len = 8"), std::string::npos);
}

// The study's claim about the learned row: trained on length L only, the rows t >= L of a longer table get no
// gradient and Adam without weight decay leaves them bit-identical to their init, while the rows < L move.
TEST(StudiesPositions, LearnedRowsBeyondTheTrainingLengthStayAtInit) {
  PosModelConfig c;
  c.pos = "learned", c.vocab = 5, c.d_model = 8, c.heads = 2, c.depth = 1, c.dim_ff = 8, c.max_len = 16;
  Generator g(5);
  PosModel m(c, g);
  const Tensor before = m.learned->weight.data().clone();
  optim::AdamOptions ao;  // the study's optimizer options: weight_decay 0
  ao.lr = 1e-2;
  optim::Adam opt(m.parameters(), ao);
  for (int step = 0; step < 3; step++) {
    const SeqBatch b = task_batch("lookback", 4, 8, 5, 2, step);
    opt.zero_grad();
    cross_entropy(reshape(m.forward(b.inputs), {32, 5}), b.targets.reshape({32})).backward();
    opt.step();
  }
  const Tensor after = m.learned->weight.data().contiguous(), b0 = before.contiguous();
  for (int64_t t = 0; t < 16; t++) {
    double diff = 0;
    for (int64_t i = 0; i < 8; i++) diff += std::abs(after.data<float>()[t * 8 + i] - b0.data<float>()[t * 8 + i]);
    if (t < 8) EXPECT_GT(diff, 1e-3) << "row " << t << " was trained";
    else EXPECT_EQ(diff, 0.0) << "row " << t << " was never seen";
  }
}

// ---- the study on the harness ---------------------------------------------------------------------------------------
namespace {

using dl::test::quiet_in;

namespace harness = dl::harness;
using json = nlohmann::json;

// A miniature preset: trained at 8 for 4 steps (an evaluation every 2), tested at 8, 16 and 32; 2 seeds.
harness::Preset mini_preset(const std::string& dir, const std::vector<std::string>& tasks,
                            const std::vector<std::string>& positions) {
  json p = {{"description", "test"}, {"tasks", tasks}, {"positions", positions}, {"seeds", {0, 1}},
            {"defaults", {{"train_len", 8}, {"lengths", "8,16,32"}, {"offset", 2}, {"vocab", 5}, {"steps", 4},
                          {"eval_every", 2}, {"warmup", 1}, {"batch", 4}, {"val_examples", 4}, {"test_examples", 3},
                          {"d_model", 8}, {"heads", 2}, {"depth", 1}}}};
  const std::string path = dir + "/mini.json";
  std::ofstream(path) << p.dump(2);
  const harness::Experiment e = positions_experiment();
  return harness::load_preset(path, e.presets_dir, std::vector<harness::Axis>(e.axes.begin(), e.axes.end()));
}

}  // namespace

TEST(StudiesPositions, BadSettingsAreNamed) {
  const harness::Experiment e = positions_experiment();
  const harness::Preset p =
      harness::load_preset("default", e.presets_dir, std::vector<harness::Axis>(e.axes.begin(), e.axes.end()));
  auto error = [&](const std::vector<std::string>& values, const std::vector<std::string>& sets) {
    return test::error_of([&] { harness::expand_cells(e, p, {{values[0]}, {values[1]}}, {0}, sets); });
  };
  EXPECT_EQ(error({"lookback", "rotary"}, {}), "") << "the default preset is valid";
  EXPECT_NE(error({"lookback", "rotary"}, {"lengths=64,16"}).find("16 is below train_len 32"), std::string::npos);
  EXPECT_NE(error({"lookback", "rotary"}, {"lengths=32,x"}).find("'x' in \"32,x\""), std::string::npos);
  EXPECT_NE(error({"lookback", "rotary"}, {"offset=32"}).find("'offset'"), std::string::npos);
  EXPECT_NE(error({"lookback", "rotary"}, {"steps=0"}).find("'steps'"), std::string::npos);
  EXPECT_NE(error({"lookback", "rotary"}, {"d_model=30"}).find("head size d_model / heads = 15 must be even"),
            std::string::npos);
  EXPECT_NE(error({"lookback", "rotary"}, {"pos=alibi"}).find("--positions"), std::string::npos) << "an axis";
  EXPECT_NE(error({"lookback", "rotary"}, {"width=3"}).find("unknown field 'width'"), std::string::npos);
  EXPECT_NE(test::error_of([&] { harness::load_preset("huge", e.presets_dir, p.axes); }).find("huge"), std::string::npos);
  const std::string d = test::app_temp_dir("studies_positions_bad");
  std::ofstream(d + "/bad.json") << json{{"tasks", {"lookback"}}, {"positions", {"rotary", "alibi"}}}.dump();
  EXPECT_NE(test::error_of([&] { harness::load_preset(d + "/bad.json", e.presets_dir, p.axes); }).find("alibi"),
            std::string::npos);
}

TEST(StudiesPositions, TheOldCommandLineIsReadAsBefore) {
  using V = std::vector<std::string>;
  const LegacyFlags& f = positions_legacy_flags();
  EXPECT_EQ(legacy_args({"run", "--seeds", "3"}, f), (V{"run", "--seeds", "3"})) << "with run: the harness's flags";
  EXPECT_EQ(legacy_args({}, f), (V{"run"})) << "`studies positions` alone: the default";
  EXPECT_EQ(legacy_args({"--positions", "rotary", "--seeds", "3", "--train-len", "16", "--lengths", "16,256", "--large"}, f),
            (V{"run", "--positions", "rotary", "--seeds", "0-2", "--set", "train_len=16", "--set", "lengths=\"16,256\"",
               "--preset", "large"}));
  EXPECT_EQ(legacy_args({"--lengths=64", "--d-model=64"}, f), (V{"run", "--set", "lengths=\"64\"", "--set", "d_model=64"}));
  EXPECT_EQ(legacy_args({"--no-train", "--out", "x"}, f), (V{"analytic", "--out", "x"}));
}

TEST(StudiesPositions, MiniatureRunWritesItsTablesAndPlots) {
  const std::string d = test::app_temp_dir("studies_positions");
  const harness::Experiment e = positions_experiment();
  const harness::Preset p = mini_preset(d, {"lookback", "first"}, {"none", "sinusoidal", "learned", "rotary"});
  harness::run_cells(e, p, harness::expand_cells(e, p, p.values, p.seeds, {}), quiet_in(d + "/out"));
  harness::write_reports(e, p, d + "/out");
  const std::string md = harness::read_text(d + "/out/results.md");
  EXPECT_NE(md.find("| positions | val (T = 8) | T = 8 | T = 16 | T = 32 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| learned (added) |"), std::string::npos) << md;
  EXPECT_NE(md.find("Task first (y_t = x_0)"), std::string::npos) << md;
  EXPECT_NE(md.find("| sinusoidal pe[t]^T A pe[s], random A |"), std::string::npos) << md;
  const json j = json::parse(harness::read_text(d + "/out/results.json"));
  ASSERT_EQ(j["cells"].size(), 2u * 4 * 2);  // tasks x position types x seeds
  const json& last = j["cells"][0]["extra"]["tests"][2];
  EXPECT_EQ(last["length"], 32);
  EXPECT_EQ(last["beyond_counted"], 3 * (32 - 8));
  for (const json& c : j["cells"])
    EXPECT_EQ(c["extra"]["tests"][2]["counted"], c["axes"]["task"] == "lookback" ? 3 * (32 - 2) : 3 * (32 - 1))
        << "lookback: every position from the offset on; first: from 1";
  EXPECT_EQ(j["table"]["rows"].size(), 4u) << "the position types of the first task";
  for (const char* plot : {"lookback_accuracy_vs_length", "first_accuracy_by_position", "rope_score_vs_offset",
                           "sinusoidal_score_vs_offset"})
    EXPECT_TRUE(std::filesystem::exists(d + "/out/plots/" + std::string(plot) + ".dat")) << plot;
}

// Killed (as a SIGKILL would, no checkpoint at the kill) inside the first cell and again inside the third, resumed
// each time: every cell's accuracies, curve and validation-selected model equal the uninterrupted run's, and so do
// the tables.
TEST(StudiesPositions, AKilledRunResumesToTheUninterruptedResultsAndTables) {
  const std::string d = test::app_temp_dir("studies_positions_resume");
  const harness::Experiment e = positions_experiment();
  const harness::Preset p = mini_preset(d, {"lookback"}, {"learned", "rotary"});
  const std::vector<harness::Cell> cells = harness::expand_cells(e, p, p.values, p.seeds, {"steps=8", "eval_every=1"});
  // stopped at step 5 (checkpoint 4), then in the third cell
  const auto [whole, resumed] = dl::test::sweep_whole_and_resumed(e, p, cells, d, 4);
  dl::test::expect_same_cells_and_table(whole, resumed, {"/metrics", "/curve", "/extra/tests"});
  for (const json& c : whole["cells"]) {
    const std::string cell = c["cell"].get<std::string>();
    test::expect_identical_weights(d + "/whole/cells/" + cell + "/model.safetensors", d + "/part/cells/" + cell + "/model.safetensors");
  }
}
