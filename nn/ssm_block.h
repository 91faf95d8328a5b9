// nn/ssm_block.h - the residual block around any sequence layer, as the S4 paper's backbone
// (state-spaces/s4 SequenceResidualBlock): x -> x + dropout(layer(norm(x))) (prenorm) or
// norm(x + dropout(layer(x))) (postnorm), with norm = LayerNorm over H or BatchNorm1d over (B, L) per channel.
// Shape letters: B batch, L length, H channels. The layer (S4D, S4, DLR, a convolution block, attention, ...)
// supplies its own GELU/GLU output projection; this block adds only the residual, the norm and dropout.
#pragma once
#include "nn/layers.h"
#include "nn/registry.h"

namespace dl::nn {

class SSMBlock : public SequenceLayer {
 public:
  // norm: "layer" or "batch"
  SSMBlock(std::shared_ptr<SequenceLayer> layer, int64_t d_model, const std::string& norm, bool prenorm, double dropout,
           Generator& g);
  std::string type_name() const override { return "SSMBlock"; }
  std::string extra_repr() const override { return norm_kind + (prenorm ? ", prenorm" : ", postnorm"); }
  Var forward(const Var& x, const Tensor& mask) override;
  bool is_causal() const override { return layer->is_causal() && norm_kind == "layer"; }

  std::shared_ptr<SequenceLayer> layer;
  std::shared_ptr<LayerNorm> ln;
  std::shared_ptr<BatchNorm1d> bn;
  std::shared_ptr<Dropout> drop;
  std::string norm_kind;
  bool prenorm;
};

}  // namespace dl::nn
