// apps/studies/nsp_bert_report.cpp - see nsp_bert_report.h. The rows come from the cells' results: a task's zero-shot
// rows from its zero-shot cell of the lowest seed (the zero-shot does not depend on the seed), its fine-tune rows from
// the pretrained and scratch cells, one accuracy per seed and budget (metrics acc_<budget>).
#include "nsp_bert_report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "apps/common/stats.h"
#include "nsp_bert.h"
#include "study.h"

namespace studies {

namespace harness = dl::harness;
using json = nlohmann::json;

namespace {

using dl::harness::fixed;  // apps/common/report.h
std::string pct(double x) { return fixed(100 * x, 1); }
std::string pct_se(const harness::MeanSE& m) { return harness::format_mean_se(m); }

// The pretrained model on held-out documents: untrained vs pretrained vs the floor.
harness::Table pretraining_table(const json& info, const NspBertConfig& o) {
  harness::Table tp;
  tp.title = "NSP-BERT: the pretrained model on held-out documents";
  tp.columns = {"measure", "untrained", "pretrained", "floor"};
  tp.right = {false, true, true, true};
  const auto& b = info["before"];
  const auto& a = info["after"];
  tp.rows.push_back({"NSP accuracy (%)", pct(b["nsp_accuracy"]), pct(a["nsp_accuracy"]), "50.0 (chance)"});
  tp.rows.push_back(
      {"MLM accuracy (%)", pct(b["mlm_accuracy"]), pct(a["mlm_accuracy"]), pct(a["mlm_majority"]) + " (most frequent byte)"});
  tp.rows.push_back({"NSP loss (nats)", fixed(b["nsp_loss"], 3), fixed(a["nsp_loss"], 3), fixed(std::log(2.0), 3) + " (chance)"});
  tp.rows.push_back({"MLM loss (nats / masked byte)", fixed(b["mlm_loss"], 3), fixed(a["mlm_loss"], 3), "-"});
  const BertConfig c = o.pretrain().bert;
  tp.notes.push_back(
      std::to_string(a["pairs"].get<int64_t>()) + " validation pairs (" + std::to_string(a["masked"].get<int64_t>()) +
      " masked bytes) from " + std::to_string(info["val_documents"].get<int64_t>()) +
      " held-out documents; pretraining: " + std::to_string(o.steps) + " steps of " + std::to_string(o.batch) + " pairs (" +
      std::to_string(info["train_pairs"].get<int64_t>()) + " training pairs), lr " + fixed(o.lr, 4) + " warmup + cosine; BERT " +
      std::to_string(c.layers) + " layers, d " + std::to_string(c.d_model) + ", " + std::to_string(c.heads) + " heads, ff " +
      std::to_string(c.dim_ff) + ", " + (c.norm_first ? "pre-LN" : "post-LN") + ", dropout " + fixed(c.dropout, 2) +
      "; A keeps its last " + std::to_string(o.max_a) + " bytes, B its first " + std::to_string(o.max_b) +
      ". One pretraining seed (" + std::to_string(o.pretrain_seed) + ").");
  return tp;
}

// One task's zero-shot rows (from its zero-shot cell) in t and tt, and its part of the json.
void zero_shot_rows(const std::string& name, const harness::CellResult& z, harness::Table& t, harness::Table& tt, json& jt) {
  const json& task = z.extra["task"];
  const json& zs = z.extra["zero_shot"];
  const int K = (int)task["classes"].size();
  const int64_t N = z.test_examples;
  auto binom = [&](double acc) { return harness::MeanSE{acc, harness::binomial_se(acc, N), 1, true}; };
  const int best_t = zs["best_template"];
  for (size_t k = 0; k < zs["per_template_val"].size(); k++) {
    std::string names;
    for (int l = 0; l < K; l++) names += (l ? " / " : "") + task["templates"][l][k].get<std::string>();
    tt.rows.push_back({name, names, pct(zs["per_template_val"][k]), pct(zs["per_template_test"][k])});
  }
  tt.rows.push_back({name, "mean P(IsNext) over the templates", pct(z.metric("zero_shot_mean_val")), pct(zs["mean_templates"])});
  t.rows.push_back({name, "zero-shot NSP, untrained BERT (control)", "0", pct_se(binom(zs["untrained"]))});
  t.rows.push_back({name, "zero-shot NSP, mean over templates", "0", pct_se(binom(zs["mean_templates"]))});
  t.rows.push_back({name, "zero-shot NSP, best template on validation (#" + std::to_string(best_t) + ")",
                    std::to_string(task["val"].get<int64_t>()) + " (val, choice only)",
                    pct_se(binom(zs["per_template_test"][best_t]))});
  jt["zero_shot"] = zs;
}

// One task's fine-tune rows, pretrained and from scratch at each budget over the seeds' cells, and its plot.
void finetune_rows(const std::string& name, const Cells& pre, const Cells& scr, const harness::CellResult* zs, double majority,
                   const std::string& out, harness::Table& t, json& jt) {
  harness::Plot pl;
  pl.title = name + ": test accuracy vs labelled examples";
  pl.xlabel = "labelled training examples", pl.ylabel = "test accuracy (%)", pl.logx = true;
  harness::Series s_pre, s_scr, s_zs, s_ch;
  s_pre.title = "fine-tuned, pretrained", s_scr.title = "fine-tuned, from scratch",
  s_zs.title = "zero-shot NSP (mean of templates)";
  s_ch.title = "majority class";
  jt["finetune"] = json::array();
  const Cells& any = pre.empty() ? scr : pre;
  for (int budget : config_of<NspBertConfig>(any.front()->cell).budget_list()) {
    const std::string b = budget == 0 ? "all" : std::to_string(budget);
    const int n = any.front()->extra["labels"][b];
    for (bool from_pre : {true, false}) {
      const Cells& cells = from_pre ? pre : scr;
      if (cells.empty()) continue;
      std::vector<double> accs;
      for (auto* r : cells) accs.push_back(r->metric("acc_" + b));
      harness::MeanSE m = harness::accuracy_mean_se(accs, cells.front()->test_examples);
      t.rows.push_back(
          {name, std::string("fine-tune, ") + (from_pre ? "pretrained" : "from scratch"), std::to_string(n), pct_se(m)});
      harness::Series& s = from_pre ? s_pre : s_scr;
      s.x.push_back(n), s.y.push_back(100 * m.mean), s.err.push_back(100 * m.se);
      jt["finetune"].push_back(
          {{"init", from_pre ? "pretrained" : "scratch"}, {"labels", n}, {"accuracies", accs}, {"mean", m.mean}, {"se", m.se}});
    }
    if (zs) s_zs.x.push_back(n), s_zs.y.push_back(100 * zs->metric("zero_shot_mean"));
    s_ch.x.push_back(n), s_ch.y.push_back(100 * majority);
  }
  pl.series = {s_pre, s_scr, s_zs, s_ch};
  harness::plot_lines(pl, out + "/plots/accuracy_vs_labels_" + name);
}

// The pretraining curve: validation NSP accuracy at each evaluation.
void pretraining_plot(const json& info, const std::string& out) {
  harness::Plot pc;
  pc.title = "Pretraining: validation NSP accuracy", pc.xlabel = "step", pc.ylabel = "NSP accuracy (%)";
  harness::Series sc;
  sc.title = "held-out pairs";
  for (auto& p : info["curve"])
    if (p.contains("accuracy")) sc.x.push_back(p["step"].get<double>()), sc.y.push_back(100 * p["accuracy"].get<double>());
  pc.series = {sc};
  harness::plot_lines(pc, out + "/plots/pretraining_nsp");
}

}  // namespace

harness::Table nsp_bert_report(const std::string& out, const harness::Preset& p, const std::vector<harness::CellResult>& rs) {
  if (rs.empty()) return harness::Table{};
  std::map<std::string, std::map<std::string, Cells>> by = cells_by(rs, "task", "arm");  // in seed order
  const NspBertConfig o = config_of<NspBertConfig>(rs.front().cell);
  json info;  // the pretraining, from any cell that loaded the pretrained model
  for (const harness::CellResult& r : rs)
    if (r.extra.contains("pretraining")) info = r.extra["pretraining"];
  size_t seeds = 0;
  for (auto& [task, arms] : by)
    for (const char* arm : {"pretrained", "scratch"})
      if (arms.count(arm)) seeds = std::max(seeds, arms[arm].size());
  json j = {{"pretraining", info},
            {"settings",
             {{"key", pretrain_key(o.pretrain())},
              {"seeds", seeds},
              {"finetune_steps", o.finetune_steps},
              {"finetune_batch", o.finetune_batch},
              {"finetune_lr", o.finetune_lr},
              {"budgets", o.budget_list()},
              {"max_eval", o.max_eval}}},
            {"tasks", json::object()}};
  harness::Table t;
  t.title = "NSP-BERT zero-shot against chance, the majority class and fine-tuning (test accuracy, %)";
  t.columns = {"task", "method", "labels used", "accuracy (mean ± SE)"};
  t.right = {false, false, true, true};
  harness::Table tt;
  tt.title = "Zero-shot accuracy of each template (%)";
  tt.columns = {"task", "template (label 0 / label 1 / ...)", "validation", "test"};
  tt.right = {false, false, true, true};
  for (const std::string& name : in_preset_order(p.values[0], by)) {
    auto& arms = by[name];
    const harness::CellResult* zs = arms.count("zero-shot") ? arms["zero-shot"].front() : nullptr;
    const json& task = (zs ? zs : arms.begin()->second.front())->extra["task"];
    const int K = (int)task["classes"].size();
    json jt = {{"classes", task["classes"]}, {"templates", task["templates"]}, {"train", task["train"]},
               {"val", task["val"]},         {"test", task["test"]},           {"note", task["note"]}};
    t.rows.push_back({name, "chance (1 / " + std::to_string(K) + ")", "0", pct(1.0 / K)});
    t.rows.push_back({name, "majority class (" + task["classes"][task["majority_class"].get<int>()].get<std::string>() + ")",
                      "train counts", pct(task["majority"])});
    if (zs) zero_shot_rows(name, *zs, t, tt, jt);
    if (arms.count("pretrained") || arms.count("scratch"))
      finetune_rows(name, arms["pretrained"], arms["scratch"], zs, task["majority"], out, t, jt);
    std::string note = name + ": " + task["note"].get<std::string>() + "; " + std::to_string(task["train"].get<int64_t>()) +
                       " train / " + std::to_string(task["val"].get<int64_t>()) + " val / " +
                       std::to_string(task["test"].get<int64_t>()) + " test texts.";
    if (zs) {
      note += " Zero-shot label wins on test: ";
      for (int l = 0; l < K; l++)
        note += (l ? ", " : "") + task["classes"][l].get<std::string>() + " " +
                std::to_string(zs->extra["zero_shot"]["predicted_counts"][l].get<int64_t>());
      note += ".";
    }
    t.notes.push_back(note);
    j["tasks"][name] = jt;
  }
  t.notes.push_back(
      "Zero-shot: the input is [CLS] text [SEP] prompt [SEP] (the text keeps its last " + std::to_string(o.max_a) +
      " bytes), score P(IsNext) = softmax(NSP logits)[0], argmax over the "
      "labels; one pretrained model, so its ± is the binomial SE of the test split. Fine-tuning: [CLS] text "
      "[SEP] -> pooler -> dropout 0.1 -> Linear, " +
      std::to_string(o.finetune_steps) + " AdamW steps of " + std::to_string(o.finetune_batch) + " (lr " +
      fixed(o.finetune_lr, 4) +
      ", warmup + cosine), a class-balanced "
      "draw of the labels per seed; ± is the SE over " +
      std::to_string(seeds) +
      " seeds (seed = draw and "
      "head initialisation; the fresh model's weights too). The last step's model is tested (nothing is chosen on test).");
  std::string md;
  harness::Table head = t;
  if (!info.is_null()) {
    pretraining_plot(info, out);
    const harness::Table tp = pretraining_table(info, o);
    j["pretraining_table"] = tp.to_json();
    md = tp.markdown() + "\n";
    head = tp, head.notes.push_back(t.markdown());
  }
  md += t.markdown() + "\n" + tt.markdown();
  if (!tt.rows.empty()) head.notes.push_back(tt.markdown());
  j["table"] = t.to_json(), j["templates_table"] = tt.to_json();
  harness::write_text_atomic(out + "/nsp_bert.json", j.dump(2) + "\n");
  harness::write_text_atomic(out + "/nsp_bert.md", md);
  return head;
}

}  // namespace studies
