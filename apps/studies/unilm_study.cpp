// apps/studies/unilm_study.cpp - `studies unilm` as an experiment on the harness: its settings, one cell (one arm at
// one lr and seed: train_unilm), the report (the arms at the lr chosen on validation, paired differences over seeds,
// decoded examples, the validation curves) and the old command line (see unilm.h).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "apps/common/experiment.h"
#include "apps/common/report.h"
#include "apps/common/results.h"
#include "apps/common/stats.h"
#include "cli.h"
#include "study.h"
#include "unilm.h"

namespace studies {

using namespace dl;
namespace harness = dl::harness;
using json = nlohmann::json;

// ---- the settings -------------------------------------------------------------------------------------------------

UnilmModelOptions UnilmConfig::model() const { return {d_model, layers, heads, mlp}; }

UnilmDataConfig UnilmConfig::data() const {
  UnilmDataConfig d;
  d.max_a = max_a, d.respell = pairs == "respelled", d.data_dir = data_dir;
  return d;
}

void UnilmConfig::validate() const {
  const std::string key = arm + "/" + harness::json(lr).dump();
  for (auto [field, v] : std::vector<std::pair<const char*, double>>{{"lr", lr},
                                                                     {"steps", steps},
                                                                     {"eval_every", eval_every},
                                                                     {"checkpoint_every", checkpoint_every},
                                                                     {"scale", scale},
                                                                     {"d_model", d_model},
                                                                     {"layers", layers},
                                                                     {"heads", heads},
                                                                     {"mlp", mlp}})
    harness::require_positive(key, field, v);
  auto bad = [&](const std::string& m) { throw harness::ConfigError(key + ": " + m); };
  if (batch < 2) bad("field 'batch' must be at least 2 (the contrastive loss needs negatives), found " + std::to_string(batch));
  if (max_a < 8 || max_a > 400) bad("field 'max_a' must lie in [8, 400], found " + std::to_string(max_a));
  if (val_pairs < 2 || test_pairs < 2) bad("fields 'val_pairs' and 'test_pairs' must be at least 2 (retrieval)");
  if (decode_pairs < 0 || weight_decay < 0 || clip < 0) bad("fields 'decode_pairs', 'weight_decay' and 'clip' must be >= 0");
  if (pairs != "respelled" && pairs != "normalised") bad("field 'pairs': '" + pairs + "' is not respelled or normalised");
  if (d_model % heads || (d_model / heads) % 2)
    bad("d_model " + std::to_string(d_model) + " must split into " + std::to_string(heads) + " heads of even size (rotary)");
  parse_arm(arm);
}

// ---- one cell -----------------------------------------------------------------------------------------------------
namespace {

harness::CellResult run_cell(const UnilmConfig& o, const harness::Cell& cell, const harness::RunContext& ctx) {
  const UnilmData data = make_unilm_pairs(o.data());
  const UnilmRun run = train_unilm(data, o, ctx);
  harness::CellResult r;
  const UnilmEval& e = run.test;
  r.metrics = {
      {"token_acc", e.token_acc}, {"exact", e.exact}, {"char_acc", e.char_acc}, {"recall1", e.recall1}, {"recall5", e.recall5}};
  r.test_examples = (int64_t)std::min<size_t>(data.test.size(), o.test_pairs);
  r.extra = {{"examples", e.examples},
             {"curve_steps", run.curve_steps},
             {"curve_token_acc", run.curve_token_acc},
             {"curve_recall1", run.curve_recall1},
             {"seconds", run.seconds},
             {"pairs", {data.train.size(), data.val.size(), data.test.size()}}};
  if (!ctx.quiet && ctx.writer())
    std::cerr << ctx.label << " (" << harness::fixed(run.seconds, 0) << " s): test token acc " << harness::fixed(e.token_acc, 3)
              << " exact " << harness::fixed(e.exact, 3) << " char " << harness::fixed(e.char_acc, 3) << " R@1 "
              << harness::fixed(e.recall1, 3) << " R@5 " << harness::fixed(e.recall5, 3) << "\n";
  if (ctx.writer()) std::filesystem::remove_all(ctx.dir + "/train");  // the checkpoints: --resume skips a finished cell
  return r;
}

}  // namespace

// ---- the report -----------------------------------------------------------------------------------------------------
namespace {

using dl::harness::fixed;  // apps/common/report.h

const char* mask_name(UnilmMask m) { return m == UnilmMask::prefix ? "prefix" : m == UnilmMask::causal ? "causal" : "full"; }
std::string arm_losses(const std::string& a) {
  UnilmArm x = parse_arm(a);
  return x.gen && x.con ? "seq2seq + contrastive" : x.gen ? "seq2seq" : x.con ? "contrastive" : "none (initialisation)";
}

json run_json(const harness::CellResult& r) {
  return {{"token_acc", r.metric("token_acc")},
          {"exact", r.metric("exact")},
          {"char_acc", r.metric("char_acc")},
          {"recall1", r.metric("recall1")},
          {"recall5", r.metric("recall5")},
          {"examples", r.extra["examples"]},
          {"curve_steps", r.extra["curve_steps"]},
          {"curve_token_acc", r.extra["curve_token_acc"]},
          {"curve_recall1", r.extra["curve_recall1"]},
          {"seconds", r.extra["seconds"]}};
}

// The validation score that chooses the lr: the mean of the last token accuracy and recall@1.
double lr_score(const harness::CellResult& r) {
  return 0.5 * (r.extra["curve_token_acc"].back().get<double>() + r.extra["curve_recall1"].back().get<double>());
}

// With more than one lr: the joint arm's lowest seed at each one (a table), and the lr it scores best at.
std::string choose_lr(std::map<std::string, std::map<std::string, Cells>>& by, const std::vector<std::string>& lrs,
                      harness::Table& lr_t, json& j) {
  std::string lr = lrs.front();
  double best = -1;
  for (const std::string& x : lrs)
    if (by[x].count("joint") && lr_score(*by[x]["joint"].front()) > best) best = lr_score(*by[x]["joint"].front()), lr = x;
  lr_t.title = "Learning rates tried (joint arm, seed 0; validation, mean of token accuracy and R@1)";
  lr_t.columns = {"lr", "val token acc (%)", "val R@1 (%)", "chosen"};
  lr_t.right = {true, true, true, false};
  for (const std::string& x : lrs) {
    if (!by[x].count("joint")) continue;
    const harness::CellResult& r = *by[x]["joint"].front();
    const double acc = r.extra["curve_token_acc"].back(), r1 = r.extra["curve_recall1"].back();
    lr_t.rows.push_back({number(std::stod(x)), fixed(100 * acc, 1), fixed(100 * r1, 1), x == lr ? "yes" : ""});
    j["lr_search"].push_back({{"lr", std::stod(x)}, {"val_token_acc", acc}, {"val_recall1", r1}});
  }
  return lr;
}

// The validation curves of one arm (mean ± SE over its seeds) on the two plots.
void curve_series(const std::string& arm, const Cells& rs, harness::Plot& pacc, harness::Plot& pr1) {
  for (auto [plot, key] : {std::pair{&pacc, "curve_token_acc"}, std::pair{&pr1, "curve_recall1"}}) {
    harness::Series sr;
    sr.title = arm;
    sr.x = rs[0]->extra["curve_steps"].get<std::vector<double>>();
    for (size_t i = 0; i < sr.x.size(); i++) {
      std::vector<double> at;
      for (auto* r : rs) at.push_back(r->extra[key][i]);
      harness::MeanSE e = harness::mean_se(at);
      sr.y.push_back(e.mean), sr.err.push_back(e.se);
    }
    plot->series.push_back(sr);
  }
}

harness::Table report(const std::string& out, const harness::Preset& p, const std::vector<harness::CellResult>& rs) {
  if (rs.empty()) return harness::Table{};
  std::map<std::string, std::map<std::string, Cells>> by = cells_by(rs, "lr", "arm");  // in seed order
  const std::vector<std::string> lrs = in_preset_order(p.values[1], by);
  std::vector<std::string> arms = p.values[0];  // the preset's order, then any other
  for (const harness::CellResult& r : rs)
    if (std::find(arms.begin(), arms.end(), r.cell.value("arm")) == arms.end()) arms.push_back(r.cell.value("arm"));
  const UnilmConfig o = config_of<UnilmConfig>(rs.front().cell);
  const json pairs = rs.front().extra["pairs"];
  json j = {{"options",
             {{"arms", arms},
              {"seeds", 0},
              {"steps", o.steps},
              {"batch", o.batch},
              {"lrs", json::array()},
              {"scale", o.scale},
              {"d_model", o.d_model},
              {"layers", o.layers},
              {"heads", o.heads},
              {"mlp", o.mlp},
              {"max_a", o.max_a},
              {"pairs", o.pairs},
              {"test_pairs", o.test_pairs},
              {"decode_pairs", o.decode_pairs},
              {"val_pairs", o.val_pairs}}},
            {"pairs", pairs},
            {"arms", json::object()}};
  for (const std::string& x : lrs) j["options"]["lrs"].push_back(std::stod(x));
  harness::Table lr_t;
  const std::string lr = lrs.size() > 1 ? choose_lr(by, lrs, lr_t, j) : lrs.front();
  std::map<std::string, Cells>& runs = by[lr];
  harness::Table t;
  t.title = "SimBERT in miniature: one encoder generating and retrieving B from A (test pairs, mean ± SE over seeds)";
  t.columns = {"arm", "mask", "losses", "seeds", "token acc (%)", "exact (%)", "char acc (%)", "R@1 (%)", "R@5 (%)"};
  t.right = {false, false, false, true, true, true, true, true, true};
  harness::Plot pacc, pr1;
  pacc.title = "validation teacher-forced next-byte accuracy on B (mean ± SE over seeds)";
  pacc.xlabel = "step", pacc.ylabel = "token accuracy", pacc.key = "bottom right";
  pr1.title = "validation recall@1 of A -> B among " + std::to_string(std::min<int64_t>(pairs[1].get<int64_t>(), o.val_pairs)) +
              " (mean ± SE over seeds)";
  pr1.xlabel = "step", pr1.ylabel = "recall@1", pr1.key = "bottom right";
  std::string examples_md;
  size_t seeds = 0;
  for (const std::string& arm : arms) {
    if (!runs.count(arm)) continue;
    const Cells& cs = runs[arm];
    seeds = std::max(seeds, cs.size());
    auto f = [&](const char* metric) { return harness::format_mean_se(over(cs, metric)); };
    for (auto* r : cs) j["arms"][arm].push_back(run_json(*r));
    const UnilmArm a = parse_arm(arm);
    t.rows.push_back({arm, mask_name(a.mask), arm_losses(arm), std::to_string(cs.size()), f("token_acc"), f("exact"),
                      f("char_acc"), f("recall1"), f("recall5")});
    if (!a.gen && !a.con) continue;  // untrained: no curve, no examples
    curve_series(arm, cs, pacc, pr1);
    examples_md += "**" + arm + " (seed 0)**\n\n";
    for (auto& e : cs[0]->extra["examples"]) examples_md += "- " + e.get<std::string>() + "\n";
    examples_md += "\n";
  }
  j["options"]["seeds"] = seeds;
  // paired over seeds (the same seeds, data and budget): does the other loss help?
  auto paired = [&](const std::string& x, const std::string& y, const char* metric, const std::string& what) {
    if (!runs.count(x) || !runs.count(y) || runs[x].size() != runs[y].size() || runs[x].size() < 2) return;
    std::vector<double> a, b;
    for (auto* r : runs[x]) a.push_back(r->metric(metric));
    for (auto* r : runs[y]) b.push_back(r->metric(metric));
    harness::MeanSE d = harness::paired_difference(b, a, 0);  // a - b per seed (the helper gives its 2nd - 1st)
    t.notes.push_back("Paired difference " + x + " - " + y + " in " + what + ": " + harness::format_mean_se(d, 100, 1, true) +
                      " points (" + std::to_string(a.size()) + " seeds).");
    j["paired"][x + "-" + y][what] = {{"mean", d.mean}, {"se", d.se}};
  };
  paired("joint", "gen", "token_acc", "token accuracy");
  paired("joint", "gen", "char_acc", "greedy char accuracy");
  paired("joint", "con", "recall1", "recall@1");
  paired("gen", "gen_causal", "token_acc", "token accuracy");
  paired("gen", "gen_causal", "char_acc", "greedy char accuracy");
  const size_t n_test = std::min<size_t>(pairs[2].get<size_t>(), o.test_pairs);
  t.notes.insert(
      t.notes.begin(),
      "Pairs: A = the first words (<= " + std::to_string(o.max_a) +
          " bytes, >= 3 words) of a Brown sentence, B = A "
          "lower-cased without articles and punctuation" +
          std::string(o.pairs == "respelled" ? ", then ROT13-respelled" : "") +
          " (a stand-in for SimBERT's similar-question pairs); " + std::to_string(pairs[0].get<size_t>()) + " / " +
          std::to_string(pairs[1].get<size_t>()) + " / " + std::to_string(pairs[2].get<size_t>()) +
          " train / val / test pairs, split by document. Every arm: the same " + std::to_string(o.layers) + "-layer encoder (d " +
          std::to_string(o.d_model) + ", " + std::to_string(o.heads) + " heads, rotary), " + std::to_string(o.steps) +
          " AdamW steps of " + std::to_string(o.batch) + " pairs, lr " + fixed(std::stod(lr), 4) +
          " (warmup + cosine). Token acc: teacher-forced next-byte accuracy on 'B [SEP]' over " + std::to_string(n_test) +
          " test pairs; exact / char acc: greedy decoding of the first " +
          std::to_string(std::min<size_t>(n_test, o.decode_pairs)) +
          " (char acc = 1 - Levenshtein / |B|, floored at 0); R@k: each test A ranks all " + std::to_string(n_test) +
          " test B's by cosine of the pooled [CLS] vectors (chance R@1 = " + fixed(100.0 / n_test, 2) +
          "%). "
          "The con arm trains no LM head and the gen arms no similarity: their other columns show what comes for free.");
  if (lrs.size() > 1) t.notes.push_back(lr_t.markdown());
  t.notes.push_back("## Decoded test examples (greedy)\n\n" + examples_md);
  harness::plot_lines(pacc, out + "/plots/val_token_acc");
  harness::plot_lines(pr1, out + "/plots/val_recall1");
  j["table"] = t.to_json();
  double seconds = 0;
  for (const harness::CellResult& r : rs) seconds += r.wall_s;
  j["seconds"] = seconds;  // the cells' wall time, summed
  harness::write_text_atomic(out + "/unilm.json", j.dump(2) + "\n");
  harness::write_text_atomic(out + "/unilm.md", t.markdown());
  return t;
}

}  // namespace

// ---- the experiment and its command line --------------------------------------------------------------------------

harness::Experiment unilm_experiment() {
  harness::Experiment e = study_experiment(
      "unilm", "studies unilm: SimBERT in miniature, the UniLM prefix mask, generation + retrieval in one encoder");
  e.axes = {{{"arm", {"untrained", "joint", "gen", "con", "gen_causal"}}, "", "untrained, joint, gen, con or gen_causal"},
            {{"lr", {}}, "", "the learning rate, e.g. 0.01 (the preset's when it has one)"}};
  harness::typed_cells<UnilmConfig>(e, run_cell);
  e.report = report;
  e.cost = [](const harness::Cell& c) {
    const UnilmArm a = parse_arm(c.config["arm"]);
    return (a.gen + a.con) * c.config["steps"].get<double>();
  };
  return e;
}

const LegacyFlags& unilm_legacy_flags() {
  static const LegacyFlags f =
      legacy_flags<UnilmConfig>({"steps", "batch", "eval_every", "scale", "d_model", "layers", "heads", "mlp", "pairs", "max_a",
                                 "val_pairs", "test_pairs", "decode_pairs", "data_dir"});
  return f;
}

}  // namespace studies
