// apps/studies/nsp_bert_study.cpp - `studies nsp-bert`: the two stand-in tasks, the zero-shot NSP classifier against
// chance, the majority class and supervised fine-tunes, the report, and the subcommand (see nsp_bert.h).
#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "apps/common/experiment.h"
#include "apps/common/report.h"
#include "apps/common/results.h"
#include "apps/common/stats.h"
#include "cli.h"
#include "nsp_bert.h"
#include "optim/adam.h"
#include "optim/schedule.h"
#include "tasks/text_classification.h"

namespace studies {

using namespace dl;
namespace fs = std::filesystem;
namespace harness = dl::harness;

namespace {

using dl::harness::fixed;  // apps/common/report.h
std::string pct(double x) { return fixed(100 * x, 1); }
std::string pct_se(const harness::MeanSE& m) { return harness::format_mean_se(m); }

// A seeded random subset of at most n (the split is already shuffled by class; this keeps the class mix).
void cap(std::vector<tasks::LabeledText>& v, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  tasks::seeded_shuffle(v, rng);
  if ((int)v.size() > n) v.resize(n);
}

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

ZeroShotTask zero_shot_task(const std::string& name, const NspStudyOptions& o) {
  ZeroShotTask t;
  t.name = name;
  tasks::TextSplits s;
  if (name == "sentiment") {
    s = tasks::split_by_document(tasks::sentiment_sentences(), 0.1, 0.2, o.pretrain.seed + 20);
    t.class_names = {"negative", "positive"};
    // NSP-BERT's SST-2 label words and patterns ("[label]", "It was [label]", "That is [label]"; wave2.md D.4)
    t.templates = patterns({"terrible", "great"}, {"It was [w].", "That is [w].", "[w]."});
    t.note = "UCI Sentiment Labelled Sentences (Amazon, IMDb, Yelp; 3000, balanced), a stand-in for SST-2";
  } else if (name == "topic") {
    tasks::DownstreamConfig dc;
    dc.seed = o.pretrain.seed + 21, dc.chunk_len = o.topic_chunk;
    s = tasks::brown_genre_texts(dc);
    t.class_names = s.class_names;  // press, general, belles_lettres, learned, fiction
    t.templates = patterns({"news", "hobbies", "biography", "science", "fiction"}, {"This is about [w].", "The topic is [w].", "[w]."});
    t.note = "Brown 5-class genre, " + std::to_string(o.topic_chunk) + "-byte chunks split by document, a stand-in for "
             "AGNews; transductive: Brown is also pretraining text, so these bytes were seen (never their labels)";
  } else {
    throw std::invalid_argument("nsp-bert: unknown task '" + name + "' (sentiment, topic)");
  }
  t.train = std::move(s.train), t.val = std::move(s.val), t.test = std::move(s.test);
  cap(t.val, o.max_eval, o.pretrain.seed + 22), cap(t.test, o.max_eval, o.pretrain.seed + 23);
  return t;
}

double finetune_accuracy(const ZeroShotTask& t, const BertConfig& c, const std::string* init, int budget, int seed,
                         const NspStudyOptions& o) {
  const int K = (int)t.class_names.size();
  Generator g(1000 + seed);
  BertClassifier m(c, K, g);
  if (init) {
    nn::LoadOptions lo;
    lo.ignore_unexpected = {"cls."}, lo.allow_missing = {"classifier."};
    m.load(*init, lo);
  }
  // a class-balanced draw of `budget` training examples (0: all of them)
  std::mt19937_64 rng(7919 * seed + 17);
  std::vector<std::vector<size_t>> by_class(K);
  for (size_t i = 0; i < t.train.size(); i++) by_class[t.train[i].label].push_back(i);
  std::vector<size_t> chosen;
  for (int k = 0; k < K; k++) {
    tasks::seeded_shuffle(by_class[k], rng);
    const size_t q = budget == 0 ? by_class[k].size() : (size_t)(budget / K + (k < budget % K));
    chosen.insert(chosen.end(), by_class[k].begin(), by_class[k].begin() + std::min(q, by_class[k].size()));
  }
  optim::AdamWOptions ao;
  ao.lr = o.finetune_lr;
  optim::AdamW opt(m.parameters(true), ao);
  optim::ScheduleConfig sc;
  sc.kind = "warmup_cosine", sc.warmup = std::max(1, o.finetune_steps / 10), sc.total = o.finetune_steps;
  const optim::Schedule sched = optim::make_schedule(sc);
  auto batch = [&](const std::vector<const tasks::LabeledText*>& xs) {
    std::vector<std::vector<int32_t>> seqs;
    for (auto* x : xs) seqs.push_back(encode_single(x->text, o.pretrain.max_a));
    return bert_batch(seqs);
  };
  size_t at = chosen.size();
  m.train();
  for (int step = 0; step < o.finetune_steps; step++) {
    std::vector<const tasks::LabeledText*> xs;
    Tensor y = Tensor::empty({std::min<int64_t>(o.finetune_batch, chosen.size())}, DType::i64);
    for (int64_t i = 0; i < y.numel(); i++) {
      if (at == chosen.size()) tasks::seeded_shuffle(chosen, rng), at = 0;  // a new epoch
      xs.push_back(&t.train[chosen[at++]]), y.data<int64_t>()[i] = xs.back()->label;
    }
    optim::apply_schedule(opt, sched, step);
    cross_entropy(m.forward(batch(xs)), y).backward();
    harness::apply_update(m, opt, 1.0);
  }
  NoGradGuard ng;
  m.eval();
  int64_t right = 0;
  for (size_t s = 0; s < t.test.size(); s += 64) {
    std::vector<const tasks::LabeledText*> xs;
    for (size_t i = s; i < std::min(t.test.size(), s + 64); i++) xs.push_back(&t.test[i]);
    Tensor l = m.forward(batch(xs)).data().contiguous();
    for (size_t i = 0; i < xs.size(); i++) {
      const float* row = l.data<float>() + i * K;
      right += (std::max_element(row, row + K) - row) == xs[i]->label;
    }
  }
  return (double)right / t.test.size();
}

void run_nsp_bert(const NspStudyOptions& o) {
  fs::create_directories(o.out + "/plots");
  Pretrained pre = pretrained_english_bert(o.pretrain, o.cache_dir, o.quiet);
  fs::copy_file(pre.path, o.out + "/nsp_bert_pretrained.safetensors", fs::copy_options::overwrite_existing);
  nlohmann::json j = {{"pretraining", pre.info}, {"settings", {{"key", pretrain_key(o.pretrain)}, {"seeds", o.seeds},
                      {"finetune_steps", o.finetune_steps}, {"finetune_batch", o.finetune_batch}, {"finetune_lr", o.finetune_lr},
                      {"budgets", o.budgets}, {"max_eval", o.max_eval}}}, {"tasks", nlohmann::json::object()}};

  // ---- pretraining table ----
  harness::Table tp;
  tp.title = "NSP-BERT: the pretrained model on held-out documents";
  tp.columns = {"measure", "untrained", "pretrained", "floor"};
  tp.right = {false, true, true, true};
  const auto& b = pre.info["before"];
  const auto& a = pre.info["after"];
  tp.rows.push_back({"NSP accuracy (%)", pct(b["nsp_accuracy"]), pct(a["nsp_accuracy"]), "50.0 (chance)"});
  tp.rows.push_back({"MLM accuracy (%)", pct(b["mlm_accuracy"]), pct(a["mlm_accuracy"]),
                     pct(a["mlm_majority"]) + " (most frequent byte)"});
  tp.rows.push_back({"NSP loss (nats)", fixed(b["nsp_loss"], 3), fixed(a["nsp_loss"], 3), fixed(std::log(2.0), 3) + " (chance)"});
  tp.rows.push_back({"MLM loss (nats / masked byte)", fixed(b["mlm_loss"], 3), fixed(a["mlm_loss"], 3), "-"});
  const BertConfig& c = o.pretrain.bert;
  tp.notes.push_back(std::to_string(a["pairs"].get<int64_t>()) + " validation pairs (" + std::to_string(a["masked"].get<int64_t>()) +
                     " masked bytes) from " + std::to_string(pre.info["val_documents"].get<int64_t>()) +
                     " held-out documents; pretraining: " + std::to_string(o.pretrain.steps) + " steps of " +
                     std::to_string(o.pretrain.batch) + " pairs (" + std::to_string(pre.info["train_pairs"].get<int64_t>()) +
                     " training pairs), lr " + fixed(o.pretrain.lr, 4) + " warmup + cosine; BERT " + std::to_string(c.layers) +
                     " layers, d " + std::to_string(c.d_model) + ", " + std::to_string(c.heads) + " heads, ff " +
                     std::to_string(c.dim_ff) + ", " + (c.norm_first ? "pre-LN" : "post-LN") + ", dropout " + fixed(c.dropout, 2) +
                     "; A keeps its last " + std::to_string(o.pretrain.max_a) + " bytes, B its first " +
                     std::to_string(o.pretrain.max_b) + ". One pretraining seed (" + std::to_string(o.pretrain.seed) + ").");

  // ---- the tasks ----
  harness::Table t;
  t.title = "NSP-BERT zero-shot against chance, the majority class and fine-tuning (test accuracy, %)";
  t.columns = {"task", "method", "labels used", "accuracy (mean ± SE)"};
  t.right = {false, false, true, true};
  harness::Table tt;
  tt.title = "Zero-shot accuracy of each template (%)";
  tt.columns = {"task", "template (label 0 / label 1 / ...)", "validation", "test"};
  tt.right = {false, false, true, true};
  Generator g0(o.pretrain.seed);
  BertForPreTraining untrained(c, g0);
  for (const std::string& name : o.tasks) {
    ZeroShotTask task = zero_shot_task(name, o);
    const int K = (int)task.class_names.size();
    const int64_t N = (int64_t)task.test.size();
    const std::vector<int32_t> yv = labels_of(task.val), yt = labels_of(task.test);
    nlohmann::json jt = {{"classes", task.class_names}, {"templates", task.templates}, {"train", task.train.size()},
                         {"val", task.val.size()}, {"test", N}, {"note", task.note}};
    if (!o.quiet) std::cerr << "[nsp-bert] " << name << ": zero-shot on " << task.val.size() << " + " << N << " texts\n";
    // chance and the majority class of the training split
    std::vector<int64_t> counts(K, 0), test_counts(K, 0);
    for (auto& x : task.train) counts[x.label]++;
    for (int32_t y : yt) test_counts[y]++;
    const int major = (int)(std::max_element(counts.begin(), counts.end()) - counts.begin());
    const double majority = (double)test_counts[major] / N;
    t.rows.push_back({name, "chance (1 / " + std::to_string(K) + ")", "0", pct(1.0 / K)});
    t.rows.push_back({name, "majority class (" + task.class_names[major] + ")", "train counts", pct(majority)});
    // zero-shot: the pretrained NSP head, and the untrained one as a control
    auto zs = [&](BertForPreTraining& m) {
      NspLogitsFn f = model_nsp_logits(m, o.pretrain.max_a, o.pretrain.max_b);
      return std::make_pair(score_prompts(texts_of(task.val), task.templates, f), score_prompts(texts_of(task.test), task.templates, f));
    };
    auto [pv, pt] = zs(*pre.model);
    auto [uv, ut] = zs(untrained);
    auto binom = [&](double acc) { return harness::MeanSE{acc, harness::binomial_se(acc, N), 1, true}; };
    const double zs_mean = zero_shot_accuracy(pt, yt), zs_untrained = zero_shot_accuracy(ut, yt);
    int best_t = 0;
    std::vector<double> val_acc, test_acc;
    for (size_t k = 0; k < task.templates[0].size(); k++) {
      val_acc.push_back(zero_shot_accuracy(pv, yv, (int)k)), test_acc.push_back(zero_shot_accuracy(pt, yt, (int)k));
      if (val_acc[k] > val_acc[best_t]) best_t = (int)k;
      std::string names;
      for (int l = 0; l < K; l++) names += (l ? " / " : "") + task.templates[l][k];
      tt.rows.push_back({name, names, pct(val_acc[k]), pct(test_acc[k])});
    }
    tt.rows.push_back({name, "mean P(IsNext) over the templates", pct(zero_shot_accuracy(pv, yv)), pct(zs_mean)});
    // how often each label wins: a prompt that is "coherent" after anything takes every example
    std::vector<int64_t> wins(K, 0);
    for (auto& s : pt) wins[zero_shot_label(s)]++;
    t.rows.push_back({name, "zero-shot NSP, untrained BERT (control)", "0", pct_se(binom(zs_untrained))});
    t.rows.push_back({name, "zero-shot NSP, mean over templates", "0", pct_se(binom(zs_mean))});
    t.rows.push_back({name, "zero-shot NSP, best template on validation (#" + std::to_string(best_t) + ")",
                      std::to_string(task.val.size()) + " (val, choice only)", pct_se(binom(test_acc[best_t]))});
    jt["zero_shot"] = {{"mean_templates", zs_mean}, {"untrained", zs_untrained}, {"best_template", best_t},
                       {"per_template_val", val_acc}, {"per_template_test", test_acc}, {"predicted_counts", wins}};
    // fine-tuning at each label budget, pretrained and from scratch
    harness::Plot pl;
    pl.title = name + ": test accuracy vs labelled examples";
    pl.xlabel = "labelled training examples", pl.ylabel = "test accuracy (%)", pl.logx = true;
    harness::Series s_pre, s_scr, s_zs, s_ch;
    s_pre.title = "fine-tuned, pretrained", s_scr.title = "fine-tuned, from scratch", s_zs.title = "zero-shot NSP (mean of templates)";
    s_ch.title = "majority class";
    jt["finetune"] = nlohmann::json::array();
    for (int budget : o.budgets) {
      const int n = budget == 0 ? (int)task.train.size() : std::min<int>(budget, (int)task.train.size());
      for (bool from_pre : {true, false}) {
        std::vector<double> accs;
        for (int seed = 0; seed < o.seeds; seed++) {
          accs.push_back(finetune_accuracy(task, c, from_pre ? &pre.path : nullptr, budget, seed, o));
          if (!o.quiet)
            std::cerr << "[nsp-bert] " << name << " " << (from_pre ? "pretrained" : "scratch") << " " << n << " labels seed "
                      << seed << ": " << pct(accs.back()) << "%\n";
        }
        harness::MeanSE m = harness::accuracy_mean_se(accs, N);
        t.rows.push_back({name, std::string("fine-tune, ") + (from_pre ? "pretrained" : "from scratch"), std::to_string(n), pct_se(m)});
        harness::Series& s = from_pre ? s_pre : s_scr;
        s.x.push_back(n), s.y.push_back(100 * m.mean), s.err.push_back(100 * m.se);
        jt["finetune"].push_back({{"init", from_pre ? "pretrained" : "scratch"}, {"labels", n}, {"accuracies", accs},
                                  {"mean", m.mean}, {"se", m.se}});
      }
      s_zs.x.push_back(n), s_zs.y.push_back(100 * zs_mean), s_ch.x.push_back(n), s_ch.y.push_back(100 * majority);
    }
    pl.series = {s_pre, s_scr, s_zs, s_ch};
    harness::plot_lines(pl, o.out + "/plots/accuracy_vs_labels_" + name);
    t.notes.push_back(name + ": " + task.note + "; " + std::to_string(task.train.size()) + " train / " +
                      std::to_string(task.val.size()) + " val / " + std::to_string(N) + " test texts. Zero-shot label wins on test: " +
                      [&] {
                        std::string w;
                        for (int l = 0; l < K; l++) w += (l ? ", " : "") + task.class_names[l] + " " + std::to_string(wins[l]);
                        return w;
                      }() + ".");
    j["tasks"][name] = jt;
  }
  t.notes.push_back("Zero-shot: the input is [CLS] text [SEP] prompt [SEP] (the text keeps its last " +
                    std::to_string(o.pretrain.max_a) + " bytes), score P(IsNext) = softmax(NSP logits)[0], argmax over the "
                    "labels; one pretrained model, so its ± is the binomial SE of the test split. Fine-tuning: [CLS] text "
                    "[SEP] -> pooler -> dropout 0.1 -> Linear, " + std::to_string(o.finetune_steps) + " AdamW steps of " +
                    std::to_string(o.finetune_batch) + " (lr " + fixed(o.finetune_lr, 4) + ", warmup + cosine), a class-balanced "
                    "draw of the labels per seed; ± is the SE over " + std::to_string(o.seeds) + " seeds (seed = draw and "
                    "head initialisation; the fresh model's weights too). The last step's model is tested (nothing is chosen on test).");
  // the pretraining curve
  harness::Plot pc;
  pc.title = "Pretraining: validation NSP accuracy", pc.xlabel = "step", pc.ylabel = "NSP accuracy (%)";
  harness::Series sc;
  sc.title = "held-out pairs";
  for (auto& p : pre.info["curve"])
    if (p.contains("accuracy")) sc.x.push_back(p["step"].get<double>()), sc.y.push_back(100 * p["accuracy"].get<double>());
  pc.series = {sc};
  harness::plot_lines(pc, o.out + "/plots/pretraining_nsp");
  j["table"] = t.to_json(), j["pretraining_table"] = tp.to_json(), j["templates_table"] = tt.to_json();
  const std::string md = tp.markdown() + "\n" + t.markdown() + "\n" + tt.markdown();
  harness::write_text_atomic(o.out + "/nsp_bert.json", j.dump(2) + "\n");
  harness::write_text_atomic(o.out + "/nsp_bert.md", md);
  if (!o.quiet) std::cout << md;
}

// ---- the subcommand ---------------------------------------------------------------------------------------------

NspStudyOptions nsp_bert_preset(const std::string& name) {
  NspStudyOptions o;  // "default": a few minutes on 2 cores, pretraining included
  if (name == "large") {  // the setting of the first tables of docs/studies/nsp_bert.md
    o.pretrain.steps = 1500, o.finetune_steps = 150, o.max_eval = 600;
  } else if (name != "default") {
    throw CLI::ValidationError("--preset", "'" + name + "' is not one of default, large");
  }
  return o;
}

void add_nsp_bert_command(CLI::App& app) {
  auto o = std::make_shared<NspStudyOptions>();
  auto preset = std::make_shared<std::string>("default");
  auto budgets = std::make_shared<std::string>("16,64,all"), tasks_s = std::make_shared<std::string>("sentiment,topic");
  auto threads = std::make_shared<int>(2);
  CLI::App* s = app.add_subcommand("nsp-bert", "NSP-BERT: a small BERT's next-sentence head as a zero-shot classifier");
  PretrainOptions& p = o->pretrain;
  s->add_option("--preset", *preset, "default (a few minutes) or large (1500 pretraining, 150 fine-tuning steps, 600 eval texts); flags win")
      ->capture_default_str();
  s->add_option("--out", o->out, "output folder")->capture_default_str();
  s->add_option("--cache", o->cache_dir, "where the pretrained BERT is cached (default <data cache>/studies/nsp_bert)");
  s->add_option("--tasks", *tasks_s, "sentiment, topic")->capture_default_str();
  s->add_option("--budgets", *budgets, "labelled examples for fine-tuning, 'all' for the whole split")->capture_default_str();
  s->add_option("--seeds", o->seeds, "fine-tuning seeds")->capture_default_str()->check(CLI::PositiveNumber);
  s->add_option("--finetune-steps", o->finetune_steps, "fine-tuning steps")->capture_default_str()->check(CLI::PositiveNumber);
  s->add_option("--finetune-lr", o->finetune_lr, "fine-tuning lr")->capture_default_str()->check(CLI::PositiveNumber);
  s->add_option("--max-eval", o->max_eval, "validation / test texts per task at most")->capture_default_str()->check(CLI::PositiveNumber);
  s->add_option("--steps", p.steps, "pretraining steps")->capture_default_str()->check(CLI::PositiveNumber);
  s->add_option("--batch", p.batch, "pretraining pairs per step")->capture_default_str()->check(CLI::PositiveNumber);
  s->add_option("--lr", p.lr, "pretraining peak lr")->capture_default_str()->check(CLI::PositiveNumber);
  s->add_option("--layers", p.bert.layers, "BERT layers")->capture_default_str()->check(CLI::PositiveNumber);
  s->add_option("--d-model", p.bert.d_model, "BERT width")->capture_default_str()->check(CLI::PositiveNumber);
  s->add_option("--heads", p.bert.heads, "attention heads")->capture_default_str()->check(CLI::PositiveNumber);
  s->add_option("--ff", p.bert.dim_ff, "feed-forward width")->capture_default_str()->check(CLI::PositiveNumber);
  s->add_option("--dropout", p.bert.dropout, "dropout")->capture_default_str()->check(CLI::Range(0.0, 0.9));
  s->add_flag("--sinusoidal-positions", p.bert.sinusoidal_positions, "start the learned positions as scaled sinusoids");
  s->add_flag("--pre-ln", p.bert.norm_first, "pre-LN layers with a final LayerNorm (default post-LN as BERT)");
  s->add_option("--max-a", p.max_a, "bytes kept of the first sentence (its end)")->capture_default_str()->check(CLI::PositiveNumber);
  s->add_option("--max-b", p.max_b, "bytes kept of the second sentence (its start)")->capture_default_str()->check(CLI::PositiveNumber);
  s->add_option("--seed", p.seed, "pretraining seed")->capture_default_str();
  s->add_option("--threads", *threads, "CPU threads")->capture_default_str()->check(CLI::PositiveNumber);
  s->callback([=] {
    const NspStudyOptions preset_o = nsp_bert_preset(*preset);  // an unknown preset fails here, naming both
    if (s->count("--steps") == 0) o->pretrain.steps = preset_o.pretrain.steps;  // the preset, except where a flag
    if (s->count("--finetune-steps") == 0) o->finetune_steps = preset_o.finetune_steps;  // was given as well
    if (s->count("--max-eval") == 0) o->max_eval = preset_o.max_eval;
    o->budgets.clear();
    std::stringstream ss(*budgets);
    for (std::string item; std::getline(ss, item, ',');)
      o->budgets.push_back(item == "all" ? 0 : parse_ints(item, "--budgets")[0]);
    if (o->budgets.empty()) throw CLI::ValidationError("--budgets", "an empty list");
    o->tasks.clear();
    std::stringstream ts(*tasks_s);
    for (std::string item; std::getline(ts, item, ',');) {
      if (item != "sentiment" && item != "topic")
        throw CLI::ValidationError("--tasks", "'" + item + "' is not a task (sentiment, topic)");
      o->tasks.push_back(item);
    }
    if (o->pretrain.bert.d_model % o->pretrain.bert.heads)
      throw CLI::ValidationError("--heads", "d_model " + std::to_string(o->pretrain.bert.d_model) + " is not a multiple of " +
                                                std::to_string(o->pretrain.bert.heads) + " heads");
    o->pretrain.bert.max_len = o->pretrain.max_a + o->pretrain.max_b + 3;
    harness::set_threads(*threads);
    run_nsp_bert(*o);
  });
}

}  // namespace studies
