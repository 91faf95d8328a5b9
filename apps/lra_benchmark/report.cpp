// apps/lra_benchmark/report.cpp - the table and plots (see report.h).
#include "report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <map>
#include <sstream>

#include "apps/common/seed_group.h"
#include "apps/common/stats.h"
#include "nn/models/model_registry.h"

namespace lra {

namespace harness = dl::harness;
using harness::CellResult;

namespace {

// A model of the state-space family (nn/models/model_registry.h); false for a name the registry does not know (a
// results file from another build).
bool is_state_space(const std::string& model) {
  for (auto& m : dl::nn::model_registry())
    if (m.name == model) return m.family == dl::nn::LayerFamily::state_space;
  return false;
}

// The seeds of one task/model/regime, in seed order.
struct Group : harness::SeedGroup {
  std::string task, model, regime;
  bool regression() const { return has("test_rmse"); }       // cell.cpp's regression metrics
  double mean_over_seeds(double CellResult::*field) const {  // e.g. the wall time or steps/s of the table's last columns
    double m = 0;
    for (auto* r : seeds) m += r->*field / seeds.size();
    return m;
  }
};

std::vector<Group> group(const std::vector<CellResult>& rs) {
  std::map<std::tuple<std::string, std::string, std::string>, Group> g;
  for (auto& r : rs) {
    auto k = std::make_tuple(r.cell.value("task"), r.cell.value("model"), r.cell.value("regime"));
    Group& e = g[k];
    e.task = std::get<0>(k), e.model = std::get<1>(k), e.regime = std::get<2>(k);
    e.seeds.push_back(&r);
  }
  std::vector<Group> out;
  for (auto& [k, e] : g) {
    std::sort(e.seeds.begin(), e.seeds.end(), [](auto* a, auto* b) { return a->cell.seed < b->cell.seed; });
    out.push_back(e);
  }
  return out;
}

// Test accuracy of b minus a's, paired on the seeds both ran (n = 0 when they share none).
harness::MeanSE paired_test(const Group& a, const Group& b) {
  std::vector<double> ta, tb;
  for (auto* r : b.seeds)
    for (auto* s : a.seeds)
      if (s->cell.seed == r->cell.seed) ta.push_back(s->metric("test_acc")), tb.push_back(r->metric("test_acc"));
  if (ta.empty()) return {};
  return harness::paired_difference(ta, tb, b.seeds.front()->test_examples);
}

// The SPT gain of g over its scratch twin on the seeds both ran.
harness::MeanSE spt_gain(const Group& g, const Group& scratch) { return paired_test(scratch, g); }

using dl::harness::fixed;  // apps/common/report.h

// Per task: the training loss and the validation accuracy of every model and regime against one step axis -
// self-pretraining first, fine-tuning from the step where the longest pretraining of the task ends, so every arm's
// fine-tuning starts at the same x (apps/common/report.h: plot_learning_curves). Mean over seeds, band ± one standard
// error.
void write_curve_plots(const std::string& out, const std::vector<Group>& groups) {
  std::map<std::string, std::vector<harness::CurveArm>> by_task;
  for (auto& g : groups) {
    harness::CurveArm arm{g.model + " " + g.regime, {}};
    for (auto* r : g.seeds) {
      const std::vector<harness::CurvePoint> log = harness::cell_log(out, *r);
      arm.seeds.push_back({harness::phase_rows(log, "pretrain"), harness::phase_rows(log, "finetune")});
    }
    by_task[g.task].push_back(arm);
  }
  for (auto& [task, arms] : by_task) {
    harness::CurveText text;
    text.title = "LRA " + task + ": scratch vs. self-pretrained, mean over seeds (band: ± one standard error)";
    harness::plot_learning_curves(text, arms, out + "/plots/" + task);
  }
}

void write_plots(const std::string& out, const std::vector<Group>& groups) {
  const std::string dir = out + "/plots";
  std::filesystem::create_directories(dir);
  write_curve_plots(out, groups);

  // test accuracy: one cluster per task/model, one bar per regime; the SPT gain over scratch (paired by seed, as in
  // the table) in a plot of its own, whose axis takes in 0
  std::vector<std::string> cats, regimes;
  for (auto& g : groups) {
    std::string c = g.task + "/" + g.model;
    if (std::find(cats.begin(), cats.end(), c) == cats.end()) cats.push_back(c);
    if (std::find(regimes.begin(), regimes.end(), g.regime) == regimes.end()) regimes.push_back(g.regime);
  }
  harness::Plot bars, gains;
  bars.title = "LRA test accuracy (mean ± standard error)";
  bars.ylabel = "test accuracy (%)", bars.key = "top right";
  gains.title = "LRA: SPT gain in test accuracy over scratch (paired by seed, ± standard error)";
  gains.ylabel = "gain (points of accuracy)", gains.key = "top right", gains.include_zero = true;
  for (size_t k = 0; k < regimes.size(); k++) {
    const std::string& reg = regimes[k];
    harness::Series s, gain;
    s.title = gain.title = reg;
    gain.color = (int)k + 1;  // the regime's colour in the accuracy bars
    for (auto& c : cats) {
      double y = NAN, e = 0, gy = NAN, ge = 0;  // NaN: no bar (the cell was not run)
      for (auto& g : groups)
        if (g.task + "/" + g.model == c && g.regime == reg) {
          harness::MeanSE m = harness::accuracy_mean_se(g.metric("test_acc"), g.seeds.front()->test_examples);
          y = 100 * m.mean, e = 100 * m.se;
          for (auto& sc : groups)
            if (reg != "scratch" && sc.task == g.task && sc.model == g.model && sc.regime == "scratch") {
              harness::MeanSE d = spt_gain(g, sc);
              if (d.n > 0) gy = 100 * d.mean, ge = 100 * d.se;
            }
        }
      s.y.push_back(y), s.err.push_back(e), gain.y.push_back(gy), gain.err.push_back(ge);
    }
    bars.series.push_back(s);
    if (reg != "scratch") gains.series.push_back(gain);
  }
  harness::plot_bars(bars, cats, dir + "/test_accuracy");
  bool any_gain = false;
  for (auto& s : gains.series)
    for (double y : s.y) any_gain |= std::isfinite(y);
  if (any_gain) harness::plot_bars(gains, cats, dir + "/spt_gain");
}

}  // namespace

std::string format_regression(const harness::MeanSE& m, bool sign) {
  if (m.n == 1) return (sign && m.mean >= 0 ? "+" : "") + fixed(m.mean, 2) + " (1 seed)";
  return harness::format_mean_se(m, 1, 2, sign);
}

namespace {

// Scratch RMSE minus g's on the seeds both ran (positive: g's error is lower), with the standard error of the
// per-seed differences.
harness::MeanSE rmse_gain(const Group& g, const Group& scratch) {
  std::vector<double> d;
  for (auto* r : g.seeds)
    for (auto* s : scratch.seeds)
      if (s->cell.seed == r->cell.seed) d.push_back(s->metric("test_rmse") - r->metric("test_rmse"));
  return harness::mean_se(d);
}

// Fine-tuning validation loss of a regression task per evaluation step (standardised target), mean over seeds.
void write_regression_plots(const std::string& out, const std::vector<Group>& groups) {
  const std::string dir = out + "/plots";
  std::filesystem::create_directories(dir);
  std::map<std::string, harness::Plot> per_task;
  for (auto& g : groups) {
    harness::Plot& p = per_task[g.task];
    p.title = g.task + ": validation loss while fine-tuning (standardised target), scratch vs. self-pretrained";
    p.xlabel = "fine-tuning step", p.ylabel = "validation loss";
    std::map<int, std::vector<double>> at;
    for (auto* r : g.seeds)
      for (auto& c : r->curve)
        if (c.phase == "finetune" && std::isfinite(c.val_loss)) at[c.step].push_back(c.val_loss);
    harness::Series s;
    s.title = g.model + " " + g.regime;
    for (auto& [step, v] : at) {
      harness::MeanSE m = harness::mean_se(v);
      s.x.push_back(step), s.y.push_back(m.mean);
      if (g.seeds.size() > 1) s.err.push_back(m.se);
    }
    p.series.push_back(s);
  }
  for (auto& [task, p] : per_task) harness::plot_lines(p, dir + "/" + task);
}

}  // namespace

harness::Table lra_report(const std::string& out, const harness::Preset& p, const std::vector<CellResult>& rs) {
  // classification groups (accuracy) and regression groups (RMSE/MAE): the notes below compare accuracies only
  std::vector<Group> groups, reg;
  for (auto& g : group(rs)) (g.regression() ? reg : groups).push_back(g);
  const bool with_reg = !reg.empty();
  harness::Table t;
  t.title = "LRA: scratch vs. self-pretraining (preset " + p.name + ")";
  t.columns = {"task", "model", "regime", "seeds", "val acc", "test acc", "SPT gain (test)", "params", "wall s", "steps/s"};
  t.right = {false, false, false, true, true, true, true, true, true, true};
  if (with_reg) {  // a metric column, and the test MAE of the regression rows
    t.columns = {"task", "model", "regime", "seeds", "metric", "val", "test", "test MAE", "SPT gain (test)", "params", "wall s", "steps/s"};
    t.right = {false, false, false, true, false, true, true, true, true, true, true, true};
  }
  std::vector<std::string> beyond, within;  // SPT gains beyond / within two standard errors
  for (auto& g : groups) {
    const CellResult& first = *g.seeds.front();
    harness::MeanSE val = harness::accuracy_mean_se(g.metric("val_acc"), first.extra.value("val_examples", (int64_t)0));
    harness::MeanSE test = harness::accuracy_mean_se(g.metric("test_acc"), first.test_examples);
    std::string gain = "-";
    if (g.regime != "scratch")
      for (auto& s : groups)
        if (s.task == g.task && s.model == g.model && s.regime == "scratch") {
          harness::MeanSE d = spt_gain(g, s);
          gain = harness::format_mean_se(d, 100, 1, true);
          std::string which = g.task + "/" + g.model + " " + g.regime + " " + gain;
          (harness::beyond_two_se(d) != 0 ? beyond : within).push_back(which);
        }
    const double wall = g.mean_over_seeds(&CellResult::wall_s), rate = g.mean_over_seeds(&CellResult::steps_per_s);
    t.rows.push_back({g.task, g.model, g.regime, std::to_string(g.seeds.size()), harness::format_mean_se(val),
                      harness::format_mean_se(test), gain, std::to_string(first.params), fixed(wall, 0), fixed(rate, 1)});
    if (with_reg) t.rows.back().insert(t.rows.back().begin() + 4, "acc %"), t.rows.back().insert(t.rows.back().begin() + 7, "-");
  }
  for (auto& g : reg) {
    std::string gain = "-";
    if (g.regime != "scratch")
      for (auto& s : reg)
        if (s.task == g.task && s.model == g.model && s.regime == "scratch") {
          harness::MeanSE d = rmse_gain(g, s);
          gain = format_regression(d, true);
          (harness::beyond_two_se(d) != 0 ? beyond : within).push_back(g.task + "/" + g.model + " " + g.regime + " " + gain + " RMSE");
        }
    const double wall = g.mean_over_seeds(&CellResult::wall_s), rate = g.mean_over_seeds(&CellResult::steps_per_s);
    t.rows.push_back({g.task, g.model, g.regime, std::to_string(g.seeds.size()), "RMSE",
                      format_regression(harness::mean_se(g.metric("val_rmse"))), format_regression(harness::mean_se(g.metric("test_rmse"))),
                      format_regression(harness::mean_se(g.metric("test_mae"))), gain, std::to_string(g.seeds.front()->params),
                      fixed(wall, 0), fixed(rate, 1)});
  }
  if (!groups.empty())
    t.notes.push_back("Accuracies in %, mean ± standard error over the seeds; with one seed, ± is the binomial standard error "
                    "of the split (sqrt(p(1-p)/n)). SPT gain: test accuracy minus the same task/model trained from scratch, "
                    "paired by seed (same data and initialisation); with one seed, the two binomial errors combined. "
                    "Wall time and steps/s: means over seeds.");
  if (with_reg)
    t.notes.push_back("Regression rows (metric RMSE): val and test RMSE and the test MAE in the target's own units (for the "
                      "BIDMC tasks beats or breaths per minute, or % SpO2), mean ± standard error over seeds; with one seed "
                      "no error is known. Their SPT gain is the scratch RMSE minus the self-pretrained RMSE, paired by seed: "
                      "positive = self-pretraining lowered the error. Wall time and steps/s: means over seeds.");
  if (!beyond.empty() || !within.empty())
    t.notes.push_back(
        "SPT gains beyond two standard errors: " + (beyond.empty() ? std::string("none") : harness::join(beyond, "; ")) +
        ". Within two standard errors (not told apart from noise): " +
        (within.empty() ? std::string("none") : harness::join(within, "; ")) + ".");
  // the paper's other half: does SPT narrow the gap between the SSM and the Transformer? (paired by seed)
  std::vector<std::string> gaps;
  auto find = [&](const std::string& task, const std::string& model, const std::string& regime) -> const Group* {
    for (auto& g : groups)
      if (g.task == task && g.model == model && g.regime == regime) return &g;
    return nullptr;
  };
  std::vector<std::string> ssms;  // the run's state-space models (nn/models/model_registry.h), in the table's order
  for (auto& g : groups)
    if (is_state_space(g.model) && std::find(ssms.begin(), ssms.end(), g.model) == ssms.end()) ssms.push_back(g.model);
  for (auto& g : groups) {
    if (g.model != "transformer" || g.regime != "scratch") continue;
    for (const std::string& ssm : ssms) {
      std::string line;
      for (const char* regime : {"scratch", "spt-masked", "spt-causal", "text-masked"}) {
        const Group *a = find(g.task, "transformer", regime), *b = find(g.task, ssm, regime);
        if (!a || !b) continue;
        std::vector<double> ta, tb;
        for (auto* r : a->seeds)
          for (auto* q : b->seeds)
            if (r->cell.seed == q->cell.seed) ta.push_back(r->metric("test_acc")), tb.push_back(q->metric("test_acc"));
        if (ta.empty()) continue;
        line += (line.empty() ? "" : ", ") + std::string(regime) + " " +
                harness::format_mean_se(harness::paired_difference(ta, tb, a->seeds.front()->test_examples), 100, 1, true);
      }
      if (!line.empty()) gaps.push_back(g.task + " " + ssm + ": " + line);
    }
  }
  if (!gaps.empty())
    t.notes.push_back("Test accuracy of the SSM minus the Transformer's (paired by seed): " + harness::join(gaps, "; ") +
                      ". The paper: self-pretraining closes this gap (Transformer 53.6 -> 86.2, S4 86.1 -> 86.8 on average).");
  // "task/model d" per task and model that has both regimes: test accuracy of `regime` minus `base`, paired by seed
  auto regime_minus = [&](const std::string& regime, const std::string& base) {
    std::vector<std::string> out;
    for (auto& g : groups)
      if (g.regime == regime)
        if (const Group* b = find(g.task, g.model, base)) {
          harness::MeanSE d = paired_test(*b, g);
          if (d.n > 0) out.push_back(g.task + "/" + g.model + " " + harness::format_mean_se(d, 100, 1, true));
        }
    return out;
  };
  // the two objectives side by side: masked denoising minus next-token prediction
  const std::vector<std::string> objectives = regime_minus("spt-masked", "spt-causal");
  if (!objectives.empty())
    t.notes.push_back("Test accuracy of masked minus causal self-pretraining (paired by seed): " +
                      harness::join(objectives, "; ") + ". The paper: the two give similar results (Section 3.1).");
  // the two pretraining sources side by side: English text minus the task's own data, same masked objective
  const std::vector<std::string> sources = regime_minus("text-masked", "spt-masked");
  if (!sources.empty())
    t.notes.push_back("Test accuracy of pretraining on English text (Debian's fortunes) minus self-pretraining on the task's "
                      "own training split, both masked denoising for the same steps (paired by seed): " +
                      harness::join(sources, "; ") +
                      ". The paper reports self-pretraining as good as or better than pretraining on a text corpus "
                      "(UNVERIFIED: not checked against the paper here).");
  // the parameterisations side by side: per task and regime, the best model minus the worst (by mean test accuracy,
  // the difference paired by seed) among the state-space models - does SPT bring them together?
  std::map<std::pair<std::string, std::string>, std::vector<const Group*>> by_regime;
  for (auto& g : groups)
    if (is_state_space(g.model)) by_regime[{g.task, g.regime}].push_back(&g);
  std::vector<std::string> spreads;
  for (auto& [k, gs] : by_regime) {
    if (gs.size() < 2) continue;
    auto mean_test = [](const Group* g) { return harness::mean_se(g->metric("test_acc")).mean; };
    auto [lo, hi] = std::minmax_element(gs.begin(), gs.end(), [&](auto* a, auto* b) { return mean_test(a) < mean_test(b); });
    harness::MeanSE d = paired_test(**lo, **hi);
    if (d.n > 0)
      spreads.push_back(k.first + " " + k.second + ": " + (*hi)->model + " - " + (*lo)->model + " " +
                        harness::format_mean_se(d, 100, 1, true) + " (of " + std::to_string(gs.size()) + " models)");
  }
  if (!spreads.empty())
    t.notes.push_back("Best minus worst model by test accuracy (paired by seed): " + harness::join(spreads, "; ") +
                      ". The paper: with SPT the parameterisations end up close (Section 3.3).");
  if (!p.description.empty()) t.notes.push_back("Preset " + p.name + ": " + p.description);
  if (!groups.empty()) write_plots(out, groups);
  if (with_reg) write_regression_plots(out, reg);
  return t;
}

}  // namespace lra
