// nn/transformer.h - Transformer blocks composed from nn/attention.h and nn/layers.h: the encoder and
// decoder layers of torch.nn (same state_dict names), an MLP-Mixer token-mixing block and the dual-encoder
// retrieval head. GPT-2 is in nn/gpt2.h, T5 in nn/t5.h (kept apart so each file stays small).
//
// Shape letters: B batch, T (target) time, S memory time, C channels (d_model).
//
//   TransformerEncoderLayer (torch.nn.TransformerEncoderLayer, batch_first, activation gelu)
//     pre-LN  (norm_first):  x = x + drop1(SA(norm1(x)));   x = x + drop2(FF(norm2(x)))
//     post-LN (Vaswani):     x = norm1(x + drop1(SA(x)));   x = norm2(x + drop2(FF(x)))
//     FF(x) = linear2(dropout(gelu(linear1(x))))
//     names: self_attn.{in_proj_weight, in_proj_bias, out_proj.weight, out_proj.bias}, linear1, linear2, norm1, norm2
//   TransformerDecoderLayer (torch.nn.TransformerDecoderLayer): causal self-attention, then cross-attention to
//     the memory (multihead_attn), then FF; norms norm1, norm2, norm3 in the same pre/post placement.
//   MixerBlock (Tolstikhin et al. 2021, timm names) on (B, L, C) with L = seq_len:
//     x = x + mlp_tokens(norm1(x)^T)^T     (mixes along L: fc1 (token_hidden, L), fc2 (L, token_hidden))
//     x = x + mlp_channels(norm2(x))       (mixes along C)
//     Shorter inputs are zero-padded to seq_len; padded positions are zeroed before token mixing, so they
//     cannot leak into real positions.
//   DualEncoderHead (LRA retrieval): logits = mlp([a, b, a*b, a-b]), a, b (B, C) -> (B, classes)
#pragma once
#include "nn/attention.h"

namespace dl::nn {

// Linear-GELU-Linear with its own output width (timm's Mlp): fc1 (hidden, in), fc2 (out, hidden).
class Mlp : public Module {
 public:
  Mlp(int64_t in, int64_t hidden, int64_t out, Generator& g);
  std::string type_name() const override { return "Mlp"; }
  Var forward(const Var& x) const { return fc2->forward(gelu(fc1->forward(x))); }
  std::shared_ptr<Linear> fc1, fc2;
};

class TransformerEncoderLayer : public SequenceLayer {
 public:
  TransformerEncoderLayer(int64_t d_model, int64_t heads, int64_t dim_ff, double dropout, bool norm_first, Generator& g,
                          const AttentionOptions& attn_extra = {});
  std::string type_name() const override { return "TransformerEncoderLayer"; }
  bool is_causal() const override { return self_attn->is_causal(); }
  Var forward(const Var& x, const Tensor& mask) override;  // (B, T, C), mask (B, T) 1 = real

  std::shared_ptr<MultiheadAttention> self_attn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<LayerNorm> norm1, norm2;
  std::shared_ptr<Dropout> dropout, dropout1, dropout2;
  bool norm_first;

 private:
  Var ff(const Var& x) const { return linear2->forward(dropout->forward(gelu(linear1->forward(x)))); }
};

class TransformerDecoderLayer : public Module {
 public:
  TransformerDecoderLayer(int64_t d_model, int64_t heads, int64_t dim_ff, double dropout, bool norm_first, Generator& g);
  std::string type_name() const override { return "TransformerDecoderLayer"; }
  // x (B, T, C) attends causally to itself and to memory (B, S, C) with memory_mask (B, S) (or undefined).
  Var forward(const Var& x, const Var& memory, const Tensor& memory_mask);

  std::shared_ptr<MultiheadAttention> self_attn, multihead_attn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<LayerNorm> norm1, norm2, norm3;
  std::shared_ptr<Dropout> dropout, dropout1, dropout2, dropout3;
  bool norm_first;
};

class MixerBlock : public SequenceLayer {
 public:
  MixerBlock(int64_t seq_len, int64_t d_model, int64_t token_hidden, int64_t channel_hidden, Generator& g);
  // registry "mixer": max_len (required), token_hidden [max_len / 2], channel_hidden [4 d_model]
  static std::shared_ptr<MixerBlock> from_config(int64_t d_model, const LayerConfig& c, Generator& g);
  std::string type_name() const override { return "MixerBlock"; }
  Var forward(const Var& x, const Tensor& mask) override;  // (B, T, C) with T <= seq_len

  std::shared_ptr<LayerNorm> norm1, norm2;
  std::shared_ptr<Mlp> mlp_tokens, mlp_channels;
  int64_t seq_len;
};

class DualEncoderHead : public Module {
 public:
  DualEncoderHead(int64_t d_model, int64_t hidden, int64_t classes, Generator& g);
  std::string type_name() const override { return "DualEncoderHead"; }
  Var forward(const Var& a, const Var& b) const;  // (B, C), (B, C) -> (B, classes)
  std::shared_ptr<Mlp> mlp;
};

}  // namespace dl::nn
