// nn/models/transformer.cpp - encoder/decoder layers and the dual-encoder head (math in nn/models/transformer.h).
#include "nn/models/transformer.h"

#include "autograd/shape_ops.h"

namespace dl::nn {

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
  auto ff = [&](const Var& x) { return feed_forward(*linear1, *dropout, *linear2, x); };
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

DualEncoderHead::DualEncoderHead(int64_t d, int64_t hidden, int64_t classes, Generator& g) {
  mlp = register_module("mlp", std::make_shared<Mlp>(4 * d, hidden, classes, g));
}

Var DualEncoderHead::forward(const Var& a, const Var& b) const {
  if (a.shape() != b.shape()) fail("DualEncoderHead: a and b differ: " + shape_str(a.shape()) + " vs " + shape_str(b.shape()));
  return mlp->forward(cat({a, b, a * b, a - b}, -1));
}

// ---- FLOP count (nn/sequence_layer.h's convention): the self-attention's, and linear1 and linear2 ----
double TransformerEncoderLayer::forward_flops(int64_t batch, int64_t L) const {
  const double rows = (double)batch * L;
  return self_attn->forward_flops(batch, L) + matmul_flops(rows, linear1->in_features, linear1->out_features) +
         matmul_flops(rows, linear2->in_features, linear2->out_features);
}

}  // namespace dl::nn
