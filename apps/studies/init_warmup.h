// apps/studies/init_warmup.h - `studies init-warmup`: why post-LN Transformers (BERT, GPT-1, Vaswani et al.) need a
// learning-rate warmup, why BERT is initialised with std 0.02, and whether BERT's extra dense layer before the
// output projection helps - measured on byte-level language models over the Brown corpus (a stand-in for BERT's
// BooksCorpus + Wikipedia).
//
// The questions (Su Jianlin, "模型优化漫谈：BERT的初始标准差为什么是0.02？", kexue.fm/archives/8747, 2021; Xiong et
// al. 2020, "On Layer Normalization in the Transformer Architecture"; Liu et al. 2020, "Understanding the
// Difficulty of Training Transformers"):
//   (a) at initialisation, how large is the gradient of each layer's parameters, for post-LN and pre-LN stacks of
//       depth 2 .. 24 and three inits? The argument in Su's post: post-LN, x_{l+1} = LN(x_l + F(x_l)), divides the
//       identity path by sqrt(1 + Var F / Var x) at every sublayer, so the input layers' gradient shrinks
//       geometrically unless F is small at init (which std 0.02 makes it); pre-LN, x_{l+1} = x_l + F(LN(x_l)), keeps
//       an identity path to every layer.
//   (b) does post-LN train without warmup, and does pre-LN need it? (loss curves, final loss mean +- SE)
//   (c) which init trains best after a fixed budget: N(0, 0.02^2), N(0, 1/fan_in) ("1/sqrt(d)"), Xavier uniform?
//   (d) does BERT's head transform (dense + gelu + LayerNorm, "cls.predictions.transform") before the tied output
//       projection help?
//
// The model (ByteLm), B batch, T time, C = d_model, V = 257 (256 bytes + [MASK] = 256):
//   post-LN (BERT):   h = LN_emb(E[x] + P);  h = post-LN layer(h) x depth;  logits = head(h)
//   pre-LN (Xiong):   h = E[x] + P;          h = pre-LN layer(h) x depth;   logits = head(LN_f(h))
//   head(h) = [LN(gelu(W h + b))] E^T + b_out        (the bracket only with head_transform; E tied with the input)
// The layers are nn/models/transformer.h's TransformerEncoderLayer (gelu, dropout 0), causal or not. Inits
// (init_parameters): every matrix (embeddings, attention in/out projections, linear1/2, head dense) drawn from the
// init, biases 0, LayerNorm gains 1.
// Objectives (tasks/objectives.h): "causal" (next byte, causal attention: the default) or "mlm" (15% of the bytes
// replaced by [MASK], no 80/10/10 split, bidirectional attention; cross-entropy on the masked bytes only). The
// default is causal because the byte MLM at this size sits on the unigram plateau for the whole budget (a masked
// byte's own position carries nothing, so nothing is learnt until attention finds the neighbours; measured: still
// at the unigram entropy after 1500 steps on Brown, and a PyTorch twin of the model plateaus the same way on a
// repetitive text), and a loss that does not move cannot compare warmups.
//
// The study is an experiment on the harness (apps/common/experiment.h), axes norm (post, pre) x arm, seeds:
//   studies init-warmup run  [--preset default|large|xl|FILE] [--norms post,pre] [--arms warmup,no-warmup,..]
//                            [--seeds 0,1,2] [--set steps=300].. [--resume] [--jobs 2] [--threads 2] [--quiet] [--out DIR]
//   studies init-warmup cell --norm post --arm lecun [--seed 0] ...
//   studies init-warmup list
// An arm is a section of the preset's arms_cfg (InitWarmupConfig below): "init-grads" measures (a) for every init and
// depth; the others train one configuration for (b)-(d): warmup / no-warmup at lr and at 3 lr (lr_factor), the lecun
// and xavier inits, the plain head. The tables take their rows from the cells' configs: (b) the N(0, 0.02^2) cells
// with the head transform, (c) and (d) those with warmup at lr_factor 1. Presets: "default" (100 training steps:
// a few minutes on 2 cores), "large" (300 steps: the setting of the first tables of docs/studies/init_warmup.md) and
// "xl" (wider, deeper, longer). The old form `studies init-warmup --seeds 3 --steps 300 --no-train` still runs: an
// option first means `run`, --seeds N is a count, the other flags are `--set` (init_warmup_legacy_flags).
//
// What it is not: a BERT reproduction (d_model 64, a few hundred steps); its numbers say which way each effect
// goes at this scale, the doc says where that may differ from BERT's.
#pragma once
#include <string>
#include <vector>

#include "apps/common/experiment.h"
#include "nn/models/transformer.h"

namespace studies {

struct ByteLmConfig {
  int64_t vocab = 257;  // bytes + [MASK]
  int64_t d_model = 64, heads = 4, dim_ff = 256, max_len = 64, depth = 6;
  bool norm_first = false;     // false: post-LN (BERT, Vaswani), true: pre-LN (GPT-2, Xiong et al.)
  bool head_transform = true;  // BERT's dense + gelu + LN before the tied projection
  bool causal = true;          // causal self-attention (the "causal" objective) or bidirectional ("mlm")
  std::string init = "0.02";   // "0.02", "lecun" (N(0, 1/fan_in)), "xavier" (Xavier uniform)
};

class ByteLm : public dl::nn::Module {
 public:
  ByteLm(const ByteLmConfig& c, dl::Generator& g);
  std::string type_name() const override { return "ByteLm"; }
  dl::Var forward(const dl::Tensor& ids) const;  // (B, T) i64 -> logits (B, T, V)

  ByteLmConfig cfg;
  std::shared_ptr<dl::nn::Embedding> tok, pos;
  std::shared_ptr<dl::nn::LayerNorm> emb_norm, final_norm;  // post-LN only / pre-LN only
  std::shared_ptr<dl::nn::ModuleList<dl::nn::TransformerEncoderLayer>> layers;
  std::shared_ptr<dl::nn::Linear> head_dense;  // head_transform only
  std::shared_ptr<dl::nn::LayerNorm> head_norm;
  dl::Var out_bias;  // (V)
};

// Re-draws every parameter of m: matrices (dim >= 2) from `init`, parameters named *bias zero, the rest (LayerNorm
// gains) one. An unknown init is std::invalid_argument naming the known ones.
void init_parameters(dl::nn::Module& m, const std::string& init, dl::Generator& g);
std::string init_label(const std::string& init);  // "N(0, 0.02^2)", ...

struct LmBatch {
  dl::Tensor inputs, targets;  // (B, T) i64; targets tasks::kIgnoreIndex where no prediction is asked
};
// B windows at random offsets of `text`: "causal": T + 1 bytes, inputs the first T, targets the last T;
// "mlm": T bytes, each replaced by [MASK] (256) with probability 0.15, targets the original where masked.
LmBatch lm_batch(const std::string& text, int64_t B, int64_t T, const std::string& objective, uint64_t seed);

dl::Var lm_loss(const ByteLm& m, const LmBatch& b);  // mean cross-entropy over the positions with a target
// |dL/dtheta_l|_2 over all parameters of encoder layer l (l = 0 next to the input), for the loss on batch b.
// Clears the model's gradients first and leaves this batch's gradients in them.
std::vector<double> layer_grad_norms(ByteLm& m, const LmBatch& b);

// One cell's settings: the preset's defaults, the arm's section, then --set. The axes fill norm and arm.
struct InitWarmupConfig {
  std::string norm = "post", arm = "warmup";  // post-LN or pre-LN; the preset's arm
  std::string measure = "training";           // "training" (b)-(d), or "grad_norms" (a)
  int seed = 0;
  // (a) gradient norms at initialisation: every depth x init
  std::string depths = "2,4,8,12,24", inits = "0.02,lecun,xavier";
  // (b)-(d) one training run: AdamW at lr x lr_factor, warmup steps then constant ("warmup") or constant ("constant")
  std::string init = "0.02", schedule = "warmup";
  bool head_transform = true;
  double lr = 1e-3, lr_factor = 1;
  int depth = 6, steps = 100, warmup = 20, eval_every = 25, eval_batches = 4;
  // shared
  std::string objective = "causal", text;  // text: a UTF-8 file instead of the Brown corpus ("")
  int d_model = 64, heads = 4, batch = 16, seq_len = 64;
  template <class C, class F> static void fields(C& c, F&& f) {
    f("norm", c.norm), f("arm", c.arm), f("measure", c.measure), f("seed", c.seed), f("depths", c.depths);
    f("inits", c.inits), f("init", c.init), f("schedule", c.schedule), f("head_transform", c.head_transform);
    f("lr", c.lr), f("lr_factor", c.lr_factor), f("depth", c.depth), f("steps", c.steps), f("warmup", c.warmup);
    f("eval_every", c.eval_every), f("eval_batches", c.eval_batches), f("objective", c.objective), f("text", c.text);
    f("d_model", c.d_model), f("heads", c.heads), f("batch", c.batch), f("seq_len", c.seq_len);
  }
  std::vector<int> depth_list() const;         // `depths` parsed (a ConfigError names a bad item)
  std::vector<std::string> init_list() const;  // `inits` parsed, each a known init
  void validate() const;                       // a ConfigError naming the field
};

dl::harness::Experiment init_warmup_experiment();
struct LegacyFlags;
const LegacyFlags& init_warmup_legacy_flags();  // the flags of the command line before the harness (cli.h)

}  // namespace studies
