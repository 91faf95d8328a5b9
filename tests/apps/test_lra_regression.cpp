// tests/apps/test_lra_regression.cpp - lra_benchmark on a regression task (the BIDMC stand-in, tasks/regression.h):
// the head and its loss learn (a test that can fail), the table reports RMSE/MAE and no accuracy, the SPT gain is the
// scratch RMSE minus the SPT RMSE, a saved model evaluates to the RMSE it reported, and a loss that does not fit
// the task is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <fstream>
#include <map>

#include "app_test_util.h"
#include "apps/common/experiment.h"
#include "apps/lra_benchmark/app.h"
#include "apps/lra_benchmark/cell.h"
#include "apps/lra_benchmark/config.h"
#include "apps/lra_benchmark/data.h"

using namespace lra;
namespace harness = dl::harness;

namespace {

using dl::test::quiet_in;

// The respiratory-rate stand-in at 256 steps (8 Hz over 32 s: above twice the highest heart rate, 2.2 Hz; at 128
// steps the pulse aliases into the respiratory band and 300 steps learned nothing), one S4D model of width 32.
std::string write_regression_preset(const std::string& dir, int steps) {
  std::string path = dir + "/reg.json";
  std::ofstream(path) << R"({
    "tasks": ["bidmc_rr"], "models": ["s4d"], "regimes": ["scratch", "spt-masked"],
    "defaults": {"d_model": 32, "layers": 2, "d_state": 32, "dropout": 0.0, "batch": 32, "steps": )"
                      << steps << R"(, "warmup": 20,
                 "eval_every": 0, "eval_batches": 4, "checkpoint_every": 0, "pretrain_steps": 20, "lr": 0.01,
                 "ssm_lr": 0.004, "seq_len": 256, "train_size": 2000, "val_size": 200, "test_size": 200}
  })";
  return path;
}

// The RMSE of predicting the training split's mean target on the validation split: what a model that learned
// nothing about the signal gets.
double mean_predictor_rmse(const CellConfig& c) {
  const auto& data = task_data(c);
  TaskShape s = shape_of(data);
  double sq = 0;
  for (auto& e : data.val.examples) sq += (e.target_features[0] - s.target_mean) * (e.target_features[0] - s.target_mean);
  return std::sqrt(sq / data.val.examples.size());
}

}  // namespace

// A learning test that can fail: 300 steps from scratch on the stand-in (about 15 s on one thread). Measured (seed 0,
// one thread): validation RMSE 1.79 breaths/min against about 6.5 for the mean predictor (0.28 of it); at lr 1e-7
// 6.48 (1.0 of it).
TEST(LraRegression, LearnsTheRespiratoryRateWellBelowTheMeanPredictor) {
  std::string d = dl::test::app_temp_dir("regression_learn");
  harness::Experiment e = experiment();
  harness::Preset p = load_preset(write_regression_preset(d, 300));
  auto run = [&](const std::vector<std::string>& sets, const std::string& out) {
    auto cells = harness::expand_cells(e, p, {{"bidmc_rr"}, {"s4d"}, {"scratch"}}, {0}, sets);
    return harness::run_cells(e, p, cells, quiet_in(d + "/" + out)).at(0);
  };
  harness::CellResult learned = run({}, "learn"), control = run({"lr=1e-7", "ssm_lr=1e-7"}, "control");
  const double base = mean_predictor_rmse(resolve_cell(p, "bidmc_rr", "s4d", "scratch", {}));
  EXPECT_GT(base, 5.0);  // U(8, 30) breaths/min: sd 6.35
  EXPECT_LT(learned.metric("val_rmse"), 0.4 * base) << "did not learn";
  EXPECT_LT(learned.metric("val_mae"), learned.metric("val_rmse") + 1e-9);  // MAE <= RMSE always
  EXPECT_GT(control.metric("val_rmse"), 0.8 * base) << "learned at lr 1e-7: the threshold tests nothing";
  EXPECT_EQ(learned.metrics.count("val_acc"), 0u);  // no accuracy for a regression task
}

TEST(LraRegression, TableReportsRmseAndTheSptGainAsTheDropInRmse) {
  std::string d = dl::test::app_temp_dir("regression_table");
  harness::Experiment e = experiment();
  harness::Preset p = load_preset(write_regression_preset(d, 10));
  harness::SweepOptions o = quiet_in(d + "/out");
  auto cells = harness::expand_cells(e, p, p.values, {0, 1}, {});
  ASSERT_EQ(cells.size(), 4u);
  std::vector<harness::CellResult> rs = harness::run_cells(e, p, cells, o);
  std::map<std::pair<std::string, int>, double> rmse;
  for (auto& r : rs) rmse[{r.cell.value("regime"), r.cell.seed}] = r.metric("test_rmse");
  const double g0 = rmse[{"scratch", 0}] - rmse[{"spt-masked", 0}], g1 = rmse[{"scratch", 1}] - rmse[{"spt-masked", 1}];
  harness::Table t = e.report(o.out, p, rs);
  ASSERT_EQ(t.rows.size(), 2u);
  const auto& cols = t.columns;
  auto col = [&](const std::string& name) { return size_t(std::find(cols.begin(), cols.end(), name) - cols.begin()); };
  const auto& spt = t.rows[1];
  EXPECT_EQ(spt[col("regime")], "spt-masked");
  EXPECT_EQ(spt[col("metric")], "RMSE");
  char want[64];
  std::snprintf(want, sizeof want, "%+.2f ± %.2f", (g0 + g1) / 2, std::abs(g0 - g1) / 2);  // se of 2 values: |a-b|/2
  EXPECT_EQ(spt[col("SPT gain (test)")], want);
  std::string md = t.markdown();
  EXPECT_EQ(md.find("accurac"), std::string::npos) << md;  // nothing about accuracy for a regression-only table
  EXPECT_NE(md.find("positive = self-pretraining lowered the error"), std::string::npos);
  // a finished cell's saved model evaluates to the RMSE it reported
  CellConfig c = resolve_cell(p, "bidmc_rr", "s4d", "scratch", {});
  c.seed = 0;
  double again = evaluate_checkpoint(c, harness::cell_dir(o.out, cells[0]) + "/model.safetensors", "test");
  const double reported = rmse[{cells[0].value("regime"), cells[0].seed}];
  EXPECT_NEAR(again, reported, 1e-4);
}

TEST(LraRegression, LossMustFitTheTask) {
  std::string d = dl::test::app_temp_dir("regression_loss");
  harness::Experiment e = experiment();
  harness::Preset p = load_preset(write_regression_preset(d, 4));
  auto cells = harness::expand_cells(e, p, {{"bidmc_rr"}, {"s4d"}, {"scratch"}}, {0}, {"loss=l1"});
  EXPECT_GT(harness::run_cells(e, p, cells, quiet_in(d + "/l1")).at(0).metric("test_mae"), 0);
  auto bad = harness::expand_cells(e, p, {{"bidmc_rr"}, {"s4d"}, {"scratch"}}, {0}, {"loss=ce"});
  try {
    harness::run_cells(e, p, bad, quiet_in(d + "/ce"));
    ADD_FAILURE() << "cross-entropy on a regression task was accepted";
  } catch (const std::exception& ex) {
    EXPECT_NE(std::string(ex.what()).find("does not fit a regression task"), std::string::npos) << ex.what();
  }
  EXPECT_THROW(resolve_cell(p, "bidmc_rr", "s4d", "scratch", {"loss=huber"}), ConfigError);
}
