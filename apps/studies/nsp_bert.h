// apps/studies/nsp_bert.h - `studies nsp-bert`: NSP-BERT (Sun, Zheng, Hao, Qiu, COLING 2022, arXiv 2109.03564):
// a BERT pretrained with masked LM + next-sentence prediction is a zero-shot classifier through its NSP head alone.
//
// The idea (Su Jianlin's summary, kexue.fm/archives/8671): take the input as the first sentence and each label's
// prompt as the second ("It was great." / "It was terrible."); the label whose prompt is the most coherent
// continuation - the highest P(IsNext) of the NSP head - wins. No label is seen and no weight changes.
//
// What is built here (byte-level, tokenizer.h's layout: pad 0, [SEP] = eos 1, [CLS] = bos 3, [MASK] 4, byte b -> b+5):
//   input      [CLS] A [SEP] B [SEP]; A keeps its last max_a bytes and B its first max_b (the bytes that meet at the
//              sentence boundary).
//   BERT       nn/models/bert.h (Hugging Face BertForPreTraining's names): MLM + NSP heads, loss = MLM CE + NSP CE;
//              post-LN as BERT by default, pre-LN by --set pre_ln=true.
//   Data       tasks/english.h (Brown + Debian fortunes) cut into documents at blank lines and into sentences here;
//              documents split 95 / 5 into train / validation BEFORE pairs are made; a pair (s_i, B) has B = s_{i+1}
//              with probability 1/2, else a sentence of another document of the same split. Masking: 15% of the
//              byte positions (never [CLS] / [SEP]) by tasks::mask_tokens, drawn afresh every step (BERT's dynamic
//              masking; deviation: every masked byte becomes [MASK], no 80/10/10 split, as mask_tokens does).
//   Cache      <data cache>/studies/nsp_bert/<key of every setting>/ (or the field `cache`): the phase checkpoints (a
//              killed pretraining resumes, apps/common/phase.h), then bert.safetensors and info.json (written last).
//              Built once and shared by every cell; --jobs workers take turns on a file lock.
//
// The study: zero-shot on two stand-ins - sentiment (UCI sentences, tasks::sentiment_sentences) and topic (Brown
// 5-class genre chunks; Brown is also pretraining text, so the topic task is transductive: the model has seen these
// very bytes, though never their labels) - scored as the mean P(IsNext) over a label's templates and as the single
// best template chosen on validation; against chance, the majority class and a supervised fine-tune ([CLS] pooled ->
// Linear) of the same pretrained model and of a fresh one, at a few label budgets, over seeds (mean +- SE).
// It is an experiment on the harness (apps/common/experiment.h), axes task x arm, seeds = the fine-tuning seeds:
//   studies nsp-bert run  [--preset default|large|FILE] [--tasks sentiment,topic] [--arms zero-shot,pretrained,scratch]
//                         [--seeds 0,1,2] [--set budgets="16,64,all"].. [--resume] [--jobs 2] [--quiet] [--out DIR]
//   studies nsp-bert cell --task sentiment --arm pretrained [--seed 0] ...
//   studies nsp-bert list
// An arm: "zero-shot" (the pretrained and the untrained NSP heads on the task's validation and test texts; it does
// not depend on the seed: scored once, kept in the cache beside the model, read by the other seeds' cells; the report
// reads the lowest seed's), "pretrained" and "scratch" (a fine-tune at each of
// the budgets, each a run_phase "finetune_<budget>", from the pretrained weights or fresh). The old form
// `studies nsp-bert --steps 1500 --seeds 3 --pre-ln` still runs: an option first means `run`, --seeds N is a count,
// the other flags are --set (nsp_bert_legacy_flags).
// Output: <out>/results.{md,json} and cells/ (the harness's), <out>/nsp_bert.{md,json} (the three tables, as before the
// harness), <out>/plots/*, <out>/nsp_bert_pretrained.safetensors (for apps/unargmaxable).
// Two presets: "default" (400 pretraining steps, 50 fine-tuning steps, 300 evaluation texts per task: a few minutes
// on 2 cores) and "large" (1500, 150 and 600: the setting of the first tables of docs/studies/nsp_bert.md).
// What it is not: a 110M BERT on Wikipedia; byte-level at a few minutes of CPU the NSP signal is weak, and the study
// reports what it finds.
#pragma once
#include <array>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "apps/common/experiment.h"
#include "apps/common/phase.h"
#include "nn/models/bert.h"
#include "tasks/text.h"

namespace studies {

// ---- data ---------------------------------------------------------------------------------------------------------
using SentenceDoc = std::vector<std::string>;  // one document's sentences in order

// Sentences of a text: a break after . ! ? (and closing quotes or brackets) followed by white space and a capital,
// digit or quote, unless the word is an abbreviation (Mr. Dr. St. ... or a single letter); a line break after such
// punctuation also ends a sentence, other line breaks (verse, wrapped lines) are spaces. Sentences under 2 bytes dropped.
std::vector<std::string> split_sentences(std::string_view text);
// The text cut at blank lines into documents, each into sentences (documents without a sentence dropped).
std::vector<SentenceDoc> sentence_documents(std::string_view text);
// A seeded split of whole documents: round(n * val_frac) (at least 2) to validation, the rest to training.
std::pair<std::vector<SentenceDoc>, std::vector<SentenceDoc>> split_documents(std::vector<SentenceDoc> docs, double val_frac,
                                                                              uint64_t seed);

struct NspPair {
  std::string a, b;
  int32_t label = 0;  // 0 IsNext (b is the sentence after a), 1 NotNext (b from another document)
  int32_t doc = 0, index = 0;  // a is sentence `index` of document `doc`
};
// One pair for every sentence with a successor: B is its successor with probability 1/2, else a sentence drawn
// uniformly from the other documents (never the same document, so never the true next). Needs >= 2 documents.
std::vector<NspPair> make_nsp_pairs(const std::vector<SentenceDoc>& docs, uint64_t seed);

// [CLS] tail(a, max_a) [SEP] head(b, max_b) [SEP] as byte ids; segment ids follow from the first [SEP].
std::vector<int32_t> encode_pair(std::string_view a, std::string_view b, int max_a, int max_b);
std::vector<int32_t> encode_single(std::string_view a, int max_a);  // [CLS] tail(a) [SEP], for fine-tuning

// ---- model: nn/models/bert.h ------------------------------------------------------------------------------------
using dl::nn::BertBatch, dl::nn::BertClassifier, dl::nn::BertConfig, dl::nn::BertForPreTraining, dl::nn::BertModel;
// The byte sequences as a BertBatch: segment 1 after the first [SEP] (nn::bert_batch with this study's [SEP] id).
BertBatch bert_batch(const std::vector<std::vector<int32_t>>& seqs);

// ---- pretraining ----------------------------------------------------------------------------------------------------
struct PretrainOptions {
  BertConfig bert;
  int steps = 400, batch = 32;  // the "default" preset; "large" pretrains 1500 steps
  double lr = 1e-3, mask_p = 0.15;
  int max_a = 80, max_b = 48;  // bert.max_len must be >= max_a + max_b + 3
  int val_pairs = 1000;
  uint64_t seed = 0;
};

// A masked batch: inputs with [MASK], the flat masked positions and their original ids.
struct MaskedBatch {
  BertBatch x;
  dl::Tensor at, targets, nsp_labels;  // (M) i64, (M) i64, (B) i64
};
MaskedBatch mask_batch(const std::vector<std::vector<int32_t>>& seqs, const std::vector<int32_t>& nsp_labels, double p,
                       std::mt19937_64& rng);

struct PretrainMetrics {
  double mlm_loss = 0, nsp_loss = 0, mlm_accuracy = 0, nsp_accuracy = 0;
  double mlm_majority = 0;  // the accuracy of always guessing the most frequent masked byte (the MLM's floor)
  int64_t masked = 0, pairs = 0;
  nlohmann::json to_json() const;
};
// MLM and NSP on fixed pairs (masking drawn from `seed`), in eval mode.
PretrainMetrics evaluate_pretraining(BertForPreTraining& m, const std::vector<NspPair>& pairs, const PretrainOptions& o,
                                     uint64_t seed = 99);

// Pretrains `m` (built from Generator(o.seed) = g, which its dropout draws from) on the documents through
// harness::run_phase in ctx.dir (resuming from its checkpoints when ctx.resume); `info` gets the validation metrics
// before (step 0) and after, and the curve.
void pretrain_bert(BertForPreTraining& m, dl::Generator& g, const std::vector<SentenceDoc>& train_docs,
                   const std::vector<SentenceDoc>& val_docs, const PretrainOptions& o, const dl::harness::RunContext& ctx,
                   nlohmann::json& info);

// The cached pretrained model on the packaged English text: built once (resumable), then read back. `cell` (may be
// null) lends the pretraining its ranks, quietness, profiling and (tests) stop_after; a single process builds it under
// a file lock (<dir>.lock), so --jobs workers that ask at once build it once.
struct Pretrained {
  std::shared_ptr<dl::Generator> gen;  // the model's dropout draws from it
  std::shared_ptr<BertForPreTraining> model;
  std::string path;  // bert.safetensors
  nlohmann::json info;
};
Pretrained pretrained_english_bert(const PretrainOptions& o, const std::string& cache_dir, const dl::harness::RunContext* cell);
std::string pretrain_key(const PretrainOptions& o);

// ---- zero-shot ------------------------------------------------------------------------------------------------------
// NSP logits (N, 2) of pairs (A, B): the model's, or a hand-made one in tests.
using NspLogitsFn = std::function<std::vector<std::array<double, 2>>(const std::vector<std::pair<std::string, std::string>>&)>;
NspLogitsFn model_nsp_logits(BertForPreTraining& m, int max_a, int max_b, int batch = 64);

// P(IsNext) = softmax(logits)[0] of text + each label's each template: p[example][label][template].
using PromptScores = std::vector<std::vector<std::vector<double>>>;
PromptScores score_prompts(const std::vector<std::string>& texts, const std::vector<std::vector<std::string>>& templates,
                           const NspLogitsFn& nsp);
// The label with the highest score: template = -1 averages P(IsNext) over the label's templates, t >= 0 uses template t.
int zero_shot_label(const std::vector<std::vector<double>>& scores_of_one_example, int template_index = -1);
double zero_shot_accuracy(const PromptScores& p, const std::vector<int32_t>& labels, int template_index = -1);

// ---- the study on the harness -----------------------------------------------------------------------------------
// One cell's settings: the preset's defaults, then --set; the axes fill task and arm. The defaults are the "default"
// preset's.
struct NspBertConfig {
  std::string task = "sentiment", arm = "zero-shot";  // the axes
  int seed = 0;                                       // the fine-tuning seed (label draw, head init, batches)
  std::string budgets = "16,64,all";  // labelled examples per fine-tune; "all" = the whole training split
  int finetune_steps = 50, finetune_batch = 16;  // "large": 150 steps
  double finetune_lr = 3e-4;
  int max_eval = 300;     // cap on validation and test examples per task ("large": 600)
  int topic_chunk = 160;  // bytes per Brown genre chunk
  int checkpoint_every = 25;  // fine-tuning checkpoints (the pretraining's: every steps / 5)
  std::string cache;      // the pretrained model's cache folder ("": <data cache>/studies/nsp_bert)
  // the pretraining (one model for every cell; its seed is pretrain_seed, not the cell's)
  int steps = 400, batch = 32, max_a = 80, max_b = 48, val_pairs = 1000, pretrain_seed = 0;
  double lr = 1e-3;
  int layers = 2, d_model = 128, heads = 4, dim_ff = 512;
  double dropout = 0.0;
  bool pre_ln = false, sinusoidal_positions = false;
  template <class C, class F> static void fields(C& c, F&& f) {
    f("task", c.task), f("arm", c.arm), f("seed", c.seed), f("budgets", c.budgets), f("finetune_steps", c.finetune_steps);
    f("finetune_batch", c.finetune_batch), f("finetune_lr", c.finetune_lr), f("max_eval", c.max_eval);
    f("topic_chunk", c.topic_chunk), f("checkpoint_every", c.checkpoint_every), f("cache", c.cache), f("steps", c.steps);
    f("batch", c.batch), f("max_a", c.max_a), f("max_b", c.max_b), f("val_pairs", c.val_pairs);
    f("pretrain_seed", c.pretrain_seed), f("lr", c.lr), f("layers", c.layers), f("d_model", c.d_model), f("heads", c.heads);
    f("dim_ff", c.dim_ff), f("dropout", c.dropout), f("pre_ln", c.pre_ln), f("sinusoidal_positions", c.sinusoidal_positions);
  }
  PretrainOptions pretrain() const;  // the pretraining's options (max_len = max_a + max_b + 3)
  std::vector<int> budget_list() const;  // `budgets` parsed, "all" -> 0 (a ConfigError names a bad item)
  void validate() const;                 // a ConfigError naming the field
};

// A labelled text task with its prompt templates per label.
struct ZeroShotTask {
  std::string name;
  std::vector<std::string> class_names;
  std::vector<std::vector<std::string>> templates;  // [label][template]
  std::vector<dl::tasks::LabeledText> train, val, test;
  std::string note;
};
ZeroShotTask zero_shot_task(const std::string& name, const NspBertConfig& o);

// Fine-tunes a classifier (from the pretrained weights when `init` is given, else fresh) on `budget` labelled
// examples (class-balanced draw; 0 = all) for o.finetune_steps in the phase <ctx.dir>/<phase> (resumable) and
// returns its test accuracy; `final_loss` (may be null) gets the training loss at the end (the phase's EMA).
double finetune_accuracy(const ZeroShotTask& t, const NspBertConfig& o, const std::string* init, int budget,
                         const std::string& phase, const dl::harness::RunContext& ctx, double* final_loss = nullptr);

dl::harness::Experiment nsp_bert_experiment();
struct LegacyFlags;
const LegacyFlags& nsp_bert_legacy_flags();  // the flags of the command line before the harness (cli.h)

}  // namespace studies
