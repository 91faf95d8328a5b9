// apps/studies/cosent_study.cpp - see cosent.h: the study as an experiment on the harness (its settings, one cell
// with its lr selection, the report, the old command line).
#include <algorithm>
#include <iostream>
#include <map>

#include "apps/common/experiment.h"
#include "apps/common/report.h"
#include "apps/common/stats.h"
#include "cli.h"
#include "cosent.h"
#include "nn/registry.h"
#include "selection.h"
#include "study.h"

namespace studies {

using namespace dl;
namespace harness = dl::harness;
using harness::json;

// ---- the settings -------------------------------------------------------------------------------------------------

std::vector<double> CosentConfig::lr_list() const { return harness::parse_real_list(lrs, "lrs"); }

PairTaskConfig CosentConfig::data() const {
  PairTaskConfig d;
  d.chunk_len = chunk_len, d.val_pairs = val_pairs, d.test_pairs = test_pairs, d.seed = (uint64_t)data_seed,
  d.data_dir = data_dir;
  return d;
}

void CosentConfig::validate() const {
  const std::string key = task + "/" + arm;
  auto bad = [&](const std::string& m) { throw harness::ConfigError(key + ": " + m); };
  for (auto [field, v] : std::vector<std::pair<const char*, double>>{{"steps", steps},
                                                                     {"eval_every", eval_every},
                                                                     {"d_model", d_model},
                                                                     {"layers", layers},
                                                                     {"lambda", lambda},
                                                                     {"max_len", max_len},
                                                                     {"queries", queries}})
    harness::require_positive(key, field, v);
  if (batch < 2 || batch > 4096) bad("field 'batch' must be in [2, 4096], found " + std::to_string(batch));
  if (bpe_merges < 0 || bpe_merges > 100000)
    bad("field 'bpe_merges' must be in [0, 100000], found " + std::to_string(bpe_merges));
  if (chunk_len < 16 || chunk_len > 100000) bad("field 'chunk_len' must be in [16, 100000], found " + std::to_string(chunk_len));
  if (val_pairs < 4 || test_pairs < 4) bad("fields 'val_pairs' and 'test_pairs' must be at least 4");
  if (tokenizer != "bpe" && tokenizer != "bytes") bad("field 'tokenizer': '" + tokenizer + "' is not bpe or bytes");
  if (weight_decay < 0 || clip < 0 || data_seed < 0 || selection_seed < 0)
    bad("fields 'weight_decay', 'clip', 'data_seed' and 'selection_seed' must be >= 0");
  try {
    lr_list();
    nn::find_layer(layer);  // an unknown layer names the known ones
  } catch (const std::exception& e) {
    bad(e.what());
  }
}

// ---- one cell -----------------------------------------------------------------------------------------------------
namespace {

using harness::fixed;  // apps/common/report.h

// The tokenized pair task of a config, built once per process (the cells and lr points of a run share it).
const PairTask& task_of(const CosentConfig& c, const harness::RunContext& ctx) {
  const json key = {c.task,     c.chunk_len, c.val_pairs,  c.test_pairs, c.data_seed,
                    c.data_dir, c.tokenizer, c.bpe_merges, c.max_len};
  return built_once<PairTask>(key, [&] {
    PairTask t = make_pair_task(c.task, c.data());
    tokenize_task(t, c.tokenizer, c.bpe_merges, c.max_len);
    if (!ctx.quiet && ctx.writer())
      std::cerr << "[cosent] " << c.task << ": " << t.train.texts.size() << " / " << t.val.texts.size() << " / "
                << t.test.texts.size() << " texts (train / val / test), " << t.val_pairs.size() << " val and "
                << t.test_pairs.size() << " test pairs\n";
    return t;
  });
}

// untrained: the encoder at the seed's initialisation. A loss: its lr grid on the selection seed (with retrieval
// examples), the lr with the best validation Spearman, then that lr on the cell's seed - or, on the selection seed,
// the grid's own run.
harness::CellResult run_cell(const CosentConfig& c, const harness::Cell& cell, const harness::RunContext& ctx) {
  const PairTask& t = task_of(c, ctx);
  harness::CellResult res;
  TrainResult r;
  if (c.arm == "untrained") {
    r = train_encoder(t, "cosent", 0, c.seed, c, ctx);
    res.extra["lr"] = 0;
  } else {
    const std::vector<double> lrs = c.lr_list();
    std::vector<SelectionPoint> points;
    json point_config = cell.config;  // what an lr point depends on: the cell's settings but its seed
    point_config.erase("seed");
    for (double lr : lrs) {
      point_config["lr"] = lr;
      points.push_back({"lr" + number(lr),
                        "[" + c.task + "/" + c.arm + " lr " + number(lr) + " seed " + std::to_string(c.selection_seed) + "]",
                        point_config});
    }
    const std::vector<json> tried =
        run_selection(ctx, c.task + "/" + c.arm, points, [&](size_t i, const harness::RunContext& pctx) {
          return train_encoder(t, c.arm, lrs[i], c.selection_seed, c, pctx, true).to_json();
        });
    std::vector<double> val;
    for (const json& j : tried) val.push_back(j.at("val").get<double>());
    const size_t best = best_index(val);
    res.extra["lr_search"] = json::array();
    for (size_t k = 0; k < lrs.size(); k++) res.extra["lr_search"].push_back({{"lr", lrs[k]}, {"val", val[k]}});
    res.extra["lr"] = lrs[best];
    if (!ctx.quiet && ctx.writer())
      std::cerr << ctx.label << " chose lr " << lrs[best] << " (val " << fixed(val[best], 3) << ")\n";
    r = c.seed == c.selection_seed ? TrainResult::from_json(tried[best]) : train_encoder(t, c.arm, lrs[best], c.seed, c, ctx);
  }
  res.metrics = {{"val", r.val},         {"test", r.test},       {"steps_to_90", r.steps_to_90},
                 {"recall1", r.recall1}, {"recall5", r.recall5}, {"mrr", r.mrr},
                 {"cos_sd", r.cos_sd}};
  for (size_t i = 0; i < r.curve_steps.size(); i++)
    res.curve.push_back({"train", (int)r.curve_steps[i], NAN, NAN, r.curve_val[i], 0});
  res.extra["examples"] = r.examples;
  res.extra["texts"] = {t.train.texts.size(), t.val.texts.size(), t.test.texts.size()};
  if (!ctx.quiet && ctx.writer()) std::cerr << ctx.label << ": val " << fixed(r.val, 3) << " test " << fixed(r.test, 3) << "\n";
  return res;
}

}  // namespace

// ---- the report ---------------------------------------------------------------------------------------------------
namespace {

// One arm's row (mean ± SE over its seeds) and, for a loss, its validation curve.
void arm_row(const std::string& task, const std::string& arm, const Cells& rs, harness::Table& t, harness::Plot& p) {
  const std::string lr = arm == "untrained" ? "0" : number(rs[0]->extra["lr"].get<double>());
  bool all_reach = true;  // steps to 90%: only when every seed's final Spearman is positive
  for (auto* r : rs) all_reach &= r->metric("steps_to_90") >= 0;
  t.rows.push_back({task, arm, lr, std::to_string(rs.size()), harness::format_mean_se(over(rs, "val")),
                    harness::format_mean_se(over(rs, "test")),
                    all_reach && arm != "untrained" ? harness::format_mean_se(over(rs, "steps_to_90"), 1, 0) : "-",
                    harness::format_mean_se(over(rs, "recall1")), harness::format_mean_se(over(rs, "recall5")),
                    harness::format_mean_se(over(rs, "mrr")), harness::format_mean_se(over(rs, "cos_sd"), 1, 3)});
  if (arm != "untrained") p.series.push_back(accuracy_curve(arm + " (lr " + lr + ")", rs));
}

harness::Table report(const std::string& out, const harness::Preset& p, const std::vector<harness::CellResult>& rs) {
  std::map<std::string, std::map<std::string, Cells>> by = cells_by(rs, "task", "arm");  // in seed order
  harness::Table main_t, lr_t;
  main_t.title = "CoSENT vs SBERT softmax vs cosine-MSE: Spearman x 100 of cos(u, v) against the grade";
  main_t.columns = {"pairs",        "loss",    "lr",      "seeds",     "val Spearman",  "test Spearman",
                    "steps to 90%", "R@1 (%)", "R@5 (%)", "MRR x 100", "sd of test cos"};
  main_t.right = {false, false, true, true, true, true, true, true, true, true, true};
  lr_t.title = "Learning rates tried (seed 0, validation Spearman x 100 after the full budget)";
  lr_t.columns = {"pairs", "loss", "lr", "val Spearman", "chosen"};
  lr_t.right = {false, false, true, true, false};
  if (rs.empty()) return main_t;
  const CosentConfig c0 = config_of<CosentConfig>(rs[0].cell);
  std::string examples;
  for (const std::string& task : in_preset_order(p.values[0], by)) {
    const std::map<std::string, Cells>& arms = by[task];
    harness::Plot plot;
    plot.title = task + ": validation Spearman of cos(u, v) vs step (mean ± SE over seeds)";
    plot.xlabel = "step", plot.ylabel = "Spearman", plot.key = "bottom right";
    for (const std::string& arm : in_preset_order(p.values[1], arms)) {
      const Cells& cells = arms.at(arm);
      arm_row(task, arm, cells, main_t, plot);
      if (arm == "untrained") continue;
      for (const json& k : cells[0]->extra["lr_search"])
        lr_t.rows.push_back(
            {task, arm, number(k["lr"]), fixed(100 * k["val"].get<double>(), 1), k["lr"] == cells[0]->extra["lr"] ? "yes" : ""});
      if (cells[0]->extra["examples"].empty()) continue;
      examples += "**" + task + ", " + arm + " (seed " + std::to_string(cells[0]->cell.seed) + ")**\n";
      for (const json& e : cells[0]->extra["examples"]) examples += "- " + e.get<std::string>() + "\n";
      examples += "\n";
    }
    if (arms.count("cosent"))  // paired over the seeds both ran: the same data, seeds and budget
      for (const std::string& other : in_preset_order(p.values[1], arms)) {
        if (other == "cosent" || other == "untrained") continue;
        std::vector<double> a, b;
        for (auto* r0 : arms.at(other))
          for (auto* r1 : arms.at("cosent"))
            if (r0->cell.seed == r1->cell.seed) a.push_back(r0->metric("test")), b.push_back(r1->metric("test"));
        if (a.size() < 2) continue;
        const harness::MeanSE d = harness::paired_difference(a, b, 0);
        main_t.rows.push_back({task, "cosent - " + other, "", std::to_string(a.size()), "",
                               harness::format_mean_se(d, 100, 1, true), "", "", "", "", ""});
      }
    harness::plot_lines(plot, out + "/plots/" + task + "_spearman_vs_step");
  }
  main_t.notes.push_back(
      "Spearman x 100 between cos(u, v) and the gold grade on the held-out pairs, mean ± standard error over seeds "
      "(a seed draws the initialisation and the training pairs; the split and the val/test pairs are fixed). Each loss "
      "had the same budget: " +
      std::to_string(c0.steps) + " steps of " + std::to_string(c0.batch) +
      " pairs, AdamW, warmup + cosine schedule; its lr was chosen on the validation Spearman of seed " +
      std::to_string(c0.selection_seed) +
      " (table below). "
      "softmax: SBERT's classifier on [u, v, |u - v|], evaluated by cos(u, v) with the classifier dropped. "
      "Steps to 90%: the first evaluation step (every " +
      std::to_string(c0.eval_every) +
      ") at which the validation Spearman reaches 90% of its final value. Retrieval: each query is a test text, ranked "
      "against all other test texts by cosine; relevant = the same document (brown) or the same polarity (sentiment). "
      "'cosent - X': the paired per-seed difference of test Spearman. sd of test cos: the standard deviation of "
      "cos(u, v) over the test pairs (near 0: the encoder maps every text to nearly the same direction).");
  main_t.notes.push_back(lr_t.markdown());
  if (!examples.empty()) main_t.notes.push_back("## Retrieval examples\n\n" + examples);
  return main_t;
}

}  // namespace

// ---- the experiment and its command line --------------------------------------------------------------------------

harness::Experiment cosent_experiment() {
  harness::Experiment e =
      study_experiment("cosent", "studies cosent: CoSENT vs SBERT softmax vs cosine-MSE for sentence encoders (Spearman)");
  e.axes = {{{"task", {"brown", "sentiment"}}, "", "brown (passage pairs, 3 grades) or sentiment (sentence pairs, 2)"},
            {{"arm", {"untrained", "cosent", "softmax", "cos_mse"}}, "", "a loss, or untrained (the encoder at init)"}};
  harness::typed_cells<CosentConfig>(e, run_cell);
  e.report = report;
  e.cost = [](const harness::Cell& cell) {  // the lr grid's runs and the cell's own, in steps
    const CosentConfig c = config_of<CosentConfig>(cell);
    return c.arm == "untrained" ? 1.0 : (double)c.steps * (c.lr_list().size() + 1) * (c.task == "brown" ? 3 : 1);
  };
  return e;
}

const LegacyFlags& cosent_legacy_flags() {
  static const LegacyFlags f =
      legacy_flags<CosentConfig>({"lrs", "steps", "batch", "eval_every", "d_model", "layers", "layer", "lambda", "tokenizer",
                                  "bpe_merges", "max_len", "chunk_len", "val_pairs", "test_pairs", "queries"},
                                 {{"--losses", [](const std::string& v) {
                                     return std::vector<std::string>{"--arms", "untrained," + v};
                                   }}});
  return f;
}

}  // namespace studies
