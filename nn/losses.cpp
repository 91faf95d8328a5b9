// nn/losses.cpp - masked losses and CoSENT (formulas in nn/losses.h).
#include "nn/losses.h"

#include "autograd/shape_ops.h"

namespace dl::nn {

Var masked_token_loss(const Var& logits, const Tensor& targets, int64_t ignore_index) {
  if (logits.dim() < 1 || Shape(logits.shape().begin(), logits.shape().end() - 1) != targets.shape())
    fail("masked_token_loss: logits " + shape_str(logits.shape()) + " must be targets " + shape_str(targets.shape()) + " + (V)");
  const int64_t V = logits.size(-1);
  return cross_entropy(reshape(logits, {-1, V}), targets.reshape({-1}), ignore_index);
}

static Var masked_mean(const Var& elementwise, const Tensor& mask, const char* op) {
  const Shape& s = elementwise.shape();
  if (elementwise.dim() < 1 || Shape(s.begin(), s.end() - 1) != mask.shape())
    fail(std::string(op) + ": mask " + shape_str(mask.shape()) + " must be the prediction's shape " + shape_str(s) +
         " without its last dim");
  Tensor m = mask.to(elementwise.dtype()).unsqueeze(-1);  // (..., 1) broadcasts over D
  double count = sum(m).item() * (double)elementwise.size(-1);
  return sum(elementwise * Var(m)) * (1.0 / count);
}

Var masked_mse(const Var& pred, const Var& target, const Tensor& mask) {
  Var d = pred - target;
  return masked_mean(d * d, mask, "masked_mse");
}

Var masked_l1(const Var& pred, const Var& target, const Tensor& mask) {
  return masked_mean(abs(pred - target), mask, "masked_l1");
}

Var cosent_loss(const Var& cos, const Tensor& labels, double lambda) {
  if (cos.dim() != 1 || labels.shape() != cos.shape())
    fail("cosent_loss: expected cos (N) and labels (N), found " + shape_str(cos.shape()) + " and " + shape_str(labels.shape()));
  const int64_t N = cos.size(0);
  Var d = (unsqueeze(cos, 0) - unsqueeze(cos, 1)) * lambda;  // (i, j) -> lambda (cos_j - cos_i)
  Tensor l = labels.to(DType::f64);
  Tensor skip = le(l.reshape({N, 1}), l.reshape({1, N})).to(cos.dtype());  // keep only label_i > label_j
  d = masked_fill(d, skip, -1e12);
  Var all = cat({Var(zeros({1}, cos.dtype())), reshape(d, {N * N})}, 0);  // the "1 +" is exp(0)
  return logsumexp(all, {0});
}

}  // namespace dl::nn
