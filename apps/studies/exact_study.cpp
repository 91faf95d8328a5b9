// apps/studies/exact_study.cpp - see exact.h: the study as an experiment on the harness (its settings, one cell with
// its selection grid, the report, the old command line).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <map>

#include "apps/common/experiment.h"
#include "apps/common/report.h"
#include "apps/common/stats.h"
#include "cli.h"
#include "exact.h"
#include "selection.h"
#include "study.h"

namespace studies {

using namespace dl;
namespace harness = dl::harness;
using harness::json;

// ---- the settings -------------------------------------------------------------------------------------------------

std::vector<double> ExactConfig::lr_list() const { return harness::parse_real_list(lrs, "lrs"); }

std::vector<double> ExactConfig::margin_list() const {
  std::vector<double> v;
  for (const std::string& item : harness::split_list(margins)) {
    const double m = item == "none" ? 0.0 : harness::parse_real_list(item, "margins", true)[0];
    v.push_back(m == 0 ? INFINITY : m);  // "none" or 0: no margin
  }
  return v;
}

std::vector<std::string> ExactConfig::sigma_list() const {
  return harness::parse_name_list(sigma_modes, "sigma_modes", {"fixed", "learned"});
}

std::vector<ExactArm> ExactConfig::grid() const {
  std::vector<ExactArm> arms;
  for (double lr : lr_list()) {
    if (arm == "ce") {
      ExactArm a;
      a.loss = "ce", a.lr = lr;
      arms.push_back(a);
      continue;
    }
    for (const std::string& sm : sigma_list())
      for (double m : margin_list()) {
        ExactArm e;
        e.loss = "exact", e.lr = lr, e.margin = m, e.learn_sigma = sm == "learned", e.grad_norm = grad_norm;
        e.genz_samples = genz_samples;
        arms.push_back(e);
      }
  }
  return arms;
}

void ExactConfig::validate() const {
  const std::string key = task + "/" + arm;
  for (auto [field, v] : std::vector<std::pair<const char*, double>>{{"steps", steps},
                                                                     {"fashion_steps", fashion_steps},
                                                                     {"batch", batch},
                                                                     {"eval_every", eval_every},
                                                                     {"mixture_train", mixture_train},
                                                                     {"mixture_val", mixture_val},
                                                                     {"mixture_test", mixture_test},
                                                                     {"fashion_train", fashion_train},
                                                                     {"fashion_val", fashion_val},
                                                                     {"fashion_test", fashion_test},
                                                                     {"genz_samples", genz_samples}})
    harness::require_positive(key, field, v);
  if (!(label_noise >= 0 && label_noise < 1))
    throw harness::ConfigError(key + ": field 'label_noise' must be in [0, 1), found " + harness::fixed(label_noise, 3));
  if (selection_seed < 0) throw harness::ConfigError(key + ": field 'selection_seed' must be >= 0");
  try {
    lr_list(), margin_list(), sigma_list();
  } catch (const harness::ConfigError& e) {
    throw harness::ConfigError(key + ": " + e.what());
  }
}

// ---- one cell -----------------------------------------------------------------------------------------------------
namespace {

using harness::fixed;  // apps/common/report.h
std::string margin_str(const ExactArm& a) { return a.loss == "ce" ? "-" : std::isfinite(a.margin) ? fixed(a.margin, 1) : "none"; }
std::string sigma_str(const ExactArm& a) { return a.loss == "ce" ? "-" : a.learn_sigma ? "learned" : "fixed 1"; }
json margin_json(double m) { return std::isfinite(m) ? json(m) : json("none"); }

// A grid point's folder: "ce_lr0.001", "exact_lr0.001_marginnone_learned".
std::string point_name(const ExactArm& a) {
  if (a.loss == "ce") return "ce_lr" + number(a.lr);
  return "exact_lr" + number(a.lr) + "_margin" + (std::isfinite(a.margin) ? number(a.margin) : "none") + "_" +
         (a.learn_sigma ? "learned" : "fixed");
}

// The task of a config, built once per process (the cells and grid points of a run share it).
const ExactTask& task_of(const ExactConfig& c) {
  if (c.task == "mixture")
    return built_once<ExactTask>(json{c.task, c.mixture_train, c.mixture_val, c.mixture_test, c.label_noise}, [&] {
      return make_mixture_task(c.mixture_train, c.mixture_val, c.mixture_test, c.label_noise);
    });
  return built_once<ExactTask>(json{c.task, c.fashion_train, c.fashion_val, c.fashion_test, c.fashion_dir},
                               [&] { return make_fashion_task(c.fashion_train, c.fashion_val, c.fashion_test, c.fashion_dir); });
}

// The arm's selection grid, each point trained on the selection seed with only a final evaluation (its validation
// accuracy is what is kept), then the chosen setting on the cell's seed.
harness::CellResult run_cell(const ExactConfig& c, const harness::Cell& cell, const harness::RunContext& ctx) {
  const ExactTask& task = task_of(c);
  const int steps = c.task_steps();
  const std::vector<ExactArm> grid = c.grid();
  std::vector<SelectionPoint> points;
  json point_config = cell.config;  // what a grid point depends on: the cell's settings but its seed
  point_config.erase("seed");
  for (const ExactArm& a : grid) {
    point_config["point"] = point_name(a);
    points.push_back({point_name(a),
                      "[" + c.task + " select " + point_name(a) + " seed " + std::to_string(c.selection_seed) + "]",
                      point_config});
  }
  const std::vector<json> tried =
      run_selection(ctx, c.task + "/" + c.arm, points, [&](size_t i, const harness::RunContext& pctx) {
        const ExactRun r = train_exact_arm(task, grid[i], c.selection_seed, {steps, c.batch, steps, c.eval_every}, pctx);
        return json{{"val_acc", r.val_acc}, {"val_nll", r.val_nll}};
      });
  std::vector<double> val;
  harness::CellResult res;
  res.extra["selection"] = json::array();
  for (size_t k = 0; k < grid.size(); k++) {
    val.push_back(tried[k].at("val_acc").get<double>());
    res.extra["selection"].push_back({{"lr", grid[k].lr},
                                      {"margin", margin_json(grid[k].margin)},
                                      {"sigma", sigma_str(grid[k])},
                                      {"val_acc", val.back()},
                                      {"val_nll", tried[k].at("val_nll")}});
  }
  const ExactArm& chosen = grid[best_index(val)];
  if (!ctx.quiet && ctx.writer())
    std::cerr << ctx.label << " chose " << point_name(chosen) << " (validation accuracy " << fixed(val[best_index(val)], 3)
              << ")\n";
  const ExactRun r = train_exact_arm(task, chosen, c.seed, {steps, c.batch, c.eval_every, c.eval_every}, ctx);
  res.metrics = {
      {"val_acc", r.val_acc},         {"test_acc", r.test_acc},     {"test_nll", r.test_nll},     {"test_ece", r.test_ece},
      {"temperature", r.temperature}, {"test_nll_t", r.test_nll_t}, {"test_ece_t", r.test_ece_t}, {"sigma", r.sigma}};
  res.curve = r.curve;
  res.test_examples = task.y_test.numel();
  res.extra["chosen"] = {{"lr", chosen.lr}, {"margin", margin_json(chosen.margin)}, {"learn_sigma", chosen.learn_sigma}};
  res.extra["task"] = {{"classes", task.classes},     {"train", task.y_train.numel()}, {"val", task.y_val.numel()},
                       {"test", task.y_test.numel()}, {"hidden", task.hidden},         {"steps", steps}};
  if (!ctx.quiet && ctx.writer()) std::cerr << ctx.label << " test acc " << fixed(r.test_acc, 4) << "\n";
  return res;
}

}  // namespace

// ---- the report ---------------------------------------------------------------------------------------------------
namespace {

std::string pm(const harness::MeanSE& m, double scale, int digits) {
  return fixed(m.mean * scale, digits) + " ± " + fixed(m.se * scale, digits);
}
ExactArm chosen_arm(const harness::CellResult& r) {
  ExactArm a;
  a.loss = r.cell.value("arm"), a.lr = r.extra["chosen"]["lr"], a.learn_sigma = r.extra["chosen"]["learn_sigma"];
  a.margin = r.extra["chosen"]["margin"].is_number() ? r.extra["chosen"]["margin"].get<double>() : INFINITY;
  return a;
}
// "0..4" for consecutive seeds, else "0, 2, 7"
std::string seeds_text(const std::vector<int>& s) {
  if (s.size() > 1 && s.back() - s.front() + 1 == (int)s.size())
    return std::to_string(s.front()) + ".." + std::to_string(s.back());
  std::string t;
  for (int x : s) t += (t.empty() ? "" : ", ") + std::to_string(x);
  return t;
}

// One arm's row of the table and its curve (test accuracy, mean ± SE over the seeds at each evaluation).
void arm_row(const std::string& task, const Cells& rs, harness::Table& t, harness::Plot& pc) {
  const ExactArm a = chosen_arm(*rs[0]);
  t.rows.push_back({task, a.loss, fixed(a.lr, 4), margin_str(a), pm(over(rs, "test_acc"), 100, 2), pm(over(rs, "test_nll"), 1, 3),
                    pm(over(rs, "test_ece"), 100, 2), pm(over(rs, "temperature"), 1, 2), pm(over(rs, "test_nll_t"), 1, 3),
                    pm(over(rs, "test_ece_t"), 100, 2),
                    a.loss == "exact" && a.learn_sigma ? "learned " + pm(over(rs, "sigma"), 1, 3) : sigma_str(a)});
  pc.series.push_back(accuracy_curve(a.loss == "ce" ? "cross-entropy" : "EXACT", rs, 100));
}

// The selection grid of a task in the order it was tried before the harness: per lr, CE then EXACT's points.
void grid_rows(const std::string& task, const std::map<std::string, Cells>& arms, harness::Table& grid) {
  const ExactConfig c = harness::config_from_json<ExactConfig>(arms.begin()->second[0]->cell.config, task);
  for (double lr : c.lr_list())
    for (const char* loss : {"ce", "exact"}) {
      if (!arms.count(loss)) continue;
      for (const json& p : arms.at(loss)[0]->extra["selection"]) {
        if (p["lr"].get<double>() != lr) continue;
        ExactArm a;
        a.loss = loss, a.lr = lr, a.learn_sigma = p["sigma"] == "learned";
        a.margin = p["margin"].is_number() ? p["margin"].get<double>() : INFINITY;
        grid.rows.push_back({task, loss, fixed(lr, 4), margin_str(a), sigma_str(a), fixed(100 * p["val_acc"].get<double>(), 1)});
      }
    }
}

harness::Table report(const std::string& out, const harness::Preset& p, const std::vector<harness::CellResult>& rs) {
  std::map<std::string, std::map<std::string, Cells>> by = cells_by(rs, "task", "arm");  // in seed order
  std::vector<int> seeds;
  for (const harness::CellResult& r : rs) seeds.push_back(r.cell.seed);
  std::sort(seeds.begin(), seeds.end());
  seeds.erase(std::unique(seeds.begin(), seeds.end()), seeds.end());
  harness::Table t, grid;
  t.title = "EXACT vs cross-entropy: test accuracy and calibration (mean ± SE over " + std::to_string(seeds.size()) + " seeds)";
  t.columns = {"task", "loss", "lr", "margin", "test acc %", "NLL", "ECE %", "T (val)", "NLL (T)", "ECE (T) %", "sigma"};
  t.right = {false, false, true, true, true, true, true, true, true, true, true};
  if (rs.empty()) return t;
  const ExactConfig c0 = config_of<ExactConfig>(rs[0].cell);
  grid.title = "Selection grid: validation accuracy on the selection seed " + std::to_string(c0.selection_seed);
  grid.columns = {"task", "loss", "lr", "margin", "sigma", "val acc %"};
  grid.right = {false, false, true, true, false, true};
  for (const std::string& task : in_preset_order(p.values[0], by)) {  // mixture first
    const std::map<std::string, Cells>& arms = by[task];
    harness::Plot pc;
    pc.title = task + ": test accuracy during training (mean ± SE over seeds)";
    pc.xlabel = "step", pc.ylabel = "test accuracy %";
    for (const char* arm : {"ce", "exact"})
      if (arms.count(arm)) arm_row(task, arms.at(arm), t, pc);
    if (arms.count("ce") && arms.count("exact")) {  // paired over the seeds both arms ran
      std::vector<double> a0, a1;
      for (auto* r0 : arms.at("ce"))
        for (auto* r1 : arms.at("exact"))
          if (r0->cell.seed == r1->cell.seed) a0.push_back(r0->metric("test_acc")), a1.push_back(r1->metric("test_acc"));
      const harness::MeanSE d = harness::paired_difference(a0, a1, arms.at("ce")[0]->test_examples);
      t.rows.push_back({task, "EXACT - CE", "", "", harness::format_mean_se(d, 100, 2, true) + (d.binomial ? " (binomial)" : ""),
                        "", "", "", "", "", ""});
    }
    harness::plot_lines(pc, out + "/plots/curve_" + task);
    grid_rows(task, arms, grid);
    const json& ti = arms.begin()->second[0]->extra["task"];
    t.notes.push_back(task + ": " + ti["train"].dump() + " train / " + ti["val"].dump() + " val / " + ti["test"].dump() +
                      " test, " + ti["classes"].dump() + " classes, MLP hidden " + ti["hidden"].dump() + ", " +
                      ti["steps"].dump() + " Adam steps of batch " + std::to_string(c0.batch) + ".");
  }
  t.notes.push_back(
      "Settings (lr; EXACT's margin and sigma) chosen by validation accuracy on the selection seed, then run on seeds " +
      seeds_text(seeds) +
      " (a seed draws the initialisation, the batch order and the Genz draws; the data are fixed). "
      "NLL and ECE (15 bins) are of softmax(logits); 'T' columns after temperature scaling fitted on the validation split. "
      "EXACT: sigma fixed at 1 or exp(log_sigma) learned (from log_sigma = 0), chosen with the rest; gradient normalisation: " +
      (c0.grad_norm ? "yes" : "no") + "; Genz samples " + std::to_string(c0.genz_samples) + ". EXACT - CE: paired over seeds.");
  t.notes.push_back(grid.markdown());
  return t;
}

}  // namespace

// ---- the experiment and its command line --------------------------------------------------------------------------

harness::Experiment exact_experiment() {
  harness::Experiment e =
      study_experiment("exact", "studies exact: EXACT (expected accuracy) vs cross-entropy: accuracy and calibration");
  e.axes = {{{"task", {"mixture", "fashion"}}, "", "mixture (2-D Gaussians, label noise) or fashion (Fashion-MNIST)"},
            {{"arm", {"ce", "exact"}}, "", "ce (cross-entropy) or exact (expected accuracy)"}};
  harness::typed_cells<ExactConfig>(e, run_cell);
  e.report = report;
  e.cost = [](const harness::Cell& cell) {  // the grid's runs and the cell's own, in steps
    const ExactConfig c = config_of<ExactConfig>(cell);
    return (double)c.task_steps() * (c.grid().size() + 1) * (c.task == "fashion" ? 20 : 1);
  };
  return e;
}

const LegacyFlags& exact_legacy_flags() {
  static const LegacyFlags f = legacy_flags<ExactConfig>(
      {"steps", "fashion_steps", "batch", "lrs", "margins", "label_noise", "genz_samples", "fashion_dir", "sigma_modes"}, {},
      {{"--no-grad-norm", {"--set", "grad_norm=false"}}});
  return f;
}

}  // namespace studies
