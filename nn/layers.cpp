// nn/layers.cpp - the basic layers (formulas and names in nn/layers.h).
#include "nn/layers.h"

#include <cmath>

#include "autograd/feed_forward.h"
#include "autograd/indexing.h"
#include "autograd/linalg.h"
#include "autograd/shape_ops.h"
#include "nn/init.h"

namespace dl::nn {

Linear::Linear(int64_t in, int64_t out, Generator& g, bool has_bias) : in_features(in), out_features(out) {
  weight = register_parameter("weight", init::kaiming_uniform_linear({out, in}, g));
  if (has_bias) bias = register_parameter("bias", init::uniform({out}, 1.0 / std::sqrt((double)in), g));
}

std::string Linear::extra_repr() const {
  return "in=" + std::to_string(in_features) + ", out=" + std::to_string(out_features) + (bias.defined() ? "" : ", bias=false");
}

Var Linear::forward(const Var& x) const {
  check_input(x);
  return linear(x, weight, bias);
}

void Linear::check_input(const Var& x) const {
  if (x.dim() < 1 || x.size(-1) != in_features)
    fail("Linear: input feature size mismatch: expected in_features = " + std::to_string(in_features) + ", found " +
         (x.dim() < 1 ? std::string("a scalar") : std::to_string(x.size(-1))) + " (input shape " + shape_str(x.shape()) + ")");
}

Embedding::Embedding(int64_t n, int64_t d, Generator& g) : num_embeddings(n), dim(d) {
  weight = register_parameter("weight", init::normal({n, d}, 1.0, g));
}

std::string Embedding::extra_repr() const { return std::to_string(num_embeddings) + ", " + std::to_string(dim); }

Var Embedding::forward(const Tensor& idx) const {
  if (idx.dtype() != DType::i64) fail(std::string("Embedding: expected i64 indices, found ") + dtype_name(idx.dtype()));
  return embedding(weight, idx);
}

LayerNorm::LayerNorm(int64_t d, double eps) : dim(d), eps(eps) {
  weight = register_parameter("weight", ones({d}));
  bias = register_parameter("bias", zeros({d}));
}

Var LayerNorm::forward(const Var& x) const {
  if (x.size(-1) != dim)
    fail("LayerNorm: last dim mismatch: expected " + std::to_string(dim) + ", found input shape " + shape_str(x.shape()));
  return layer_norm(x, weight, bias, eps);
}

RMSNorm::RMSNorm(int64_t d, double eps) : dim(d), eps(eps) { weight = register_parameter("weight", ones({d})); }

Var RMSNorm::forward(const Var& x) const {
  if (x.size(-1) != dim)
    fail("RMSNorm: last dim mismatch: expected " + std::to_string(dim) + ", found input shape " + shape_str(x.shape()));
  return rms_norm(x, weight, eps);
}

BatchNorm1d::BatchNorm1d(int64_t c, double eps, double momentum) : channels(c), eps(eps), momentum(momentum) {
  weight = register_parameter("weight", ones({c}));
  bias = register_parameter("bias", zeros({c}));
  register_buffer("running_mean", zeros({c}));
  register_buffer("running_var", ones({c}));
  register_buffer("num_batches_tracked", zeros({}, DType::i64));
}

Var BatchNorm1d::forward(const Var& x) {
  if ((x.dim() != 2 && x.dim() != 3) || x.size(1) != channels)
    fail("BatchNorm1d: expected input (B, C) or (B, C, L) with C = " + std::to_string(channels) + ", found " +
         shape_str(x.shape()));
  if (is_training()) {
    BatchNormResult r = batch_norm_train(x, weight, bias, eps);
    // running = (1 - momentum) running + momentum batch   (torch feeds the unbiased variance)
    Tensor& rm = buffer("running_mean");
    Tensor& rv = buffer("running_var");
    rm.copy_(add(mul_scalar(rm, 1 - momentum), mul_scalar(r.mean.to(rm.dtype()), momentum)));
    rv.copy_(add(mul_scalar(rv, 1 - momentum), mul_scalar(r.var_unbiased.to(rv.dtype()), momentum)));
    Tensor& nb = buffer("num_batches_tracked");
    nb.fill_(nb.item() + 1);
    return r.y;
  }
  // eval: y = (x - running_mean) / sqrt(running_var + eps) * weight + bias, per channel (dim 1)
  Shape cs = x.dim() == 2 ? Shape{1, channels} : Shape{1, channels, 1};
  Tensor mean = buffer("running_mean").to(x.dtype()).reshape(cs);
  Tensor rstd = rsqrt(add_scalar(buffer("running_var").to(x.dtype()), eps)).reshape(cs);
  return (x - Var(mean)) * Var(rstd) * reshape(weight, cs) + reshape(bias, cs);
}

Var Dropout::forward(const Var& x) const { return dropout(x, p, is_training(), *gen); }

Var glu(const Var& x) {
  int64_t n = x.size(-1);
  if (n % 2) fail("glu: the last dim must be even, found shape " + shape_str(x.shape()));
  // three primitives; nn/fused/glu.h's glu_fast runs one node with the same numbers where it can (the families call it)
  return narrow(x, -1, 0, n / 2) * sigmoid(narrow(x, -1, n / 2, n / 2));
}

FeedForward::FeedForward(int64_t d, int64_t hidden, double p, Generator& g) {
  fc1 = register_module("fc1", std::make_shared<Linear>(d, hidden, g));
  fc2 = register_module("fc2", std::make_shared<Linear>(hidden, d, g));
  drop = register_module("drop", std::make_shared<Dropout>(p, g));
}

Var feed_forward(const Linear& fc1, const Dropout& drop, const Linear& fc2, const Var& x) {
  fc1.check_input(x);
  return dl::feed_forward(x, fc1.weight, fc1.bias, fc2.weight, fc2.bias, drop.p, drop.is_training(), *drop.gen);
}

Var FeedForward::forward(const Var& x) const { return feed_forward(*fc1, *drop, *fc2, x); }

Mlp::Mlp(int64_t in, int64_t hidden, int64_t out, Generator& g) {
  fc1 = register_module("fc1", std::make_shared<Linear>(in, hidden, g));
  fc2 = register_module("fc2", std::make_shared<Linear>(hidden, out, g));
}

GLUBlock::GLUBlock(int64_t d, int64_t hidden, double p, Generator& g) {
  fc1 = register_module("fc1", std::make_shared<Linear>(d, 2 * hidden, g));
  fc2 = register_module("fc2", std::make_shared<Linear>(hidden, d, g));
  drop = register_module("drop", std::make_shared<Dropout>(p, g));
}

Var GLUBlock::forward(const Var& x) const { return fc2->forward(drop->forward(glu(fc1->forward(x)))); }

}  // namespace dl::nn
