// apps/studies/nsp_bert_study.cpp - `studies nsp-bert` as an experiment on the harness: its settings, the two stand-in
// tasks, one cell (zero-shot, or the fine-tunes at every budget on run_phase), the experiment and its old command
// line (see nsp_bert.h). The tables and plots are in nsp_bert_report.cpp.
#include <algorithm>
#include <filesystem>
#include <iostream>

#include "apps/common/experiment.h"
#include "apps/common/results.h"
#include "cli.h"
#include "nsp_bert.h"
#include "nsp_bert_report.h"
#include "optim/adam.h"
#include "optim/schedule.h"
#include "study.h"
#include "tasks/text_classification.h"

namespace studies {

using namespace dl;
namespace fs = std::filesystem;
namespace harness = dl::harness;
using json = nlohmann::json;

// ---- the settings -------------------------------------------------------------------------------------------------

PretrainOptions NspBertConfig::pretrain() const {
  PretrainOptions p;
  p.steps = steps, p.batch = batch, p.lr = lr, p.max_a = max_a, p.max_b = max_b, p.val_pairs = val_pairs;
  p.seed = (uint64_t)pretrain_seed;
  p.bert.layers = layers, p.bert.d_model = d_model, p.bert.heads = heads, p.bert.dim_ff = dim_ff, p.bert.dropout = dropout;
  p.bert.norm_first = pre_ln, p.bert.sinusoidal_positions = sinusoidal_positions, p.bert.max_len = max_a + max_b + 3;
  return p;
}

std::vector<int> NspBertConfig::budget_list() const {
  std::vector<int> v;
  for (const std::string& item : harness::split_list(budgets))
    v.push_back(item == "all" ? 0 : (int)harness::parse_int_list(item, "budgets").at(0));
  return v;
}

void NspBertConfig::validate() const {
  const std::string key = task + "/" + arm;
  for (auto [field, v] : std::vector<std::pair<const char*, double>>{{"finetune_steps", finetune_steps},
                                                                     {"finetune_batch", finetune_batch},
                                                                     {"finetune_lr", finetune_lr},
                                                                     {"max_eval", max_eval},
                                                                     {"topic_chunk", topic_chunk},
                                                                     {"checkpoint_every", checkpoint_every},
                                                                     {"steps", steps},
                                                                     {"batch", batch},
                                                                     {"max_a", max_a},
                                                                     {"max_b", max_b},
                                                                     {"val_pairs", val_pairs},
                                                                     {"lr", lr},
                                                                     {"layers", layers},
                                                                     {"d_model", d_model},
                                                                     {"heads", heads},
                                                                     {"dim_ff", dim_ff}})
    harness::require_positive(key, field, v);
  if (dropout < 0 || dropout > 0.9)
    throw harness::ConfigError(key + ": field 'dropout' must lie in [0, 0.9], found " + harness::number_text(dropout));
  if (d_model % heads)
    throw harness::ConfigError(key + ": d_model " + std::to_string(d_model) + " is not a multiple of " + std::to_string(heads) +
                               " heads");
  budget_list();
}

// ---- the tasks ----------------------------------------------------------------------------------------------------
namespace {

// A seeded random subset of at most n (the split is already shuffled by class; this keeps the class mix).
void cap(std::vector<tasks::LabeledText>& v, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  tasks::seeded_shuffle(v, rng);
  if ((int)v.size() > n) v.resize(n);
}

// Three patterns per label, the same three for every label (so "template t" means one pattern across labels).
std::vector<std::vector<std::string>> patterns(const std::vector<std::string>& words, const std::vector<std::string>& forms) {
  std::vector<std::vector<std::string>> t(words.size());
  for (size_t l = 0; l < words.size(); l++)
    for (const std::string& f : forms) {
      std::string s = f;
      const size_t at = s.find("[w]");
      std::string w = words[l];
      if (at == 0) w[0] = (char)std::toupper((unsigned char)w[0]);
      t[l].push_back(s.replace(at, 3, w));
    }
  return t;
}

}  // namespace

ZeroShotTask zero_shot_task(const std::string& name, const NspBertConfig& o) {
  ZeroShotTask t;
  t.name = name;
  tasks::TextSplits s;
  const uint64_t seed = (uint64_t)o.pretrain_seed;
  if (name == "sentiment") {
    s = tasks::split_by_document(tasks::sentiment_sentences(), 0.1, 0.2, seed + 20);
    t.class_names = {"negative", "positive"};
    // NSP-BERT's SST-2 label words and patterns ("[label]", "It was [label]", "That is [label]"; wave2.md D.4)
    t.templates = patterns({"terrible", "great"}, {"It was [w].", "That is [w].", "[w]."});
    t.note = "UCI Sentiment Labelled Sentences (Amazon, IMDb, Yelp; 3000, balanced), a stand-in for SST-2";
  } else if (name == "topic") {
    tasks::DownstreamConfig dc;
    dc.seed = seed + 21, dc.chunk_len = o.topic_chunk;
    s = tasks::brown_genre_texts(dc);
    t.class_names = s.class_names;  // press, general, belles_lettres, learned, fiction
    t.templates =
        patterns({"news", "hobbies", "biography", "science", "fiction"}, {"This is about [w].", "The topic is [w].", "[w]."});
    t.note = "Brown 5-class genre, " + std::to_string(o.topic_chunk) +
             "-byte chunks split by document, a stand-in for "
             "AGNews; transductive: Brown is also pretraining text, so these bytes were seen (never their labels)";
  } else {
    throw std::invalid_argument("nsp-bert: unknown task '" + name + "' (sentiment, topic)");
  }
  t.train = std::move(s.train), t.val = std::move(s.val), t.test = std::move(s.test);
  cap(t.val, o.max_eval, seed + 22), cap(t.test, o.max_eval, seed + 23);
  return t;
}

// ---- fine-tuning on run_phase -------------------------------------------------------------------------------------
namespace {

// A class-balanced draw of `budget` training examples (0: all of them), then the examples of every step in order:
// each step takes the next B of the drawn ones, reshuffled at every pass (the draw and the passes from `rng`).
std::vector<size_t> finetune_order(const ZeroShotTask& t, int budget, int steps, int64_t B, std::mt19937_64& rng) {
  const int K = (int)t.class_names.size();
  std::vector<std::vector<size_t>> by_class(K);
  for (size_t i = 0; i < t.train.size(); i++) by_class[t.train[i].label].push_back(i);
  std::vector<size_t> chosen, order;
  for (int k = 0; k < K; k++) {
    tasks::seeded_shuffle(by_class[k], rng);
    const size_t q = budget == 0 ? by_class[k].size() : (size_t)(budget / K + (k < budget % K));
    chosen.insert(chosen.end(), by_class[k].begin(), by_class[k].begin() + std::min(q, by_class[k].size()));
  }
  size_t at = chosen.size();
  for (int step = 0; step < steps; step++)
    for (int64_t i = 0; i < std::min<int64_t>(B, chosen.size()); i++) {
      if (at == chosen.size()) tasks::seeded_shuffle(chosen, rng), at = 0;  // a new pass
      order.push_back(chosen[at++]);
    }
  return order;
}

double test_accuracy(BertClassifier& m, const ZeroShotTask& t, int max_a) {
  NoGradGuard ng;
  m.eval();
  const int K = (int)t.class_names.size();
  int64_t right = 0;
  for (size_t s = 0; s < t.test.size(); s += 64) {
    std::vector<std::vector<int32_t>> seqs;
    for (size_t i = s; i < std::min(t.test.size(), s + 64); i++) seqs.push_back(encode_single(t.test[i].text, max_a));
    Tensor l = m.forward(bert_batch(seqs)).data().contiguous();  // (B, K)
    for (size_t i = 0; i < seqs.size(); i++) {
      const float* row = l.data<float>() + i * K;
      right += (std::max_element(row, row + K) - row) == t.test[s + i].label;
    }
  }
  return (double)right / t.test.size();
}

}  // namespace

double finetune_accuracy(const ZeroShotTask& t, const NspBertConfig& o, const std::string* init, int budget,
                         const std::string& phase, const harness::RunContext& ctx, double* final_loss) {
  const int K = (int)t.class_names.size();
  const PretrainOptions po = o.pretrain();
  Generator g(1000 + o.seed);
  BertClassifier m(po.bert, K, g);
  if (init) {
    nn::LoadOptions lo;
    lo.ignore_unexpected = {"cls."}, lo.allow_missing = {"classifier."};
    m.load(*init, lo);
  }
  std::mt19937_64 rng(7919 * o.seed + 17);
  tasks::Dataset train;  // the examples of every step, in order, for a Batcher that does not shuffle
  train.name = t.name + "/finetune", train.vocab_size = (int32_t)po.bert.vocab, train.num_classes = K;
  train.max_len = (int32_t)po.bert.max_len;
  for (size_t i : finetune_order(t, budget, o.finetune_steps, o.finetune_batch, rng)) {
    tasks::Example e;
    e.tokens = encode_single(t.train[i].text, o.max_a), e.label = t.train[i].label;
    train.examples.push_back(std::move(e));
  }
  const int64_t B = (int64_t)train.examples.size() / o.finetune_steps;  // min(finetune_batch, examples drawn)
  tasks::Batcher batches(train, {(int32_t)B, 0, false, true});
  optim::AdamWOptions ao;
  ao.lr = o.finetune_lr;
  optim::AdamW opt(m.parameters(true), ao);
  optim::ScheduleConfig sc;
  sc.kind = "warmup_cosine", sc.warmup = std::max(1, o.finetune_steps / 10), sc.total = o.finetune_steps;
  harness::PhaseParts parts;
  parts.model = &m, parts.opt = &opt, parts.batches = &batches, parts.rngs = {{"dropout", &g}};
  parts.schedule = optim::make_schedule(sc);
  parts.limits = {train.vocab_size, K, train.max_len, train.name};
  parts.loss = [&](const tasks::Batch& b, const harness::Step&) {
    std::vector<std::vector<int32_t>> seqs;
    Tensor y = Tensor::empty({b.batch_size}, DType::i64);
    for (int32_t i = 0; i < b.batch_size; i++) {
      seqs.emplace_back(b.tokens.begin() + (int64_t)i * b.seq_len, b.tokens.begin() + (int64_t)i * b.seq_len + b.lengths[i]);
      y.data<int64_t>()[i] = b.labels[i];
    }
    return cross_entropy(m.forward(bert_batch(seqs)), y);
  };
  std::vector<harness::CurvePoint> curve;  // no evaluation during fine-tuning: the last step's model is tested
  const harness::PhaseResult ph = harness::run_phase({phase, o.finetune_steps, 1, 1.0, 0, o.checkpoint_every}, parts, ctx, curve);
  if (final_loss) *final_loss = ph.final_loss;
  return test_accuracy(m, t, o.max_a);
}

// ---- one cell -----------------------------------------------------------------------------------------------------
namespace {

std::vector<int32_t> labels_of(const std::vector<tasks::LabeledText>& v) {
  std::vector<int32_t> l;
  for (auto& x : v) l.push_back(x.label);
  return l;
}
std::vector<std::string> texts_of(const std::vector<tasks::LabeledText>& v) {
  std::vector<std::string> t;
  for (auto& x : v) t.push_back(x.text);
  return t;
}

// The task as the report needs it: sizes, classes, templates, note, and the majority class of the training split.
nlohmann::json task_json(const ZeroShotTask& task) {
  std::vector<int64_t> counts(task.class_names.size(), 0), test_counts(task.class_names.size(), 0);
  for (auto& x : task.train) counts[x.label]++;
  for (auto& x : task.test) test_counts[x.label]++;
  const int major = (int)(std::max_element(counts.begin(), counts.end()) - counts.begin());
  return {{"classes", task.class_names}, {"templates", task.templates},
          {"train", task.train.size()},  {"val", task.val.size()},
          {"test", task.test.size()},    {"note", task.note},
          {"majority_class", major},     {"majority", (double)test_counts[major] / task.test.size()}};
}

// The pretrained and the untrained NSP heads on the validation and test texts: the mean over templates, each template
// alone (the best one chosen on validation) and which label wins how often. It depends on no fine-tuning setting and
// not on the seed, so it is kept beside the pretrained model (zero_shot_<task>_<max_eval>_<topic_chunk>.json) and
// the cells of the other seeds, and later runs, read it instead of scoring again.
void zero_shot(const ZeroShotTask& task, const NspBertConfig& o, Pretrained& pre, const harness::RunContext& ctx,
               harness::CellResult& r) {
  const std::string cached = fs::path(pre.path).parent_path().string() + "/zero_shot_" + task.name + "_" +
                             std::to_string(o.max_eval) + "_" + std::to_string(o.topic_chunk) + ".json";
  if (fs::exists(cached)) {
    const json j = harness::parse_json(harness::read_text(cached), cached);
    r.metrics = j.at("metrics").get<std::map<std::string, double>>(), r.extra["zero_shot"] = j.at("zero_shot");
    return;
  }
  if (!ctx.quiet && ctx.writer())
    std::cerr << ctx.label << " zero-shot on " << task.val.size() << " + " << task.test.size() << " texts\n";
  const PretrainOptions po = o.pretrain();
  Generator g0(po.seed);
  BertForPreTraining untrained(po.bert, g0);
  const std::vector<int32_t> yv = labels_of(task.val), yt = labels_of(task.test);
  auto zs = [&](BertForPreTraining& m) {
    NspLogitsFn f = model_nsp_logits(m, o.max_a, o.max_b);
    return std::make_pair(score_prompts(texts_of(task.val), task.templates, f),
                          score_prompts(texts_of(task.test), task.templates, f));
  };
  auto [pv, pt] = zs(*pre.model);
  auto [uv, ut] = zs(untrained);
  int best_t = 0;
  std::vector<double> val_acc, test_acc;
  for (size_t k = 0; k < task.templates[0].size(); k++) {
    val_acc.push_back(zero_shot_accuracy(pv, yv, (int)k)), test_acc.push_back(zero_shot_accuracy(pt, yt, (int)k));
    if (val_acc[k] > val_acc[best_t]) best_t = (int)k;
  }
  std::vector<int64_t> wins(task.class_names.size(), 0);  // a prompt "coherent" after anything takes every example
  for (auto& s : pt) wins[zero_shot_label(s)]++;
  r.metrics["zero_shot_mean"] = zero_shot_accuracy(pt, yt), r.metrics["zero_shot_untrained"] = zero_shot_accuracy(ut, yt);
  r.metrics["zero_shot_best"] = test_acc[best_t], r.metrics["zero_shot_mean_val"] = zero_shot_accuracy(pv, yv);
  r.extra["zero_shot"] = {{"mean_templates", r.metrics["zero_shot_mean"]},
                          {"untrained", r.metrics["zero_shot_untrained"]},
                          {"best_template", best_t},
                          {"per_template_val", val_acc},
                          {"per_template_test", test_acc},
                          {"predicted_counts", wins}};
  if (ctx.writer())
    harness::write_text_atomic(cached, json{{"metrics", r.metrics}, {"zero_shot", r.extra["zero_shot"]}}.dump(2) + "\n");
}

// The budget's name in metrics and phase folders: "16", "all".
std::string budget_name(int budget) { return budget == 0 ? "all" : std::to_string(budget); }

harness::CellResult run_cell(const NspBertConfig& o, const harness::Cell& cell, const harness::RunContext& ctx) {
  const ZeroShotTask task = zero_shot_task(o.task, o);
  harness::CellResult r;
  r.test_examples = (int64_t)task.test.size();
  r.extra["task"] = task_json(task);
  Pretrained pre;
  if (o.arm != "scratch") {
    pre = pretrained_english_bert(o.pretrain(), o.cache, &ctx);
    r.extra["pretraining"] = pre.info;
    const std::string copy = ctx.out + "/nsp_bert_pretrained.safetensors";  // for apps/unargmaxable
    if (ctx.writer() && !fs::exists(copy)) {
      fs::copy_file(pre.path, copy + ".tmp", fs::copy_options::overwrite_existing);
      fs::rename(copy + ".tmp", copy);
    }
  }
  if (o.arm == "zero-shot") {
    zero_shot(task, o, pre, ctx, r);
    return r;
  }
  for (int budget : o.budget_list()) {
    const std::string b = budget_name(budget);
    double loss = 0;
    const double acc =
        finetune_accuracy(task, o, o.arm == "pretrained" ? &pre.path : nullptr, budget, "finetune_" + b, ctx, &loss);
    r.metrics["acc_" + b] = acc, r.metrics["loss_" + b] = loss;
    r.extra["labels"][b] = budget == 0 ? (int)task.train.size() : std::min<int>(budget, (int)task.train.size());
    if (!ctx.quiet && ctx.writer()) std::cerr << ctx.label << " " << b << " labels: " << harness::fixed(100 * acc, 1) << "%\n";
  }
  Generator g0(0);
  r.params = BertClassifier(o.pretrain().bert, (int64_t)task.class_names.size(), g0).num_parameters();
  if (ctx.writer())  // the checkpoints: --resume skips a finished cell
    for (int budget : o.budget_list()) fs::remove_all(ctx.dir + "/finetune_" + budget_name(budget));
  return r;
}

}  // namespace

// ---- the experiment and its command line --------------------------------------------------------------------------

harness::Experiment nsp_bert_experiment() {
  harness::Experiment e =
      study_experiment("nsp-bert", "studies nsp-bert: a small BERT's next-sentence head as a zero-shot classifier");
  e.axes = {
      {{"task", {"sentiment", "topic"}}, "", "sentiment (UCI sentences) or topic (Brown genres)"},
      {{"arm", {"zero-shot", "pretrained", "scratch"}}, "", "zero-shot (the NSP head), or a fine-tune: pretrained, scratch"}};
  harness::typed_cells<NspBertConfig>(e, run_cell);
  e.report = nsp_bert_report;
  e.cost = [](const harness::Cell& c) {  // the zero-shot cells first: the first of them pretrains the shared BERT
    return c.config["arm"] == "zero-shot" ? 1e9 : c.config["finetune_steps"].get<double>();
  };
  return e;
}

const LegacyFlags& nsp_bert_legacy_flags() {
  static const LegacyFlags f = legacy_flags<NspBertConfig>(
      {"budgets", "finetune_steps", "finetune_lr", "max_eval", "steps", "batch", "lr", "layers", "d_model", "heads", "dropout",
       "max_a", "max_b", "cache"},
      {{"--ff", set_field("dim_ff")}, {"--seed", set_field("pretrain_seed")}},
      {{"--pre-ln", {"--set", "pre_ln=true"}}, {"--sinusoidal-positions", {"--set", "sinusoidal_positions=true"}}});
  return f;
}

}  // namespace studies
