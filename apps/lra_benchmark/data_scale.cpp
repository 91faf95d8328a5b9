// apps/lra_benchmark/data_scale.cpp - the SPT gain against the training-set size (see data_scale.h).
#include "data_scale.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

#include "apps/common/experiment.h"
#include "apps/common/report.h"
#include "apps/common/signals.h"
#include "apps/common/stats.h"
#include "config.h"
#include "data.h"
#include "report.h"

namespace lra {

namespace harness = dl::harness;
using harness::CellResult;

std::string fraction_dir(double f) {
  std::ostringstream s;
  s << "f" << f;  // f1, f0.5, f0.25, f0.1
  return s.str();
}

static void check_options(const DataScaleOptions& o) {
  if (o.fractions.empty()) throw ConfigError("data-scale: --fractions is empty");
  for (double f : o.fractions)
    if (!(f > 0 && f <= 1)) throw ConfigError("data-scale: a fraction must be in (0, 1], found " + harness::number_text(f));
  const bool scratch = std::find(o.regimes.begin(), o.regimes.end(), "scratch") != o.regimes.end();
  if (!scratch || o.regimes.size() < 2)
    throw ConfigError("data-scale: --regimes must hold scratch and at least one SPT regime (the gain is SPT - scratch), found " +
                      harness::join(o.regimes));
  for (auto& r : o.regimes)
    if (std::find(kRegimes.begin(), kRegimes.end(), r) == kRegimes.end())
      throw ConfigError("data-scale: unknown regime '" + r + "' (known: " + harness::join(kRegimes) + ")");
}

harness::Table run_data_scale(const harness::Experiment& e, const DataScaleOptions& o) {
  check_options(o);
  harness::Preset p = load_preset(o.preset);
  const std::vector<std::string> tasks = o.tasks.empty() ? p.values[0] : o.tasks;
  const std::vector<std::string> models = o.models.empty() ? p.values[1] : o.models;
  const std::vector<int> seeds = o.seeds.empty() ? p.seeds : harness::parse_seeds(o.seeds);
  // every fraction's cells are resolved (validated) before the first trains
  std::vector<std::vector<harness::Cell>> per_fraction;
  for (double f : o.fractions) {
    std::vector<harness::Cell> cells;
    for (auto& task : tasks) {
      // N: the training split the preset makes for this task (its train_size, or all a fixed data set has)
      CellConfig full = resolve_cell(p, task, models.front(), "scratch", o.sets);
      full.train_limit = 0;
      const size_t N = task_data(full).train.examples.size();
      std::vector<std::string> sets = o.sets;
      sets.push_back("train_limit=" + std::to_string(std::max<long>(1, std::lround(f * (double)N))));
      for (auto& c : harness::expand_cells(e, p, {{task}, models, o.regimes}, seeds, sets)) cells.push_back(c);
    }
    per_fraction.push_back(cells);
  }
  harness::set_threads(o.threads);
  harness::install_stop_handlers();
  for (size_t i = 0; i < o.fractions.size(); i++) {
    const std::string dir = o.out + "/" + fraction_dir(o.fractions[i]);
    if (!o.quiet)
      std::cerr << "data-scale: fraction " << o.fractions[i] << " of the training set, " << per_fraction[i].size()
                << " cell(s) -> " << dir << "\n";
    harness::SweepOptions so;
    so.out = dir, so.resume = o.resume, so.quiet = o.quiet;
    harness::run_cells(e, p, per_fraction[i], so);
    harness::write_reports(e, p, dir);
  }
  harness::Table t = data_scale_table(o);
  harness::write_text_atomic(o.out + "/data_scale.md", t.markdown());
  harness::write_text_atomic(o.out + "/data_scale.json", t.to_json().dump(2));
  return t;
}

namespace {

// One task x model x regime at one fraction: its seeds' test metric by seed - the accuracy, or for a regression task
// (cell.cpp writes test_rmse instead) the RMSE.
struct Arm {
  std::map<int, double> test;  // seed -> test accuracy or RMSE
  int64_t train_examples = 0, test_examples = 0;
  bool regression = false;
};

}  // namespace

harness::Table data_scale_table(const DataScaleOptions& o) {
  // (task, model) -> regime -> fraction -> arm
  std::map<std::pair<std::string, std::string>, std::map<std::string, std::map<double, Arm>>> arms;
  for (double f : o.fractions)
    for (const CellResult& r : harness::collect_results(o.out + "/" + fraction_dir(f))) {
      Arm& a = arms[{r.cell.value("task"), r.cell.value("model")}][r.cell.value("regime")][f];
      a.regression = r.metrics.count("test_rmse") > 0;
      a.test[r.cell.seed] = r.metric(a.regression ? "test_rmse" : "test_acc");
      a.train_examples = r.extra.value("train_examples", (int64_t)0);  // run_cell records the subset's size
      a.test_examples = r.test_examples;
    }

  harness::Table t;
  t.title = "SPT gain against the training-set size";
  t.columns = {"task", "model", "SPT regime", "fraction", "train examples", "seeds", "scratch test", "SPT test", "SPT gain"};
  t.right = {false, false, false, true, true, true, true, true, true};
  harness::Plot plot, rmse_plot;  // accuracy gains, and regression tasks' RMSE gains (another unit)
  plot.title = "SPT gain (test) against the labelled training set";
  plot.xlabel = "training examples (log scale)", plot.ylabel = "SPT - scratch test accuracy (points)";
  plot.logx = true, plot.key = "top right";
  rmse_plot = plot;
  rmse_plot.ylabel = "scratch - SPT test RMSE (the target's unit)";
  int beyond = 0;
  bool any_regression = false;
  for (auto& [tm, by_regime] : arms) {
    auto scratch = by_regime.find("scratch");
    if (scratch == by_regime.end()) continue;
    for (auto& [regime, by_fraction] : by_regime) {
      if (regime == "scratch") continue;
      harness::Series s;
      s.title = tm.first + " " + tm.second + " " + regime;
      for (double f : o.fractions) {
        auto a = by_fraction.find(f), b = scratch->second.find(f);
        if (a == by_fraction.end() || b == scratch->second.end()) continue;
        std::vector<double> sa, sb, spt, scr;  // paired over the seeds both ran
        for (auto& [seed, v] : a->second.test)
          if (b->second.test.count(seed)) sb.push_back(b->second.test.at(seed)), sa.push_back(v);
        for (auto& [seed, v] : a->second.test) spt.push_back(v);
        for (auto& [seed, v] : b->second.test) scr.push_back(v);
        const bool reg = a->second.regression;
        harness::MeanSE gain;
        std::string scratch_cell, spt_cell, gain_cell;
        if (reg) {  // lower is better: the gain is scratch RMSE - SPT RMSE, the se that of the per-seed differences
          std::vector<double> d;
          for (size_t k = 0; k < sa.size(); k++) d.push_back(sb[k] - sa[k]);
          gain = harness::mean_se(d);
          scratch_cell = format_regression(harness::mean_se(scr)) + " RMSE", spt_cell = format_regression(harness::mean_se(spt)) + " RMSE";
          gain_cell = format_regression(gain, true);
          any_regression = true;
        } else {
          gain = harness::paired_difference(sb, sa, a->second.test_examples);
          scratch_cell = harness::format_mean_se(harness::accuracy_mean_se(scr, b->second.test_examples));
          spt_cell = harness::format_mean_se(harness::accuracy_mean_se(spt, a->second.test_examples));
          gain_cell = harness::format_mean_se(gain, 100, 1, true);
        }
        t.rows.push_back({tm.first, tm.second, regime, harness::fixed(f, 2), std::to_string(a->second.train_examples),
                          std::to_string(sa.size()), scratch_cell, spt_cell, gain_cell});
        if (harness::beyond_two_se(gain) != 0) beyond++;
        const double scale = reg ? 1 : 100;
        s.x.push_back((double)a->second.train_examples), s.y.push_back(scale * gain.mean), s.err.push_back(scale * gain.se);
      }
      const bool reg = !by_fraction.empty() && by_fraction.begin()->second.regression;
      if (!s.x.empty()) (reg ? rmse_plot : plot).series.push_back(s);
    }
  }
  const std::string subsets =
      "Each fraction trains on a random subset of the training split (train_limit examples, fixed by the seed, the "
      "smaller subsets inside the larger), for the same number of steps, and is scored on the same validation and test "
      "splits; self-pretraining sees the same subset's inputs (labels unused).";
  if (any_regression)
    t.notes.push_back("Regression tasks (rows marked RMSE): test RMSE in the target's unit, mean ± standard error over seeds; "
                      "SPT gain = scratch RMSE - SPT RMSE (positive: SPT's error is lower), paired by seed; plotted in "
                      "data_scale_rmse.png.");
  if (!plot.series.empty() || !any_regression)
    t.notes.push_back("Classification tasks: test accuracy in %, mean ± standard error over seeds (one seed: the binomial "
                      "error of the test split); SPT gain = SPT - scratch, paired by seed; plotted in data_scale.png.");
  t.notes.push_back(subsets);
  t.notes.push_back("Gains beyond two standard errors: " + std::to_string(beyond) + " of " + std::to_string(t.rows.size()) + " rows.");
  if (!plot.series.empty()) harness::plot_lines(plot, o.out + "/data_scale");
  if (!rmse_plot.series.empty()) harness::plot_lines(rmse_plot, o.out + "/data_scale_rmse");
  return t;
}

// ---------------------------------------------------------------------------------------------
DataScaleCommand::DataScaleCommand(CLI::App& app) {
  cmd_ = app.add_subcommand("data-scale", "the SPT gain as the training set shrinks: the preset at several fractions of train_size");
  cmd_->add_option("--preset,--config", opt_.preset, "preset name (apps/lra_benchmark/presets) or a JSON file")
      ->capture_default_str();
  cmd_->add_option("--fractions", opt_.fractions, "fractions of each task's train_size")->delimiter(',')->capture_default_str();
  cmd_->add_option("--tasks", opt_.tasks, "only these tasks (default: the preset's)")->delimiter(',');
  cmd_->add_option("--models", opt_.models, "only these models (default: the preset's)")->delimiter(',');
  cmd_->add_option("--regimes", opt_.regimes, "scratch and the SPT regimes to compare")->delimiter(',')->capture_default_str();
  cmd_->add_option("--seeds", opt_.seeds, "0,1,2 or 0-4 (default: the preset's)");
  cmd_->add_option("--set", opt_.sets, "override a field: --set steps=200 (repeatable)");
  cmd_->add_option("--out", opt_.out, "output folder (one sub-folder per fraction)")->capture_default_str();
  cmd_->add_option("--threads", opt_.threads, "CPU threads")->capture_default_str()->check(harness::at_least(1));
  cmd_->add_flag("--resume", opt_.resume, "skip finished cells, resume half-done ones");
  cmd_->add_flag("--quiet", opt_.quiet, "no progress bars or log lines");
}

void DataScaleCommand::run(const harness::Experiment& e) const {
  harness::Table t = run_data_scale(e, opt_);
  std::cout << t.markdown() << "\nwritten: " << opt_.out << "/data_scale.{md,json}";
  for (const char* png : {"data_scale.png", "data_scale_rmse.png"})
    if (std::filesystem::exists(opt_.out + "/" + png)) std::cout << ", " << png;
  std::cout << "\n";
}

}  // namespace lra
