// tests/apps/test_lra_data_scale.cpp - lra_benchmark's data-scale experiment (apps/lra_benchmark/data_scale.h): the
// training subset (train_limit) is nested, spread over the split and leaves validation and test alone; the table's
// gains and standard errors from hand-made results (accuracy, and a regression task's RMSE); a miniature run through
// the app's own cells.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "app_test_util.h"
#include "apps/common/experiment.h"
#include "apps/lra_benchmark/app.h"
#include "apps/lra_benchmark/config.h"
#include "apps/lra_benchmark/data.h"
#include "apps/lra_benchmark/data_scale.h"

using namespace lra;
namespace fs = std::filesystem;
namespace harness = dl::harness;

namespace {

CellConfig listops_cell(int limit) {
  CellConfig c;
  c.task = "listops", c.seq_len = 64, c.train_size = 200, c.val_size = 20, c.test_size = 20, c.seed = 3;
  c.train_limit = limit;
  return c;
}

// Hand-made results of one task x s4d at two fractions, two regimes (scratch, spt-masked) and two seeds: value
// [fraction][regime][seed] is written as `metric`, with the fraction's training-subset size and the test split's.
void write_hand_results(const DataScaleOptions& o, const std::string& task, const std::string& metric,
                        const double (&value)[2][2][2], const int (&train_examples)[2], int64_t test_examples) {
  for (int f = 0; f < 2; f++)
    for (int r = 0; r < 2; r++)
      for (int seed = 0; seed < 2; seed++) {
        harness::CellResult res;
        res.cell.axes = {"task", "model", "regime"};
        res.cell.values = {task, "s4d", r == 0 ? "scratch" : "spt-masked"};
        res.cell.seed = seed;
        res.metrics[metric] = value[f][r][seed];
        res.test_examples = test_examples;
        res.extra = {{"train_examples", train_examples[f]}};
        harness::write_result(o.out + "/" + fraction_dir(o.fractions[f]), res);
      }
}

std::string text_of(const dl::tasks::Example& e) { return std::string(e.tokens.begin(), e.tokens.end()) + "|" + std::to_string(e.label); }

}  // namespace

TEST(LraDataScale, TrainLimitIsANestedSpreadSubsetAndLeavesValidationAndTestAlone) {
  const dl::tasks::TaskData& all = task_data(listops_cell(0));
  const dl::tasks::TaskData& half = task_data(listops_cell(100));
  const dl::tasks::TaskData& tenth = task_data(listops_cell(20));
  ASSERT_EQ(all.train.examples.size(), 200u);
  ASSERT_EQ(half.train.examples.size(), 100u);
  ASSERT_EQ(tenth.train.examples.size(), 20u);
  for (auto [a, b] : {std::pair{&all.val, &half.val}, {&all.test, &half.test}, {&all.val, &tenth.val}}) {
    ASSERT_EQ(a->examples.size(), b->examples.size());
    for (size_t i = 0; i < a->examples.size(); i++) EXPECT_EQ(text_of(a->examples[i]), text_of(b->examples[i])) << a->name << " " << i;
  }
  std::set<std::string> in_all, in_half;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < all.train.examples.size(); i++) in_all.insert(text_of(all.train.examples[i])), index[text_of(all.train.examples[i])] = i;
  for (auto& e : half.train.examples) in_half.insert(text_of(e));
  size_t from_second_half = 0;
  for (auto& e : half.train.examples) {
    EXPECT_TRUE(in_all.count(text_of(e))) << "a subset example that is not in the training split";
    from_second_half += index[text_of(e)] >= 100;
  }
  for (auto& e : tenth.train.examples) EXPECT_TRUE(in_half.count(text_of(e))) << "the 20-subset is not inside the 100-subset";
  EXPECT_GT(from_second_half, 25u) << "the subset is the split's first examples, not spread over it";
  EXPECT_LT(from_second_half, 75u);
  // too many, and a negative limit, are named
  try {
    task_data(listops_cell(201));
    FAIL() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("train_limit 201 exceeds the training split's 200 examples"), std::string::npos) << e.what();
  }
  CellConfig bad = listops_cell(-1);
  EXPECT_THROW(bad.validate(), ConfigError);
}

// Results written by hand into the two fraction folders: the gain is paired by seed, its se the per-seed
// differences' standard error, and the note counts the rows beyond two standard errors.
TEST(LraDataScale, TableGainsArePairedBySeedWithTheirStandardErrors) {
  DataScaleOptions o;
  o.out = dl::test::app_temp_dir("data_scale_table");
  o.fractions = {1.0, 0.5};
  // fraction 1: scratch 40, 44; SPT 46, 48 -> differences 6, 4 -> +5.0 ± 1.0 (beyond 2 se)
  // fraction 0.5: scratch 30, 34; SPT 31, 38 -> differences 1, 4 -> +2.5 ± 1.5 (not beyond)
  const double acc[2][2][2] = {{{0.40, 0.44}, {0.46, 0.48}}, {{0.30, 0.34}, {0.31, 0.38}}};
  write_hand_results(o, "listops", "test_acc", acc, {1000, 500}, 500);
  harness::Table t = data_scale_table(o);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0][3], "1.00");
  EXPECT_EQ(t.rows[0][4], "1000");
  EXPECT_EQ(t.rows[0][6], "42.0 ± 2.0");
  EXPECT_EQ(t.rows[0][7], "47.0 ± 1.0");
  EXPECT_EQ(t.rows[0][8], "+5.0 ± 1.0");
  EXPECT_EQ(t.rows[1][4], "500");
  EXPECT_EQ(t.rows[1][8], "+2.5 ± 1.5");
  EXPECT_NE(t.notes.back().find("1 of 2 rows"), std::string::npos) << t.notes.back();
}

// A regression task's cells (cell.cpp writes test_rmse, no accuracy): the gain is scratch RMSE - SPT RMSE, paired by
// seed, with the se of the per-seed differences (no binomial term), and the note says how to read those rows.
TEST(LraDataScale, RegressionRowsGainInRmse) {
  DataScaleOptions o;
  o.out = dl::test::app_temp_dir("data_scale_rmse");
  o.fractions = {1.0, 0.1};
  // fraction 1: scratch 2.0, 1.6; SPT 0.6, 0.6 -> differences 1.4, 1.0 -> +1.20 ± 0.20 (beyond 2 se)
  // fraction 0.1: scratch 3.0, 2.0; SPT 3.5, 1.5 -> differences -0.5, 0.5 -> +0.00 ± 0.50
  const double rmse[2][2][2] = {{{2.0, 1.6}, {0.6, 0.6}}, {{3.0, 2.0}, {3.5, 1.5}}};
  write_hand_results(o, "bidmc_rr", "test_rmse", rmse, {2000, 200}, 1000);
  harness::Table t = data_scale_table(o);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0][6], "1.80 ± 0.20 RMSE");
  EXPECT_EQ(t.rows[0][7], "0.60 ± 0.00 RMSE");
  EXPECT_EQ(t.rows[0][8], "+1.20 ± 0.20");
  EXPECT_EQ(t.rows[1][4], "200");
  EXPECT_EQ(t.rows[1][8], "+0.00 ± 0.50");
  EXPECT_NE(t.notes.back().find("1 of 2 rows"), std::string::npos) << t.notes.back();
  bool explained = false;
  for (auto& n : t.notes) explained |= n.find("scratch RMSE - SPT RMSE") != std::string::npos;
  EXPECT_TRUE(explained);
}

// The subcommand's path end to end on a miniature preset: each fraction's cells train on their subset (recorded in
// the result) and the table has a row per fraction; a fraction outside (0, 1] and regimes without scratch are named.
TEST(LraDataScale, MiniatureRunTrainsEachFractionOnItsSubset) {
  const std::string d = dl::test::app_temp_dir("data_scale_run");
  std::ofstream(d + "/mini.json") << R"({
    "tasks": ["listops"], "models": ["s4d"], "regimes": ["scratch", "spt-masked"], "seeds": [0],
    "defaults": {"d_model": 16, "layers": 1, "d_state": 8, "dropout": 0.0, "batch": 8, "steps": 3, "warmup": 1,
                 "eval_every": 3, "eval_batches": 1, "checkpoint_every": 3, "pretrain_steps": 2, "seq_len": 64,
                 "train_size": 40, "val_size": 16, "test_size": 16}
  })";
  DataScaleOptions o;
  o.preset = d + "/mini.json", o.out = d + "/out", o.quiet = true, o.threads = 1;
  o.fractions = {1.0, 0.25};
  harness::Table t = run_data_scale(experiment(), o);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0][4], "40");
  EXPECT_EQ(t.rows[1][4], "10");
  for (auto& r : harness::collect_results(d + "/out/f0.25")) EXPECT_EQ(r.cell.config["train_limit"], 10) << r.cell.name();
  EXPECT_TRUE(fs::exists(d + "/out/data_scale.md"));
  EXPECT_TRUE(fs::exists(d + "/out/data_scale.json"));
  DataScaleOptions bad = o;
  bad.fractions = {1.5};
  EXPECT_THROW(run_data_scale(experiment(), bad), ConfigError);
  bad = o;
  bad.regimes = {"spt-masked"};
  EXPECT_THROW(run_data_scale(experiment(), bad), ConfigError);
}
