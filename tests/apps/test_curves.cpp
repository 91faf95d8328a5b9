// tests/apps/test_curves.cpp - the step-level log (apps/common/phase.h, results.h): a metrics.csv row every log_every
// steps holding the mean training loss of the interval and the lr, evaluations in their steps' rows; a run stopped
// mid-interval and resumed logs the same rows as one that never stopped; an app's pretraining is logged like its
// fine-tuning, and the LRA learning-curve plot puts both on one step axis; fpt, pretrained_convs and classify draw
// the same step-level curves (apps/common/report.h: plot_learning_curves), with the pretraining their cache logged.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "app_test_util.h"
#include "apps/classify/classify.h"
#include "apps/common/phase.h"
#include "apps/fpt/report.h"
#include "apps/lra_benchmark/app.h"
#include "apps/lra_benchmark/config.h"
#include "nn/layers.h"
#include "optim/adam.h"
#include "apps/pretrained_convs/report.h"

using namespace dl;
namespace harness = dl::harness;

namespace {

using Toy = test::ToyModel;  // token counts -> Dropout -> Linear on the harness's toy data (app_test_util.h)

double toy_lr(int64_t step, double base) { return base * (1.0 - step / 100.0); }  // a decay the lr column must follow

// One process's view of a toy phase: every step's loss (by step, as the loss function saw it) and the curve.
struct ToyRun {
  tasks::Dataset data = dl::test::toy_data();
  Generator g{11};
  Toy m{g};
  optim::AdamW opt{m.parameters(), {}};
  tasks::Batcher batches{data, {8, 5, true, true}};
  harness::PhaseParts parts;
  std::vector<harness::CurvePoint> curve;
  std::map<int, double> step_loss;
  ToyRun() {
    parts.model = &m, parts.opt = &opt, parts.batches = &batches, parts.rngs = {{"dropout", &g}};
    parts.schedule = optim::Schedule{"toy", toy_lr};
    parts.loss = [this](const tasks::Batch& b, const harness::Step& s) {
      Var l = m.loss(b);
      step_loss[s.step] = l.item();
      return l;
    };
    parts.eval = [] { return harness::EvalPoint{0.5, 0.25}; };
  }
  harness::PhaseResult run(const harness::PhaseSpec& spec, const std::string& dir, bool resume, int stop_after = -1) {
    harness::RunContext c;
    c.out = c.dir = dir, c.label = "[toy]", c.quiet = true, c.resume = resume, c.stop_after = stop_after;
    return harness::run_phase(spec, parts, c, curve);
  }
};

std::vector<int> steps_of(const std::vector<harness::CurvePoint>& rows) {
  std::vector<int> s;
  for (auto& p : rows) s.push_back(p.step);
  return s;
}

// A plot's .dat (plot_panels): "<panel>: <series>" -> the x values of its block.
std::map<std::string, std::vector<double>> x_values(const std::string& dat) {
  std::istringstream in(dat);
  std::string line, block;
  std::map<std::string, std::vector<double>> xs;
  while (std::getline(in, line)) {
    if (line.rfind("# ", 0) == 0) block = line.substr(2);
    else if (!line.empty()) xs[block].push_back(std::stod(line));
  }
  return xs;
}

// 20 steps, an evaluation every 10, a checkpoint every 4, a row every 3
harness::PhaseSpec spec20() {
  harness::PhaseSpec s{"train", 20, 1, 1.0, 10, 4};
  s.log_every = 3;
  return s;
}

}  // namespace

TEST(Curves, ARowEveryFewStepsWithTheIntervalsMeanLossAndTheLr) {
  const std::string d = dl::test::app_temp_dir("curves_rows");
  ToyRun r;
  harness::PhaseResult res = r.run(spec20(), d, false);
  std::vector<harness::CurvePoint> rows = harness::read_metrics_csv(d + "/metrics.csv");
  // every 3 steps, plus the evaluations at 10 and 20 (the last step)
  ASSERT_EQ(steps_of(rows), (std::vector<int>{3, 6, 9, 10, 12, 15, 18, 20}));
  int prev = 0;
  for (auto& p : rows) {
    double sum = 0;
    for (int s = prev; s < p.step; s++) sum += r.step_loss.at(s);  // steps prev+1 .. p.step, 0-based prev .. p.step-1
    EXPECT_NEAR(p.train_loss, sum / (p.step - prev), 1e-5) << "row at step " << p.step;
    EXPECT_NEAR(p.lr, toy_lr(p.step - 1, 1e-3), 1e-9) << p.step;  // the lr the row's step trained with
    const bool eval = p.step % 10 == 0;
    EXPECT_EQ(p.accuracy, eval ? 0.25 : -1) << p.step;
    EXPECT_EQ(std::isnan(p.val_loss), !eval) << p.step;
    EXPECT_EQ(p.phase, "train");
    prev = p.step;
  }
  // the curve keeps the evaluations, with the same rows
  ASSERT_EQ(steps_of(r.curve), (std::vector<int>{10, 20}));
  EXPECT_NEAR(r.curve[0].train_loss, rows[3].train_loss, 1e-5);
  EXPECT_NE(res.final_loss, rows.back().train_loss);  // final_loss is still the progress bar's EMA
  // the default: about 50 rows for 100 steps (every 2), one per step below 50 steps
  EXPECT_EQ(harness::log_interval({"x", 100}), 2);
  EXPECT_EQ(harness::log_interval({"x", 199}), 3);
  EXPECT_EQ(harness::log_interval({"x", 49}), 1);
  ToyRun dflt;
  dflt.run({"train", 120, 1, 1.0, 0, 0}, d + "/default", false);
  EXPECT_EQ(harness::read_metrics_csv(d + "/default/metrics.csv").size(), 60u);
}

TEST(Curves, AStoppedRunResumesToTheSameRowsAndCurve) {
  const std::string d = dl::test::app_temp_dir("curves_resume");
  ToyRun whole;
  whole.run(spec20(), d + "/whole", false);
  for (int stop : {11, 5}) {  // after 11: the checkpoint at 8 is inside the interval 7-9; after 5: inside 4-6
    const std::string part = d + "/part" + std::to_string(stop);
    {
      ToyRun killed;  // as a SIGKILL: rows 9 and 10 (or 6-ish) are in metrics.csv, the checkpoint is older
      EXPECT_THROW(killed.run(spec20(), part, false, stop), harness::Interrupted);
    }
    ToyRun resumed;  // a fresh process
    harness::PhaseResult r = resumed.run(spec20(), part, true);
    EXPECT_EQ(r.start, stop == 11 ? 8 : 4);
    EXPECT_EQ(harness::read_text(part + "/metrics.csv"), harness::read_text(d + "/whole/metrics.csv")) << "stopped at " << stop;
    ASSERT_EQ(resumed.curve.size(), whole.curve.size());
    for (size_t i = 0; i < whole.curve.size(); i++)
      EXPECT_EQ(resumed.curve[i].to_json().dump(), whole.curve[i].to_json().dump()) << i;
  }
}

TEST(Curves, ATornLastLineIsDroppedOnResume) {
  const std::string d = dl::test::app_temp_dir("curves_torn");
  harness::write_text_atomic(d + "/metrics.csv",
                             "cell,phase,step,train_loss,val_loss,accuracy,lr\n[a],train,3,0.5,nan,-1,0.1\n"
                             "[a],train,6,0.4,nan,-1,0.1\n[a],train,1");  // "...,12,..." cut by a kill
  harness::truncate_metrics_csv(d + "/metrics.csv", "train", 3);
  EXPECT_EQ(harness::read_text(d + "/metrics.csv"),
            "cell,phase,step,train_loss,val_loss,accuracy,lr\n[a],train,3,0.5,nan,-1,0.1\n");
}

// The LRA app's miniature cell: self-pretraining (4 steps) then fine-tuning (6 steps) on ListOps.
static std::string write_preset(const std::string& dir) {
  std::ofstream(dir + "/mini.json") << R"({
    "tasks": ["listops"], "models": ["transformer"], "regimes": ["scratch", "spt-masked"],
    "defaults": {"d_model": 16, "layers": 1, "heads": 2, "batch": 8, "steps": 6, "warmup": 2, "eval_every": 3,
                 "eval_batches": 2, "checkpoint_every": 2, "pretrain_steps": 4, "seq_len": 64, "train_size": 64,
                 "val_size": 16, "test_size": 16}
  })";
  return dir + "/mini.json";
}

TEST(Curves, PretrainingIsLoggedAndPlottedBeforeFineTuning) {
  const std::string d = dl::test::app_temp_dir("curves_lra");
  harness::Experiment e = lra::experiment();
  harness::Preset p = lra::load_preset(write_preset(d));
  auto cells = harness::expand_cells(e, p, p.values, {0}, {});
  harness::SweepOptions o;
  o.out = d + "/out", o.quiet = true;
  harness::run_cells(e, p, cells, o);
  const harness::Cell& spt = cells.at(1);
  ASSERT_EQ(spt.value("regime"), "spt-masked");
  std::vector<harness::CurvePoint> rows = harness::read_metrics_csv(harness::cell_dir(o.out, spt) + "/metrics.csv");
  std::vector<std::string> where;
  for (auto& r : rows) where.push_back(r.phase + " " + std::to_string(r.step));
  // short phases: a row every step (log_every's default), pretraining first
  EXPECT_EQ(where, (std::vector<std::string>{"pretrain 1", "pretrain 2", "pretrain 3", "pretrain 4", "finetune 1", "finetune 2",
                                             "finetune 3", "finetune 4", "finetune 5", "finetune 6"}));
  for (auto& r : rows) EXPECT_TRUE(std::isfinite(r.train_loss) && r.train_loss > 0 && r.lr >= 0) << r.phase << r.step;

  // stopped inside pretraining (after 3 steps: checkpoint at 2) and inside fine-tuning, then resumed: the same log
  harness::SweepOptions part = o;
  part.out = d + "/part", part.stop_after = 3;
  EXPECT_THROW(harness::run_cells(e, p, {spt}, part), harness::Interrupted);
  part.resume = true;
  EXPECT_THROW(harness::run_cells(e, p, {spt}, part), harness::Interrupted);
  part.stop_after = -1;
  harness::run_cells(e, p, {spt}, part);
  EXPECT_EQ(harness::read_text(harness::cell_dir(part.out, spt) + "/metrics.csv"),
            harness::read_text(harness::cell_dir(o.out, spt) + "/metrics.csv"));

  // the plot's training-loss panel: pretraining at steps 1-4, fine-tuning continuing at 5-10 after it
  harness::write_reports(e, p, o.out);
  const std::string dat = harness::read_text(o.out + "/plots/listops.dat");
  std::map<std::string, std::vector<double>> xs = x_values(dat);
  EXPECT_EQ(xs["training loss: transformer spt-masked (pretraining)"], (std::vector<double>{1, 2, 3, 4})) << dat;
  EXPECT_EQ(xs["training loss: transformer spt-masked"], (std::vector<double>{5, 6, 7, 8, 9, 10})) << dat;
  EXPECT_EQ(xs["training loss: transformer scratch"], (std::vector<double>{5, 6, 7, 8, 9, 10})) << dat;
  EXPECT_EQ(xs["validation accuracy: transformer scratch"], (std::vector<double>{7, 10})) << dat;
}

// ---- fpt, pretrained_convs and classify: the same curves from finished cells (no training needed) ----

// `steps` rows of `phase` in a metrics.csv, one per step, with an evaluation at the last.
static void write_log(const std::string& path, const std::string& phase, int steps) {
  for (int s = 1; s <= steps; s++) {
    harness::CurvePoint p;
    p.phase = phase, p.step = s, p.train_loss = 2.0 / s, p.lr = 1e-3, p.accuracy = s == steps ? 0.5 : -1;
    harness::append_metrics_csv(path, "[x]", p);
  }
}

// A finished cell whose log has `steps` rows of `phase`; `cache`: the pretrained model it names (extra.pretrained).
static harness::CellResult finished(const std::string& out, std::vector<std::string> axes, std::vector<std::string> values,
                                    int seed, const std::string& phase, int steps, const std::string& cache = "") {
  harness::CellResult r;
  r.cell = harness::Cell{axes, values, seed, {}};
  r.metrics = {{"val_acc", 0.5}, {"test_acc", 0.5}, {"test_not_a_label", 0.0}};
  r.test_examples = 100, r.extra["val_examples"] = 100;
  if (!cache.empty()) r.extra["pretrained"] = {{"file", cache + "/model.safetensors"}, {"source", "language"}};
  write_log(harness::cell_dir(out, r.cell) + "/metrics.csv", phase, steps);
  return r;
}

TEST(Curves, EveryAppPlotsItsStepLevelLogAfterItsCachedPretraining) {
  const std::string d = dl::test::app_temp_dir("curves_apps");
  const std::string cache = d + "/cache";
  write_log(cache + "/metrics.csv", "lm", 4);  // a shared pretraining of 4 logged steps
  harness::Preset p;
  p.name = "test";
  {  // fpt: the language model's steps 1-4, then the arm's training at 5-10; an arm without a cache starts at 5
    const std::string out = d + "/fpt";
    std::vector<harness::CellResult> rs;
    for (int seed : {0, 1}) rs.push_back(finished(out, {"task", "arm"}, {"bit_xor", "fpt"}, seed, "train", 6, cache));
    rs.push_back(finished(out, {"task", "arm"}, {"bit_xor", "random"}, 0, "train", 6));
    fpt::fpt_report(out, p, rs);
    auto xs = x_values(harness::read_text(out + "/plots/bit_xor.dat"));
    EXPECT_EQ(xs["training loss: fpt (pretraining)"], (std::vector<double>{1, 2, 3, 4}));
    EXPECT_EQ(xs["training loss: fpt"], (std::vector<double>{5, 6, 7, 8, 9, 10}));
    EXPECT_EQ(xs["training loss: random"], (std::vector<double>{5, 6, 7, 8, 9, 10}));
    EXPECT_EQ(xs["validation accuracy: fpt"], (std::vector<double>{10}));
  }
  {  // pretrained_convs: span corruption (the cache's log), then fine-tuning
    const std::string out = d + "/pconv";
    std::vector<std::string> axes = {"task", "model", "regime"};
    std::vector<harness::CellResult> rs = {finished(out, axes, {"sentiment", "lightconv", "pretrained"}, 0, "finetune", 3, cache),
                                           finished(out, axes, {"sentiment", "lightconv", "scratch"}, 0, "finetune", 3)};
    pconv::pconv_report(out, p, rs);
    auto xs = x_values(harness::read_text(out + "/plots/sentiment.dat"));
    EXPECT_EQ(xs["training loss: lightconv pretrained (pretraining)"], (std::vector<double>{1, 2, 3, 4}));
    EXPECT_EQ(xs["training loss: lightconv pretrained"], (std::vector<double>{5, 6, 7}));
    EXPECT_EQ(xs["training loss: lightconv scratch"], (std::vector<double>{5, 6, 7}));
  }
  {  // classify: training only, a point every logged step
    const std::string out = d + "/classify";
    std::vector<harness::CellResult> rs = {finished(out, {"task", "layer"}, {"listops", "s4d"}, 0, "train", 5)};
    classify::experiment().report(out, p, rs);
    auto xs = x_values(harness::read_text(out + "/plots/listops.dat"));
    EXPECT_EQ(xs["training loss: s4d"], (std::vector<double>{1, 2, 3, 4, 5}));
  }
}
