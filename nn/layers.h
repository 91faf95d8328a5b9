// nn/layers.h - the basic layers: Linear, Embedding, LayerNorm, RMSNorm, BatchNorm1d, Dropout, activations,
// and three small blocks (FeedForward, GLUBlock, Mlp). Each is a composition of autograd primitives (no backward of
// its own) and names its parameters and buffers as the equivalent PyTorch module's state_dict does.
//
//   Linear(in, out)       y = x W^T + b          weight (out, in), bias (out)        torch.nn.Linear
//   Embedding(n, d)       y = weight[idx]         weight (n, d)                        torch.nn.Embedding
//   LayerNorm(d)          y = (x - mean) / sqrt(var + eps) * weight + bias over the last dim
//   RMSNorm(d)            y = x / sqrt(mean(x^2) + eps) * weight   (T5LayerNorm; Zhang & Sennrich 2019)
//   BatchNorm1d(C)        train: batch statistics over every dim but C (input (B, C) or (B, C, L)), and
//                           running = (1 - momentum) running + momentum batch  (running_var uses the unbiased
//                           batch variance), num_batches_tracked += 1;  eval: the running statistics.
//   Dropout(p)            train: x * mask / (1 - p), mask ~ Bernoulli(1 - p) from its Generator; eval: x
//   GELU / SiLU / GLU     gelu(x) (exact erf or tanh form); x sigmoid(x); a * sigmoid(b) with (a, b) the
//                           halves of the last dim (torch.nn.GLU(dim=-1))
//   FeedForward(d, h)     fc2(dropout(gelu(fc1(x))))          fc1 (h, d), fc2 (d, h)
//   GLUBlock(d, h)        fc2(dropout(glu(fc1(x))))           fc1 (2h, d), fc2 (d, h)   (Dauphin et al. 2017)
//   Mlp(in, h, out)       fc2(gelu(fc1(x)))                   fc1 (h, in), fc2 (out, h) (timm's Mlp)
//
// Initialisation follows PyTorch's defaults (Linear: U(+-1/sqrt(in)) for weight and bias; Embedding: N(0, 1);
// norms: weight 1, bias 0), drawn from the Generator passed in, so the same seed gives the same model.
// What it is not: fused kernels (the primitives they use are the kernels).
#pragma once
#include "autograd/ops.h"
#include "nn/module.h"

namespace dl::nn {

class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, Generator& g, bool bias = true);
  std::string type_name() const override { return "Linear"; }
  std::string extra_repr() const override;
  Var forward(const Var& x) const;  // x (..., in) -> (..., out)
  void check_input(const Var& x) const;  // names a last dim other than in_features
  Var weight, bias;                 // bias undefined when bias = false
  int64_t in_features, out_features;
};

class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t dim, Generator& g);
  std::string type_name() const override { return "Embedding"; }
  std::string extra_repr() const override;
  Var forward(const Tensor& idx) const;  // idx (...) i64 -> (..., dim)
  Var weight;
  int64_t num_embeddings, dim;
};

class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t dim, double eps = 1e-5);
  std::string type_name() const override { return "LayerNorm"; }
  Var forward(const Var& x) const;  // over the last dim
  Var weight, bias;
  int64_t dim;
  double eps;
};

class RMSNorm : public Module {
 public:
  explicit RMSNorm(int64_t dim, double eps = 1e-6);
  std::string type_name() const override { return "RMSNorm"; }
  Var forward(const Var& x) const;
  Var weight;
  int64_t dim;
  double eps;
};

class BatchNorm1d : public Module {
 public:
  explicit BatchNorm1d(int64_t channels, double eps = 1e-5, double momentum = 0.1);
  std::string type_name() const override { return "BatchNorm1d"; }
  Var forward(const Var& x);  // (B, C) or (B, C, L); updates the running buffers in training mode
  Var weight, bias;
  int64_t channels;
  double eps, momentum;
};

class Dropout : public Module {
 public:
  // Holds a reference to `g`: the Generator must outlive the module.
  Dropout(double p, Generator& g) : p(p), gen(&g) {}
  std::string type_name() const override { return "Dropout"; }
  Var forward(const Var& x) const;
  double p;
  Generator* gen;
};

class GELU : public Module {
 public:
  explicit GELU(bool tanh_approx = false) : tanh_approx(tanh_approx) {}
  std::string type_name() const override { return "GELU"; }
  Var forward(const Var& x) const { return gelu(x, tanh_approx); }
  bool tanh_approx;
};

class SiLU : public Module {
 public:
  std::string type_name() const override { return "SiLU"; }
  Var forward(const Var& x) const { return silu(x); }
};

// a * sigmoid(b), (a, b) = the two halves of the last dim.
Var glu(const Var& x);
class GLU : public Module {
 public:
  std::string type_name() const override { return "GLU"; }
  Var forward(const Var& x) const { return glu(x); }
};

// fc2(drop(gelu(fc1(x)))) (GELU's erf form) through autograd/feed_forward.h: one node under the bf16 products, whose
// hidden activations are never written in float32; the four ops elsewhere, with the same numbers either way.
Var feed_forward(const Linear& fc1, const Dropout& drop, const Linear& fc2, const Var& x);

class FeedForward : public Module {
 public:
  FeedForward(int64_t d, int64_t hidden, double dropout, Generator& g);
  std::string type_name() const override { return "FeedForward"; }
  Var forward(const Var& x) const;
  std::shared_ptr<Linear> fc1, fc2;
  std::shared_ptr<Dropout> drop;
};

// Linear-GELU-Linear with its own output width (timm's Mlp): fc1 (hidden, in), fc2 (out, hidden).
class Mlp : public Module {
 public:
  Mlp(int64_t in, int64_t hidden, int64_t out, Generator& g);
  std::string type_name() const override { return "Mlp"; }
  Var forward(const Var& x) const { return fc2->forward(gelu(fc1->forward(x))); }
  std::shared_ptr<Linear> fc1, fc2;
};

class GLUBlock : public Module {
 public:
  GLUBlock(int64_t d, int64_t hidden, double dropout, Generator& g);
  std::string type_name() const override { return "GLUBlock"; }
  Var forward(const Var& x) const;
  std::shared_ptr<Linear> fc1, fc2;
  std::shared_ptr<Dropout> drop;
};

}  // namespace dl::nn
