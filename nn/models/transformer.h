// nn/models/transformer.h - Transformer blocks composed from nn/attention/attention.h and nn/layers.h: the encoder and
// decoder layers of torch.nn (same state_dict names) and the dual-encoder retrieval head. GPT-2 is in nn/models/gpt2.h, T5 in nn/models/t5.h (kept apart so each file stays small).
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
//   DualEncoderHead (LRA retrieval): logits = mlp([a, b, a*b, a-b]), a, b (B, C) -> (B, classes)
#pragma once
#include "nn/attention/attention.h"

namespace dl::nn {

class TransformerEncoderLayer : public SequenceLayer {
 public:
  TransformerEncoderLayer(int64_t d_model, int64_t heads, int64_t dim_ff, double dropout, bool norm_first, Generator& g,
                          const AttentionOptions& attn_extra = {});
  std::string type_name() const override { return "TransformerEncoderLayer"; }
  bool is_causal() const override { return self_attn->is_causal(); }
  Var forward(const Var& x, const Tensor& mask) override;  // (B, T, C), mask (B, T) 1 = real
  // the self-attention's count and the feed-forward's two products (4 T C F)
  double forward_flops(int64_t batch, int64_t L) const override;  // nn/sequence_layer.h's convention

  std::shared_ptr<MultiheadAttention> self_attn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<LayerNorm> norm1, norm2;
  std::shared_ptr<Dropout> dropout, dropout1, dropout2;
  bool norm_first;

 private:
  Var ff(const Var& x) const { return feed_forward(*linear1, *dropout, *linear2, x); }  // nn/layers.h
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

class DualEncoderHead : public Module {
 public:
  DualEncoderHead(int64_t d_model, int64_t hidden, int64_t classes, Generator& g);
  std::string type_name() const override { return "DualEncoderHead"; }
  Var forward(const Var& a, const Var& b) const;  // (B, C), (B, C) -> (B, classes)
  std::shared_ptr<Mlp> mlp;
};

}  // namespace dl::nn
