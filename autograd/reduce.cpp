// autograd/reduce.cpp - forward and backward of the reductions (formulas in the header).
#include "autograd/reduce.h"

namespace dl {

namespace {

// sum and mean: dx = dy * scale broadcast back over the reduced dims (scale = 1 or 1/n)
struct SumNode : Node {
  const char* name_;
  Shape in_shape;
  Dims dims;
  double scale = 1.0;
  const char* name() const override { return name_; }
  std::vector<Tensor> apply(const Tensor& dy) override { return {reduce_grad_broadcast(dy, in_shape, dims, scale)}; }
};

// var: dx = dy * 2 (x - m) / (n - ddof); m is recomputed here so the forward saves only x
struct VarNode : Node {
  Tensor x;
  Dims dims;
  double denom = 1.0;  // n - ddof
  const char* name() const override { return "var"; }
  std::vector<Tensor> apply(const Tensor& dy) override {
    Tensor m = mean(x, dims, /*keepdim=*/true);
    return {mul(sub(x, m), reduce_grad_broadcast(dy, x.shape(), dims, 2.0 / denom))};
  }
  void release() override { x = Tensor(); }
};

// logsumexp: dx = dy * exp(x - y), y kept with keepdim so it broadcasts against x
struct LogsumexpNode : Node {
  Tensor x, y_keep;
  Dims dims;
  const char* name() const override { return "logsumexp"; }
  std::vector<Tensor> apply(const Tensor& dy) override {
    return {mul(exp(sub(x, y_keep)), reduce_grad_broadcast(dy, x.shape(), dims))};
  }
  void release() override { x = y_keep = Tensor(); }
};

// max/min over one dim: the gradient goes to the selected element only
struct ExtremeNode : Node {
  const char* name_;
  Tensor indices;
  int64_t dim;
  Shape in_shape;
  bool keepdim;
  const char* name() const override { return name_; }
  std::vector<Tensor> apply(const Tensor& dy) override { return {index_reduce_backward(dy, indices, dim, in_shape, keepdim)}; }
  void release() override { indices = Tensor(); }
};

Var sum_like(const char* name, const Var& x, const Tensor& y, const Dims& dims, double scale) {
  if (!any_requires_grad({x})) return Var(y);
  auto n = std::make_shared<SumNode>();
  n->name_ = name;
  n->in_shape = x.shape();
  n->dims = dims;
  n->scale = scale;
  return record(n, y, {x});
}

VarIndices extreme_var(const char* name, const Var& x, int64_t dim, bool keepdim, bool is_max) {
  ValuesIndices r = is_max ? max(x.data(), dim, keepdim) : min(x.data(), dim, keepdim);
  if (!any_requires_grad({x})) return {Var(r.values), r.indices};
  auto n = std::make_shared<ExtremeNode>();
  n->name_ = name;
  n->indices = r.indices;
  n->dim = x.dim() == 0 ? 0 : wrap_dim(dim, x.dim(), name);
  n->in_shape = x.shape();
  n->keepdim = keepdim;
  return {record(n, r.values, {x}), r.indices};
}

}  // namespace

Var sum(const Var& x, const Dims& dims, bool keepdim) { return sum_like("sum", x, sum(x.data(), dims, keepdim), dims, 1.0); }
Var sum(const Var& x) { return sum(x, {}, false); }

Var mean(const Var& x, const Dims& dims, bool keepdim) {
  Tensor y = mean(x.data(), dims, keepdim);
  int64_t n = y.numel() == 0 ? 0 : x.numel() / y.numel();
  return sum_like("mean", x, y, dims, 1.0 / (double)n);
}
Var mean(const Var& x) { return mean(x, {}, false); }

Var var(const Var& x, const Dims& dims, bool unbiased, bool keepdim) {
  Tensor y = var(x.data(), dims, unbiased, keepdim);
  if (!any_requires_grad({x})) return Var(y);
  auto n = std::make_shared<VarNode>();
  n->x = x.data();
  n->dims = dims;
  n->denom = (double)(y.numel() == 0 ? 0 : x.numel() / y.numel()) - (unbiased ? 1.0 : 0.0);
  return record(n, y, {x});
}

Var logsumexp(const Var& x, const Dims& dims, bool keepdim) {
  Tensor y = logsumexp(x.data(), dims, keepdim);
  if (!any_requires_grad({x})) return Var(y);
  auto n = std::make_shared<LogsumexpNode>();
  n->x = x.data();
  n->y_keep = y.reshape(reduced_shape_keepdim(x.shape(), dims, "logsumexp"));
  n->dims = dims;
  return record(n, y, {x});
}

VarIndices max(const Var& x, int64_t dim, bool keepdim) { return extreme_var("max", x, dim, keepdim, true); }
VarIndices min(const Var& x, int64_t dim, bool keepdim) { return extreme_var("min", x, dim, keepdim, false); }
Tensor argmax(const Var& x, int64_t dim, bool keepdim) { return argmax(x.data(), dim, keepdim); }
Tensor argmin(const Var& x, int64_t dim, bool keepdim) { return argmin(x.data(), dim, keepdim); }

}  // namespace dl
