// autograd/indexing.cpp - forward and backward of the indexing primitives (formulas in the header).
#include "autograd/indexing.h"

namespace dl {

namespace {

struct GatherNode : Node {
  Shape x_shape;
  int64_t dim;
  Tensor index;
  const char* name() const override { return "gather"; }
  std::vector<Tensor> apply(const Tensor& dy) override {
    Tensor dx = zeros(x_shape, dy.dtype(), dy.device());
    scatter_add_(dx, dim, index, dy);
    return {dx};
  }
  void release() override { index = Tensor(); }
};

struct ScatterAddNode : Node {
  Shape src_shape;
  int64_t dim;
  Tensor index;
  const char* name() const override { return "scatter_add"; }
  std::vector<Tensor> apply(const Tensor& dy) override {
    Tensor dsrc;
    if (needs_grad(1)) {
      Tensor g = gather(dy, dim, index);  // index's shape; src may be larger (its extra elements were unused)
      if (g.shape() == src_shape) dsrc = g;
      else {
        dsrc = zeros(src_shape, dy.dtype(), dy.device());
        Tensor part = dsrc;
        for (int64_t k = 0; k < g.dim(); k++) part = part.narrow(k, 0, g.size(k));
        copy_into(part, g);
      }
    }
    return {dy, dsrc};
  }
  void release() override { index = Tensor(); }
};

struct IndexSelectNode : Node {
  Shape x_shape;
  int64_t dim;
  Tensor index;
  const char* name() const override { return "index_select"; }
  std::vector<Tensor> apply(const Tensor& dy) override {
    Tensor dx = zeros(x_shape, dy.dtype(), dy.device());
    index_add_(dx, dim, index, dy);
    return {dx};
  }
  void release() override { index = Tensor(); }
};

struct EmbeddingNode : Node {
  int64_t V;
  Tensor index;
  const char* name() const override { return "embedding"; }
  std::vector<Tensor> apply(const Tensor& dy) override { return {embedding_backward(dy, index, V)}; }
  void release() override { index = Tensor(); }
};

}  // namespace

Var gather(const Var& x, int64_t dim, const Tensor& index) {
  Tensor y = gather(x.data(), dim, index);
  if (!any_requires_grad({x})) return Var(y);
  auto n = std::make_shared<GatherNode>();
  n->x_shape = x.shape();
  n->dim = wrap_dim(dim, x.dim(), "gather");
  n->index = index;
  return record(n, y, {x});
}

Var scatter_add(const Var& x, int64_t dim, const Tensor& index, const Var& src) {
  Tensor y = scatter_add(x.data(), dim, index, src.data());
  if (!any_requires_grad({x, src})) return Var(y);
  auto n = std::make_shared<ScatterAddNode>();
  n->src_shape = src.shape();
  n->dim = wrap_dim(dim, x.dim(), "scatter_add");
  n->index = index;
  return record(n, y, {x, src});
}

Var index_select(const Var& x, int64_t dim, const Tensor& idx) {
  Tensor y = index_select(x.data(), dim, idx);
  if (!any_requires_grad({x})) return Var(y);
  auto n = std::make_shared<IndexSelectNode>();
  n->x_shape = x.shape();
  n->dim = wrap_dim(dim, x.dim(), "index_select");
  n->index = idx;
  return record(n, y, {x});
}

Var embedding(const Var& weight, const Tensor& idx) {
  Tensor y = embedding(weight.data(), idx);
  if (!any_requires_grad({weight})) return Var(y);
  auto n = std::make_shared<EmbeddingNode>();
  n->V = weight.size(0);
  n->index = idx;
  return record(n, y, {weight});
}

}  // namespace dl
