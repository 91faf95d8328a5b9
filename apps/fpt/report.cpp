// apps/fpt/report.cpp - see report.h.
#include "report.h"

#include <cmath>
#include <filesystem>
#include <iomanip>
#include <map>
#include <sstream>

#include "apps/common/stats.h"
#include "config.h"

namespace fpt {

namespace harness = dl::harness;
using harness::CellResult;

double paper_accuracy(const std::string& task, const std::string& arm) {
  // columns: bit_memory, bit_xor, listops, MNIST (beside image_patches, Fashion-MNIST, and digits, the 8x8 digits:
  // neither is the same task), MNIST again for digits, and TAPE remote homology (1195 folds; our homology is 9-way
  // family recognition: not the same task either)
  static const std::map<std::string, std::vector<double>> table = {{"fpt", {100, 100, 38.4, 98.0, 98.0, 12.7}},
                                                                   {"full", {100, 100, 38, 99.1, 99.1, 9}},
                                                                   {"lstm", {60.9, 50.1, 17.1, 99.5, 99.5, 12}},
                                                                   {"random", {75.8, 100, 34.3, 91.7, 91.7, 9.3}},
                                                                   {"bitmem", {100, 100, 35.4, 97.8, 97.8, 7.8}}};
  static const std::vector<std::string> tasks = {"bit_memory", "bit_xor", "listops", "image_patches", "digits", "homology"};
  auto a = table.find(arm);
  auto t = std::find(tasks.begin(), tasks.end(), task);
  if (a == table.end() || t == tasks.end()) return NAN;
  return a->second[t - tasks.begin()];
}

namespace {

struct Group {
  std::string task, arm;
  std::vector<const CellResult*> seeds;
  std::vector<double> metric(const std::string& k) const {
    std::vector<double> v;
    for (auto* r : seeds) v.push_back(r->metric(k));
    return v;
  }
};

using dl::harness::fixed;  // apps/common/report.h

// The depth study, when the run has arms "<base>-L<k>": <out>/depth.md (test accuracy per task and base arm, one
// column per depth) and plots/depth_<task>.png (test accuracy against frozen depth, one line per base arm).
void write_depth_study(const std::string& out, const std::map<std::pair<std::string, std::string>, Group>& by) {
  std::map<std::string, std::map<std::string, std::map<int, harness::MeanSE>>> acc;  // task -> base -> depth
  std::vector<int> depths;
  for (auto& [k, g] : by) {
    auto [base, depth] = split_depth(k.second);
    if (depth == 0) continue;
    acc[k.first][base][depth] = harness::accuracy_mean_se(g.metric("test_acc"), g.seeds.front()->test_examples);
    if (std::find(depths.begin(), depths.end(), depth) == depths.end()) depths.push_back(depth);
  }
  if (acc.empty()) return;
  std::sort(depths.begin(), depths.end());
  harness::Table t;
  t.title = "FPT depth study: test accuracy (%) against the frozen transformer's depth";
  t.columns = {"task", "arm"};
  for (int d : depths) t.columns.push_back(std::to_string(d) + " layers");
  t.right.assign(t.columns.size(), true), t.right[0] = t.right[1] = false;
  for (auto& [task, by_base] : acc) {
    harness::Plot pl;
    pl.title = "FPT " + task + ": test accuracy vs frozen depth", pl.xlabel = "transformer layers", pl.ylabel = "test accuracy (%)";
    for (auto& [base, by_depth] : by_base) {
      std::vector<std::string> row = {task, base};
      harness::Series s;
      s.title = base;
      for (int d : depths) {
        auto it = by_depth.find(d);
        row.push_back(it == by_depth.end() ? "-" : harness::format_mean_se(it->second));
        if (it != by_depth.end()) s.x.push_back(d), s.y.push_back(100 * it->second.mean), s.err.push_back(100 * it->second.se);
      }
      t.rows.push_back(row), pl.series.push_back(s);
    }
    harness::plot_lines(pl, out + "/plots/depth_" + task);
  }
  t.notes.push_back("Mean ± standard error over the seeds (one seed: the binomial error of the test split). Each depth has "
                    "its own language model (fpt) or random initialisation (random), frozen as FPT freezes it.");
  harness::write_text_atomic(out + "/depth.md", t.markdown());
}

}  // namespace

harness::Table fpt_report(const std::string& out, const harness::Preset& p, const std::vector<CellResult>& rs) {
  std::map<std::pair<std::string, std::string>, Group> by;
  std::vector<std::pair<std::string, std::string>> order;
  for (auto& r : rs) {
    auto k = std::make_pair(r.cell.value("task"), r.cell.value("arm"));
    if (!by.count(k)) order.push_back(k);
    by[k].task = k.first, by[k].arm = k.second, by[k].seeds.push_back(&r);
  }
  harness::Table t;
  t.title = "FPT: frozen pretrained transformers vs. full training (preset " + p.name + ")";
  t.columns = {"task",          "arm",    "source", "seeds", "trained params", "val acc", "test acc", "paper (unverified)",
               "steps to best", "steps/s"};
  t.right = {false, false, false, true, true, true, true, true, true, true};
  std::map<std::string, std::vector<harness::CurveArm>> curves;  // per task
  harness::Plot bars;
  bars.title = "FPT test accuracy (mean ± standard error over seeds)", bars.ylabel = "test accuracy (%)",
  bars.key = "below horizontal";
  std::vector<std::string> tasks, arms;
  for (auto& [task, arm] : order) {
    if (std::find(tasks.begin(), tasks.end(), task) == tasks.end()) tasks.push_back(task);
    if (std::find(arms.begin(), arms.end(), arm) == arms.end()) arms.push_back(arm);
  }
  for (auto& k : order) {
    const Group& g = by[k];
    const CellResult& f = *g.seeds.front();
    harness::MeanSE val = harness::accuracy_mean_se(g.metric("val_acc"), f.extra.value("val_examples", (int64_t)0));
    harness::MeanSE test = harness::accuracy_mean_se(g.metric("test_acc"), f.test_examples);
    double paper = paper_accuracy(g.task, g.arm), steps = 0, rate = 0;
    for (auto* r : g.seeds)
      steps += r->extra.value("steps_to_best", 0.0) / g.seeds.size(), rate += r->steps_per_s / g.seeds.size();
    t.rows.push_back({g.task, g.arm, f.extra.value("pretrained", nlohmann::json::object()).value("source", "-"),
                      std::to_string(g.seeds.size()), std::to_string(f.extra.value("trainable_params", (int64_t)0)),
                      harness::format_mean_se(val), harness::format_mean_se(test), std::isnan(paper) ? "-" : fixed(paper, 1),
                      fixed(steps, 0), fixed(rate, 1)});
    // the learning curve: the pretraining the transformer came from (in the cache folder), then this arm's training
    harness::CurveArm arm{g.arm, {}};
    for (auto* r : g.seeds)
      arm.seeds.push_back({harness::cached_pretraining_log(*r), harness::phase_rows(harness::cell_log(out, *r), "train")});
    curves[g.task].push_back(arm);
  }
  for (auto& arm : arms) {
    harness::Series s;
    s.title = arm;
    for (auto& task : tasks) {
      auto it = by.find({task, arm});
      harness::MeanSE m = it == by.end()
                              ? harness::MeanSE{}
                              : harness::accuracy_mean_se(it->second.metric("test_acc"), it->second.seeds.front()->test_examples);
      s.y.push_back(100 * m.mean), s.err.push_back(100 * m.se);
    }
    bars.series.push_back(s);
  }
  std::filesystem::create_directories(out + "/plots");
  write_depth_study(out, by);
  for (auto& [task, arms] : curves) {
    harness::CurveText text;
    text.title = "FPT " + task + ": mean over seeds (band: ± one standard error); pretraining shared by the seeds";
    text.pretrain_loss = "the source's loss", text.train = "training", text.train_loss = "the task's loss";  // fits the width
    harness::plot_learning_curves(text, arms, out + "/plots/" + task);
  }
  harness::plot_bars(bars, tasks, out + "/plots/test_accuracy");
  t.notes.push_back(
      "Accuracies in %: per bit for the bit tasks (the paper's sign agreement), per example otherwise, on the whole "
      "split; mean ± standard error over the seeds (one seed: the binomial error). source: where the transformer's "
      "weights came from (language: our byte LM on packaged English text; random; bit_memory). trained params: the "
      "parameters the arm updates. steps to best: the first evaluation within 1 point of the best one.");
  t.notes.push_back("paper (unverified): Lu et al. 2021, Table 1 (fpt, full, lstm) and Table 2 (random, bitmem), as recalled in "
                    "shared/research/wave2.md and not checked against the PDF; at GPT-2 scale (12 layers, width 768, 124M "
                    "parameters pretrained on WebText), with bit memory at 1000 bits, ListOps at 512 and MNIST, where we have "
                    "Fashion-MNIST (image_patches) and the 8x8 digits (digits), and TAPE remote homology (fold classification "
                    "among 1195 folds), where we have 9-way family recognition from sampled sequences (homology): those "
                    "columns are not the same tasks.");
  if (!p.description.empty()) t.notes.push_back("Preset " + p.name + ": " + p.description);
  return t;
}

}  // namespace fpt
