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
// Three settings (--preset): "default" (100 training steps: a few minutes on 2 cores), "large" (300 steps: the setting
// of the first tables of docs/studies/init_warmup.md) and "xl" (wider, deeper, longer; --large is its old spelling).
//
// What it is not: a BERT reproduction (d_model 64, a few hundred steps); its numbers say which way each effect
// goes at this scale, the doc says where that may differ from BERT's.
#pragma once
#include <string>
#include <vector>

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

// The defaults are the "default" preset.
struct InitWarmupOptions {
  // (a) gradient norms at initialisation
  std::vector<int> depths = {2, 4, 8, 12, 24};
  std::vector<std::string> inits = {"0.02", "lecun", "xavier"};
  // (b)-(d) training
  int train_depth = 6, steps = 100, warmup = 20, eval_every = 25, eval_batches = 4;
  std::vector<double> lrs = {1e-3, 3e-3};  // (b) runs at each; (c) and (d) at the first
  bool train = true;
  // shared
  std::string objective = "causal";  // or "mlm"
  int seeds = 3, d_model = 64, heads = 4, batch = 16, seq_len = 64;
  std::string text_file;  // empty: the Brown corpus (tasks/text_classification.h brown_pretraining_text)
  std::string out = "runs/studies/init_warmup";
};
// The options of a preset: "default" (= InitWarmupOptions{}: 100 steps, warmup 20), "large" (300 steps, warmup 60:
// the setting of the first tables of docs/studies/init_warmup.md) or "xl" (d_model 128, depth 12, 2000 steps, warmup
// 200, curve points every 50, 5 seeds, batch 32; the old --large flag); any other name is a CLI::ValidationError on
// --preset naming the three.
InitWarmupOptions init_warmup_preset(const std::string& name);

void run_init_warmup(const InitWarmupOptions& o);

}  // namespace studies
