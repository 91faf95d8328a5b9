// apps/studies/positions.h - `studies positions`: sinusoidal vs learned vs rotary (RoPE) positions in one small
// Transformer, trained at one length and tested at longer ones, beside the analytic property that motivates RoPE.
//
// The question (Su Jianlin, "Transformer升级之路：2、博采众长的旋转式位置编码", kexue.fm/archives/8265, 2021; Su et
// al. 2021, "RoFormer"; Vaswani et al. 2017; Press et al. 2022, "Train Short, Test Long"): an absolute position
// is added to the input (sinusoidal, learned), so an attention score q_t . k_s sees t and s separately; RoPE rotates
// q and k by R(t), R(s) with R(s)^T R(t) = R(t - s), so the score depends on t - s only. Does that make a model
// trained at length L work at 2L and 4L?
//
// Shape letters: B batch, T time (the sequence length), C = d_model, V vocabulary, NH heads, HS = C / NH.
//
// The tasks (stand-ins generated at any length; x_t uniform over V symbols, a target at every position):
//   lookback  y_t = x_{t - offset} (no target for t < offset): a purely relative rule, so a model whose attention
//             sees t - s only has no reason to fail at unseen positions;
//   first     y_t = x_0 (no target at t = 0): an absolute rule - every position must find the start, at a distance
//             t that grows past anything seen in training.
// Order is all that matters in both: without positions a bidirectional Transformer is permutation-equivariant and
// cannot tell which symbol is `offset` back or first (the "none" control, expected near chance 1/V).
//
// The model (PosModel), pre-LN, bidirectional attention, dropout 0:
//   h = E[x] (+ P[:T])                 P: sinusoidal_table, or a learned table (GPT-2's wpe), or nothing
//   h = TransformerEncoderLayer(h) x depth    (rotary: RoPE on q and k in every layer, no P)
//   logits = W_out LN(h) + b                  (B, T, V)
// The learned table is sized for the longest test length; its rows t >= L_train are never used in training, get a
// zero gradient and, with Adam without weight decay, stay exactly at their N(0, 0.02^2) init: what the model does
// with a position it has never seen is what the study measures on that row.
//
// The analytic part (no training): score(t, s) = (R(t) q) . (R(s) k) through nn::apply_rotary for random q, k, and
// the sinusoidal table's pe[t] . pe[s] = sum_i cos((t - s) w_i), both as functions of the offset t - s at several
// absolute starts; and pe[t]^T A pe[s] for a random A (what a learned W_q^T W_k makes of the sinusoidal table),
// which is not a function of t - s alone.
//
// What it is not: a language-model extrapolation benchmark (perplexity at length), and not ALiBi / NTK-scaled RoPE.
#pragma once
#include <string>
#include <vector>

#include "apps/common/experiment.h"
#include "nn/attention/positions.h"
#include "nn/models/transformer.h"

namespace studies {

// ---- the task -------------------------------------------------------------------------------------------------------

struct SeqBatch {
  dl::Tensor inputs, targets;  // (B, T) i64; targets tasks::kIgnoreIndex where t < offset
};
// B sequences of T symbols from [0, vocab) with the targets of `task` ("lookback", "first"); the same seed gives
// the same batch.
SeqBatch task_batch(const std::string& task, int64_t B, int64_t T, int64_t vocab, int64_t offset, uint64_t seed);
// The targets (B, T) of inputs (B, T) i64 under `task`: x_{t - offset}, or x_0; kIgnoreIndex where there is none.
dl::Tensor task_targets(const std::string& task, const dl::Tensor& inputs, int64_t offset);

// ---- the model ------------------------------------------------------------------------------------------------------

struct PosModelConfig {
  std::string pos = "rotary";  // "none", "sinusoidal", "learned", "rotary"
  int64_t vocab = 16, d_model = 32, heads = 2, depth = 2, dim_ff = 64;
  int64_t max_len = 128;  // rows of the learned table (the longest test length)
};

class PosModel : public dl::nn::Module {
 public:
  PosModel(const PosModelConfig& c, dl::Generator& g);
  std::string type_name() const override { return "PosModel"; }
  dl::Var forward(const dl::Tensor& ids) const;  // (B, T) i64 -> logits (B, T, V)

  PosModelConfig cfg;
  std::shared_ptr<dl::nn::Embedding> tok;
  std::shared_ptr<dl::nn::LearnedPositions> learned;  // "learned" only
  std::shared_ptr<dl::nn::ModuleList<dl::nn::TransformerEncoderLayer>> layers;
  std::shared_ptr<dl::nn::LayerNorm> norm;
  std::shared_ptr<dl::nn::Linear> head;
};

// Accuracy of the argmax of the logits over every position with a target in a set of batches of one length;
// `beyond` counts only the positions t >= train_len (never seen in training; NaN when there are none). `length` is
// the T of the logits the model produced, counted the number of targets scored, per_position[t] the fraction
// correct at position t (NaN where no target is asked).
struct LengthAccuracy {
  int64_t length = 0;
  double all = 0, beyond = NAN;
  int64_t counted = 0, beyond_counted = 0;
  std::vector<double> per_position;
};
LengthAccuracy task_accuracy(const PosModel& m, const std::vector<SeqBatch>& set, int64_t train_len);

// ---- the analytic part ----------------------------------------------------------------------------------------------

// (R(t) q) . (R(s) k) with R from nn::apply_rotary (q, k of even size HS).
double rope_score(const std::vector<double>& q, const std::vector<double>& k, int64_t t, int64_t s);
// pe[t] . pe[s] (A empty) or pe[t]^T A pe[s] (A row-major C x C) for a float64 table pe (T, C) from
// nn::sinusoidal_table.
double table_score(const dl::Tensor& pe, int64_t t, int64_t s, const std::vector<double>& A = {});

// ---- the study: an experiment on the harness (apps/common/experiment.h), axes task x position, seeds ----------------
//   studies positions run  [--preset default|large|FILE] [--tasks lookback,first] [--positions none,..,rotary]
//                          [--seeds 0,1,2] [--set steps=300].. [--resume] [--jobs 2] [--threads 1] [--quiet] [--out DIR]
//   studies positions cell --task lookback --position rotary [--seed 0] ...
//   studies positions list | analytic [--out DIR]                  (analytic: the no-training part alone, seconds)
// The old form `studies positions --seeds 3 --train-len 32 --lengths 32,64,128 --no-train` still runs: an option
// first means `run`, --seeds N is a count, the other flags are `--set` of the field of the same name, --large is
// --preset large and --no-train is `analytic` (positions_legacy_flags).
// One cell (task, position type, seed): `steps` Adam steps on run_phase (checkpoints every eval_every steps), the
// training set being steps x batch fresh sequences drawn by (seed, step) (task_batch), so every position type sees
// the same batches; the parameters of the best validation accuracy are kept (<cell>/model.safetensors) and tested at
// every length. The report: per task, the accuracy table over all positions and over t >= train_len (mean ± SE over
// seeds), two plots, and the analytic table.
struct PositionsConfig {
  std::string task = "lookback", pos = "rotary";
  int seed = 0;
  int train_len = 32;
  std::string lengths = "32,64,128";  // test lengths, each >= train_len
  int offset = 2, vocab = 16;
  int steps = 600, eval_every = 50, batch = 32, val_examples = 256, test_examples = 256, warmup = 50;
  double lr = 3e-3;
  int d_model = 32, heads = 2, depth = 2;
  template <class C, class F> static void fields(C& c, F&& f) {
    f("task", c.task), f("pos", c.pos), f("seed", c.seed), f("train_len", c.train_len), f("lengths", c.lengths);
    f("offset", c.offset), f("vocab", c.vocab), f("steps", c.steps), f("eval_every", c.eval_every), f("batch", c.batch);
    f("val_examples", c.val_examples), f("test_examples", c.test_examples), f("warmup", c.warmup), f("lr", c.lr);
    f("d_model", c.d_model), f("heads", c.heads), f("depth", c.depth);
  }
  std::vector<int> test_lengths() const;  // `lengths` parsed; a ConfigError names a bad item
  void validate() const;                  // a ConfigError naming the field
};

dl::harness::Experiment positions_experiment();
struct LegacyFlags;
const LegacyFlags& positions_legacy_flags();  // the flags of the command line before the harness (cli.h)

}  // namespace studies
