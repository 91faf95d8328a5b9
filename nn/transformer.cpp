// nn/transformer.cpp - encoder/decoder layers, Mixer block, dual-encoder head (math in nn/transformer.h).
#include "nn/transformer.h"

#include "autograd/shape_ops.h"

namespace dl::nn {

Mlp::Mlp(int64_t in, int64_t hidden, int64_t out, Generator& g) {
  fc1 = register_module("fc1", std::make_shared<Linear>(in, hidden, g));
  fc2 = register_module("fc2", std::make_shared<Linear>(hidden, out, g));
}

TransformerEncoderLayer::TransformerEncoderLayer(int64_t d, int64_t heads, int64_t dim_ff, double p, bool nf, Generator& g,
                                                 const AttentionOptions& extra)
    : norm_first(nf) {
  AttentionOptions o = extra;
  o.heads = heads;
  o.dropout = p;
  self_attn = register_module("self_attn", std::make_shared<MultiheadAttention>(d, o, g));
  linear1 = register_module("linear1", std::make_shared<Linear>(d, dim_ff, g));
  dropout = register_module("dropout", std::make_shared<Dropout>(p, g));
  linear2 = register_module("linear2", std::make_shared<Linear>(dim_ff, d, g));
  norm1 = register_module("norm1", std::make_shared<LayerNorm>(d));
  norm2 = register_module("norm2", std::make_shared<LayerNorm>(d));
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(p, g));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(p, g));
}

Var TransformerEncoderLayer::forward(const Var& x0, const Tensor& mask) {
  Var x = x0;
  if (norm_first) {
    x = x + dropout1->forward(self_attn->forward(norm1->forward(x), mask));
    return x + dropout2->forward(ff(norm2->forward(x)));
  }
  x = norm1->forward(x + dropout1->forward(self_attn->forward(x, mask)));
  return norm2->forward(x + dropout2->forward(ff(x)));
}

TransformerDecoderLayer::TransformerDecoderLayer(int64_t d, int64_t heads, int64_t dim_ff, double p, bool nf, Generator& g)
    : norm_first(nf) {
  AttentionOptions o;
  o.heads = heads;
  o.dropout = p;
  o.causal = true;
  self_attn = register_module("self_attn", std::make_shared<MultiheadAttention>(d, o, g));
  o.causal = false;
  multihead_attn = register_module("multihead_attn", std::make_shared<MultiheadAttention>(d, o, g));
  linear1 = register_module("linear1", std::make_shared<Linear>(d, dim_ff, g));
  dropout = register_module("dropout", std::make_shared<Dropout>(p, g));
  linear2 = register_module("linear2", std::make_shared<Linear>(dim_ff, d, g));
  norm1 = register_module("norm1", std::make_shared<LayerNorm>(d));
  norm2 = register_module("norm2", std::make_shared<LayerNorm>(d));
  norm3 = register_module("norm3", std::make_shared<LayerNorm>(d));
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(p, g));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(p, g));
  dropout3 = register_module("dropout3", std::make_shared<Dropout>(p, g));
}

Var TransformerDecoderLayer::forward(const Var& x0, const Var& mem, const Tensor& mem_mask) {
  auto ff = [&](const Var& x) { return linear2->forward(dropout->forward(gelu(linear1->forward(x)))); };
  Var x = x0;
  if (norm_first) {
    x = x + dropout1->forward(self_attn->forward(norm1->forward(x), Tensor()));
    x = x + dropout2->forward(multihead_attn->cross(norm2->forward(x), mem, mem_mask));
    return x + dropout3->forward(ff(norm3->forward(x)));
  }
  x = norm1->forward(x + dropout1->forward(self_attn->forward(x, Tensor())));
  x = norm2->forward(x + dropout2->forward(multihead_attn->cross(x, mem, mem_mask)));
  return norm3->forward(x + dropout3->forward(ff(x)));
}

MixerBlock::MixerBlock(int64_t L, int64_t d, int64_t tok, int64_t ch, Generator& g) : seq_len(L) {
  norm1 = register_module("norm1", std::make_shared<LayerNorm>(d));
  mlp_tokens = register_module("mlp_tokens", std::make_shared<Mlp>(L, tok, L, g));
  norm2 = register_module("norm2", std::make_shared<LayerNorm>(d));
  mlp_channels = register_module("mlp_channels", std::make_shared<Mlp>(d, ch, d, g));
}

std::shared_ptr<MixerBlock> MixerBlock::from_config(int64_t d, const LayerConfig& c, Generator& g) {
  int64_t L = cfg_int(c, "mixer", "max_len", 0);
  if (L <= 0) fail("layer mixer: config field 'max_len' (the padded sequence length token mixing runs over) is required");
  return std::make_shared<MixerBlock>(L, d, cfg_int(c, "mixer", "token_hidden", std::max<int64_t>(1, L / 2)),
                                      cfg_int(c, "mixer", "channel_hidden", 4 * d), g);
}

Var MixerBlock::forward(const Var& x0, const Tensor& mask) {
  if (x0.dim() != 3 || x0.size(1) > seq_len)
    fail("MixerBlock: expected (B, T, C) with T <= seq_len = " + std::to_string(seq_len) + ", found " + shape_str(x0.shape()));
  const int64_t B = x0.size(0), T = x0.size(1);
  Var x = T < seq_len ? pad(x0, {0, 0, 0, seq_len - T}) : x0;  // (B, L, C)
  Var n = norm1->forward(x);
  Tensor keep = ones({B, seq_len}, x.dtype());  // real positions
  if (mask.defined()) {
    if (mask.shape() != Shape{B, T})
      fail("MixerBlock: mask shape mismatch: expected (B, T) = " + shape_str({B, T}) + ", found " + shape_str(mask.shape()));
    keep.narrow(1, 0, T).copy_(mask.to(x.dtype()));
  }
  if (T < seq_len) keep.narrow(1, T, seq_len - T).zero_();
  if (mask.defined() || T < seq_len) n = n * Var(keep.reshape({B, seq_len, 1}));
  x = x + transpose(mlp_tokens->forward(transpose(n, 1, 2)), 1, 2);  // mixes along L
  x = x + mlp_channels->forward(norm2->forward(x));
  return T < seq_len ? narrow(x, 1, 0, T) : x;
}

DualEncoderHead::DualEncoderHead(int64_t d, int64_t hidden, int64_t classes, Generator& g) {
  mlp = register_module("mlp", std::make_shared<Mlp>(4 * d, hidden, classes, g));
}

Var DualEncoderHead::forward(const Var& a, const Var& b) const {
  if (a.shape() != b.shape()) fail("DualEncoderHead: a and b differ: " + shape_str(a.shape()) + " vs " + shape_str(b.shape()));
  return mlp->forward(cat({a, b, a * b, a - b}, -1));
}

}  // namespace dl::nn
