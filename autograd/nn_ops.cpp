// autograd/nn_ops.cpp - forward and backward of the fused NN primitives (formulas in the header).
// Each node saves only what its backward kernel reads and frees it in release().
#include "autograd/nn_ops.h"

namespace dl {

namespace {

// softmax and log_softmax both save the output y: the backward needs only y and dy
struct SoftmaxNode : Node {
  bool log;
  Tensor y;
  int64_t dim;
  const char* name() const override { return log ? "log_softmax" : "softmax"; }
  std::vector<Tensor> apply(const Tensor& dy) override {
    return {log ? log_softmax_backward(y, dy, dim) : softmax_backward(y, dy, dim)};
  }
  void release() override { y = Tensor(); }
};

Var softmax_var(const Var& x, int64_t dim, bool log) {
  Tensor y = log ? log_softmax(x.data(), dim) : softmax(x.data(), dim);
  if (!any_requires_grad({x})) return Var(y);
  auto n = std::make_shared<SoftmaxNode>();
  n->log = log;
  n->y = y;
  n->dim = dim;
  return record(n, y, {x});
}

// layer_norm / rms_norm / batch_norm: saves x, the statistics and the weight; inputs are (x, weight, bias)
struct NormNode : Node {
  enum Kind { layer, rms, batch } kind;
  Tensor x, mean, rstd, weight;
  const char* name() const override { return kind == layer ? "layer_norm" : kind == rms ? "rms_norm" : "batch_norm"; }
  std::vector<Tensor> apply(const Tensor& dy) override {
    NormGrads g;
    if (kind == layer) g = layer_norm_backward(dy, x, mean, rstd, weight, needs_grad(0), needs_grad(1), needs_grad(2));
    else if (kind == rms) g = rms_norm_backward(dy, x, rstd, weight, needs_grad(0), needs_grad(1));
    else g = batch_norm_train_backward(dy, x, mean, rstd, weight, needs_grad(0), needs_grad(1), needs_grad(2));
    return {g.dx, g.dweight, g.dbias};
  }
  void release() override { x = mean = rstd = weight = Tensor(); }
};

Var norm_var(NormNode::Kind kind, const Var& x, const Var& w, const Var& b, const NormOut& o) {
  if (!any_requires_grad({x, w, b})) return Var(o.y);
  auto n = std::make_shared<NormNode>();
  n->kind = kind;
  n->x = x.data();
  n->mean = o.mean;
  n->rstd = o.rstd;
  if (w.defined()) n->weight = w.data();
  return record(n, o.y, {x, w, b});
}

// Keeps the mask as bits (CPU) or as a tensor of 0 and 1/(1-p) (other devices).
struct DropoutNode : Node {
  Tensor mask;
  std::vector<uint64_t> bits;
  double p = 0;
  const char* name() const override { return "dropout"; }
  std::vector<Tensor> apply(const Tensor& dy) override {
    if (mask.defined()) return {mul(dy, mask)};
    return {apply_dropout_bits(dy.contiguous(), bits, p)};  // dx = dy * mask
  }
  void release() override {
    mask = Tensor();
    bits = {};
  }
};

struct CrossEntropyNode : Node {
  Tensor logits, target, lse;
  int64_t ignore_index, count;
  double label_smoothing;
  Reduction reduction;
  const char* name() const override { return "cross_entropy"; }
  std::vector<Tensor> apply(const Tensor& dy) override {
    return {cross_entropy_backward(dy, logits, target, lse, ignore_index, label_smoothing, reduction, count)};
  }
  void release() override { logits = target = lse = Tensor(); }
};

struct NllNode : Node {
  Shape shape;
  DType dtype;
  Tensor target;
  int64_t ignore_index, count;
  Reduction reduction;
  const char* name() const override { return "nll_loss"; }
  std::vector<Tensor> apply(const Tensor& dy) override {
    return {nll_loss_backward(dy, shape, dtype, target, ignore_index, reduction, count)};
  }
  void release() override { target = Tensor(); }
};

struct PointwiseLossNode : Node {
  PointwiseLoss kind;
  Tensor pred, target, mask;
  Reduction reduction;
  double count;
  const char* name() const override {
    return kind == PointwiseLoss::mse ? "mse_loss" : kind == PointwiseLoss::l1 ? "l1_loss" : "bce_with_logits";
  }
  std::vector<Tensor> apply(const Tensor& dy) override {
    PairGrads g = pointwise_loss_backward(kind, dy, pred, target, mask, reduction, count, needs_grad(0), needs_grad(1));
    return {g.dpred, g.dtarget};
  }
  void release() override { pred = target = mask = Tensor(); }
};

Var pointwise_var(PointwiseLoss kind, const Var& p, const Var& t, Reduction red, const Tensor& mask) {
  PointwiseLossOut o = pointwise_loss(kind, p.data(), t.data(), mask, red);
  if (!any_requires_grad({p, t})) return Var(o.loss);
  auto n = std::make_shared<PointwiseLossNode>();
  n->kind = kind;
  n->pred = p.data();
  n->target = t.data();
  n->mask = mask;
  n->reduction = red;
  n->count = o.count;
  return record(n, o.loss, {p, t});
}

}  // namespace

Var softmax(const Var& x, int64_t dim) { return softmax_var(x, dim, false); }
Var log_softmax(const Var& x, int64_t dim) { return softmax_var(x, dim, true); }

Var layer_norm(const Var& x, const Var& w, const Var& b, double eps) {
  NormOut o = layer_norm(x.data(), w.defined() ? w.data() : Tensor(), b.defined() ? b.data() : Tensor(), eps);
  return norm_var(NormNode::layer, x, w, b, o);
}

Var rms_norm(const Var& x, const Var& w, double eps) {
  NormOut o = rms_norm(x.data(), w.defined() ? w.data() : Tensor(), eps);
  return norm_var(NormNode::rms, x, w, Var(), o);
}

BatchNormResult batch_norm_train(const Var& x, const Var& w, const Var& b, double eps) {
  BatchNormOut o = batch_norm_train(x.data(), w.defined() ? w.data() : Tensor(), b.defined() ? b.data() : Tensor(), eps);
  NormOut no{o.y, o.mean, o.rstd};
  return {norm_var(NormNode::batch, x, w, b, no), o.mean, o.var, o.var_unbiased};
}

Var dropout(const Var& x, double p, bool training, Generator& g) {
  if (!(p >= 0.0 && p <= 1.0)) fail("dropout: p must be in [0, 1], got " + std::to_string(p));
  if (!training || p == 0.0) return x;
  if (x.data().device() == Device::cpu) {  // the mask as bits: the same draw and mask as dropout_mask, 1/32 the memory
    DropoutOut o = dropout_one_pass(x.data().contiguous(), p, g);  // = dropout_keep_bits, then apply_dropout_bits
    if (!any_requires_grad({x})) return Var(o.y);
    auto n = std::make_shared<DropoutNode>();
    n->bits = std::move(o.bits);
    n->p = p;
    return record(n, o.y, {x});
  }
  // on a device the mask stays there: the backend draws the CPU's mask from the same base (tensor/nn_kernels.h)
  Tensor mask = dropout_mask(x.shape(), p, g, x.dtype(), x.data().device());
  Tensor y = mul(x.data(), mask);
  if (!any_requires_grad({x})) return Var(y);
  auto n = std::make_shared<DropoutNode>();
  n->mask = mask;
  return record(n, y, {x});
}

Var cross_entropy(const Var& logits, const Tensor& target, int64_t ignore_index, double ls, Reduction red) {
  CrossEntropyOut o = cross_entropy(logits.data(), target, ignore_index, ls, red);
  if (!any_requires_grad({logits})) return Var(o.loss);
  auto n = std::make_shared<CrossEntropyNode>();
  n->logits = logits.data();
  n->target = target;
  n->lse = o.lse;
  n->ignore_index = ignore_index;
  n->count = o.count;
  n->label_smoothing = ls;
  n->reduction = red;
  return record(n, o.loss, {logits});
}

Var nll_loss(const Var& logp, const Tensor& target, int64_t ignore_index, Reduction red) {
  CrossEntropyOut o = nll_loss(logp.data(), target, ignore_index, red);
  if (!any_requires_grad({logp})) return Var(o.loss);
  auto n = std::make_shared<NllNode>();
  n->shape = logp.shape();
  n->dtype = logp.dtype();
  n->target = target;
  n->ignore_index = ignore_index;
  n->count = o.count;
  n->reduction = red;
  return record(n, o.loss, {logp});
}

Var mse_loss(const Var& p, const Var& t, Reduction red, const Tensor& mask) {
  return pointwise_var(PointwiseLoss::mse, p, t, red, mask);
}
Var l1_loss(const Var& p, const Var& t, Reduction red, const Tensor& mask) {
  return pointwise_var(PointwiseLoss::l1, p, t, red, mask);
}
Var binary_cross_entropy_with_logits(const Var& x, const Var& t, Reduction red, const Tensor& mask) {
  return pointwise_var(PointwiseLoss::bce_logits, x, t, red, mask);
}

}  // namespace dl
