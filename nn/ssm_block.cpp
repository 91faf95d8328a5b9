// nn/ssm_block.cpp - residual + norm block (nn/ssm_block.h).
#include "nn/ssm_block.h"

namespace dl::nn {

SSMBlock::SSMBlock(std::shared_ptr<SequenceLayer> l, int64_t d, const std::string& norm, bool pre, double p, Generator& g)
    : norm_kind(norm), prenorm(pre) {
  layer = register_module("layer", l);
  if (norm == "layer") ln = register_module("norm", std::make_shared<LayerNorm>(d));
  else if (norm == "batch") bn = register_module("norm", std::make_shared<BatchNorm1d>(d));
  else fail("SSMBlock: norm must be \"layer\" or \"batch\", found \"" + norm + "\"");
  drop = register_module("dropout", std::make_shared<Dropout>(p, g));
}

Var SSMBlock::forward(const Var& x, const Tensor& mask) {
  // BatchNorm1d normalises (B, C, L): move H to the middle and back
  auto norm = [&](const Var& v) { return ln ? ln->forward(v) : transpose(bn->forward(transpose(v, 1, 2)), 1, 2); };
  if (prenorm) return x + drop->forward(layer->forward(norm(x), mask));
  return norm(x + drop->forward(layer->forward(x, mask)));
}

}  // namespace dl::nn
