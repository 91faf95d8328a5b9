// apps/studies/nsp_bert.h - `studies nsp-bert`: NSP-BERT (Sun, Zheng, Hao, Qiu, COLING 2022, arXiv 2109.03564):
// a BERT pretrained with masked LM + next-sentence prediction is a zero-shot classifier through its NSP head alone.
//
// The idea (Su Jianlin's summary, kexue.fm/archives/8671): take the input as the first sentence and each label's
// prompt as the second ("It was great." / "It was terrible."); the label whose prompt is the most coherent
// continuation - the highest P(IsNext) of the NSP head - wins. No label is seen and no weight changes.
//
// What is built here (byte-level, tokenizer.h's layout: pad 0, [SEP] = eos 1, [CLS] = bos 3, [MASK] 4, byte b -> b+5):
//   input      [CLS] A [SEP] B [SEP]; segment 0 up to and including the first [SEP], 1 after; learned positions.
//              A keeps its last max_a bytes and B its first max_b (the bytes that meet at the sentence boundary).
//   BERT       x = LayerNorm(word[ids] + position[t] + token_type[seg]); dropout; L TransformerEncoderLayers
//              (nn/models/transformer.h, gelu) - post-LN as BERT by default, pre-LN (plus a final LayerNorm) by flag.
//   MLM head   logits = LayerNorm(gelu(dense(h))) word^T + bias, only at the masked positions; decoder tied to the
//              word embeddings (BERT's cls.predictions).
//   NSP head   pooled = tanh(pooler.dense(h[:, 0])); logits = seq_relationship(pooled) (B, 2); index 0 = IsNext
//              (Hugging Face's next_sentence_label 0 = "B continues A"). Loss = MLM CE + NSP CE.
//   Names      Hugging Face BertForPreTraining's where natural: bert.embeddings.{word,position,token_type}_embeddings,
//              bert.embeddings.LayerNorm, bert.pooler.dense, cls.predictions.{transform.dense, transform.LayerNorm,
//              bias}, cls.seq_relationship; the encoder layers keep torch.nn's names inside
//              bert.encoder.layer.<i> (self_attn.in_proj_weight, linear1, norm1, ...) since they are torch's layer.
//   Data       tasks/english.h (Brown + Debian fortunes) cut into documents at blank lines and into sentences here;
//              documents split 95 / 5 into train / validation BEFORE pairs are made; a pair (s_i, B) has B = s_{i+1}
//              with probability 1/2, else a sentence of another document of the same split. Masking: 15% of the
//              byte positions (never [CLS] / [SEP]) by tasks::mask_tokens, drawn afresh every step (BERT's dynamic
//              masking; deviation: every masked byte becomes [MASK], no 80/10/10 split, as mask_tokens does).
//   Cache      <data cache>/studies/nsp_bert/<key of every setting>/: the phase checkpoints (a killed pretraining
//              resumes, apps/common/phase.h), then bert.safetensors and info.json (written last).
//
// The study: zero-shot on two stand-ins - sentiment (UCI sentences, tasks::sentiment_sentences) and topic (Brown
// 5-class genre chunks; Brown is also pretraining text, so the topic task is transductive: the model has seen these
// very bytes, though never their labels) - scored as the mean P(IsNext) over a label's templates and as the single
// best template chosen on validation; against chance, the majority class and a supervised fine-tune ([CLS] pooled ->
// Linear) of the same pretrained model and of a fresh one, at a few label budgets, over seeds (mean +- SE).
// Output: <out>/nsp_bert.{md,json}, <out>/plots/*, <out>/nsp_bert_pretrained.safetensors (for apps/unargmaxable).
// Two settings (--preset): "default" (400 pretraining steps, 50 fine-tuning steps, 300 evaluation texts per task: a few
// minutes on 2 cores) and "large" (1500, 150 and 600: the setting of the first tables of docs/studies/nsp_bert.md).
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

#include "apps/common/phase.h"
#include "nn/models/transformer.h"
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

// ---- model ----------------------------------------------------------------------------------------------------------
struct BertConfig {
  int64_t vocab = 261, max_len = 131, d_model = 128, layers = 2, heads = 4, dim_ff = 512;
  double dropout = 0.0;     // BERT's 0.1 by flag; at this budget (under one epoch of pairs) none is needed
  bool norm_first = false;  // false: post-LN as BERT; true: pre-LN with a final LayerNorm (bert.encoder.LayerNorm)
  // true: the learned position table starts as sinusoids (Vaswani et al. 2017) scaled to the 0.02 std of the other
  // embeddings, instead of BERT's N(0, 0.02): offsets t +- k are then linear maps of t from the first step
  bool sinusoidal_positions = false;
};

// Token ids (B, T) i64, segment ids (B, T) i64 and the key mask (B, T) f32 (1 = real) of a padded batch.
struct BertBatch {
  dl::Tensor ids, types, mask;
  int64_t B = 0, T = 0;
};
BertBatch bert_batch(const std::vector<std::vector<int32_t>>& seqs);

class BertModel : public dl::nn::Module {  // HF BertModel: embeddings, encoder, pooler
 public:
  BertModel(const BertConfig& c, dl::Generator& g);
  std::string type_name() const override { return "BertModel"; }
  dl::Var forward(const BertBatch& b);      // hidden states (B, T, C)
  dl::Var pooled(const dl::Var& hidden);  // tanh(pooler.dense(h[:, 0])) (B, C)
  std::shared_ptr<dl::nn::Module> embeddings, encoder, pooler;
  std::shared_ptr<dl::nn::Embedding> word, position, token_type;
  std::shared_ptr<dl::nn::LayerNorm> emb_norm, final_norm;  // final_norm only when norm_first
  std::shared_ptr<dl::nn::Dropout> drop;
  std::shared_ptr<dl::nn::ModuleList<dl::nn::TransformerEncoderLayer>> layer;
  std::shared_ptr<dl::nn::Linear> pool_dense;
  BertConfig cfg;
};

class BertForPreTraining : public dl::nn::Module {  // bert + cls.{predictions, seq_relationship}
 public:
  BertForPreTraining(const BertConfig& c, dl::Generator& g);
  std::string type_name() const override { return "BertForPreTraining"; }
  // MLM logits (M, V) at the flat positions `at` (indices into B*T) of hidden (B, T, C).
  dl::Var mlm_logits(const dl::Var& hidden, const dl::Tensor& at);
  dl::Var nsp_logits(const dl::Var& hidden);  // (B, 2), index 0 = IsNext
  std::shared_ptr<BertModel> bert;
  std::shared_ptr<dl::nn::Module> cls, predictions, transform;
  std::shared_ptr<dl::nn::Linear> transform_dense, seq_relationship;
  std::shared_ptr<dl::nn::LayerNorm> transform_norm;
  dl::Var mlm_bias;  // cls.predictions.bias (V)
};

class BertClassifier : public dl::nn::Module {  // HF BertForSequenceClassification: bert + dropout + classifier
 public:
  BertClassifier(const BertConfig& c, int64_t classes, dl::Generator& g);
  std::string type_name() const override { return "BertClassifier"; }
  dl::Var forward(const BertBatch& b);  // logits (B, classes)
  std::shared_ptr<BertModel> bert;
  std::shared_ptr<dl::nn::Dropout> drop;
  std::shared_ptr<dl::nn::Linear> classifier;
};

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

// The cached pretrained model on the packaged English text: built once (resumable), then read back.
struct Pretrained {
  std::shared_ptr<dl::Generator> gen;  // the model's dropout draws from it
  std::shared_ptr<BertForPreTraining> model;
  std::string path;  // bert.safetensors
  nlohmann::json info;
};
Pretrained pretrained_english_bert(const PretrainOptions& o, const std::string& cache_dir, bool quiet);
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

// ---- the study --------------------------------------------------------------------------------------------------------
// The defaults are the "default" preset (a few minutes on 2 cores, pretraining included).
struct NspStudyOptions {
  PretrainOptions pretrain;
  std::vector<int> budgets = {16, 64, 0};  // labelled examples for fine-tuning; 0 = the whole training split
  int seeds = 3;
  int finetune_steps = 50, finetune_batch = 16;  // "large": 150 steps
  double finetune_lr = 3e-4;
  int max_eval = 300;     // cap on validation and test examples per task ("large": 600)
  int topic_chunk = 160;  // bytes per Brown genre chunk
  std::vector<std::string> tasks = {"sentiment", "topic"};
  std::string out = "runs/studies/nsp_bert";
  std::string cache_dir;  // empty: <data cache>/studies/nsp_bert
  bool quiet = false;
};

// A labelled text task with its prompt templates per label.
struct ZeroShotTask {
  std::string name;
  std::vector<std::string> class_names;
  std::vector<std::vector<std::string>> templates;  // [label][template]
  std::vector<dl::tasks::LabeledText> train, val, test;
  std::string note;
};
ZeroShotTask zero_shot_task(const std::string& name, const NspStudyOptions& o);

// Fine-tunes a classifier (from the pretrained weights when `init` is given, else fresh) on `budget` labelled
// examples (class-balanced draw; 0 = all) and returns its test accuracy.
double finetune_accuracy(const ZeroShotTask& t, const BertConfig& c, const std::string* init, int budget, int seed,
                         const NspStudyOptions& o);

// The options of a preset: "default" (= NspStudyOptions{}: 400 pretraining steps, 50 fine-tuning steps, 300
// validation and test texts per task) or "large" (1500, 150 and 600: the setting of the first tables of
// docs/studies/nsp_bert.md); any other name is a CLI::ValidationError on --preset naming both.
NspStudyOptions nsp_bert_preset(const std::string& name);

void run_nsp_bert(const NspStudyOptions& o);

}  // namespace studies
