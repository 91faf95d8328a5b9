// autograd/views.cpp - forward and backward of the view primitives (formulas in the header).
#include "autograd/views.h"

#include "autograd/slice_grad.h"

namespace dl {

namespace {

struct ReshapeNode : Node {
  Shape in_shape;
  const char* name_ = "reshape";
  const char* name() const override { return name_; }
  std::vector<Tensor> apply(const Tensor& dy) override { return {dy.reshape(in_shape)}; }
};
Var reshape_like(const char* name, const Var& x, const Tensor& y) {
  if (!any_requires_grad({x})) return Var(y);
  auto n = std::make_shared<ReshapeNode>();
  n->in_shape = x.shape();
  n->name_ = name;
  return record(n, y, {x});
}

struct PermuteNode : Node {
  std::vector<int64_t> inverse;
  const char* name() const override { return "permute"; }
  std::vector<Tensor> apply(const Tensor& dy) override { return {dy.permute(inverse)}; }
};

// narrow and select: scatter dy into a zero tensor of the input's shape
struct NarrowNode : SliceGradNode {
  Shape in_shape;
  int64_t dim, start, length;
  bool is_select = false;
  const char* name() const override { return is_select ? "select" : "narrow"; }
  std::vector<Tensor> apply(const Tensor& dy) override {
    Tensor dx = zeros(in_shape, dy.dtype(), dy.device());
    Tensor part = dx.narrow(dim, start, length);
    copy_into(part, is_select ? dy.unsqueeze(dim) : dy);
    return {dx};
  }
  bool accumulate_slice(const Tensor& dy, Tensor& g, bool& owned) override {  // autograd/slice_grad.h
    if (dy.device() != Device::cpu) return false;
    if (!g.defined()) {
      g = zeros(in_shape, dy.dtype(), dy.device());
      owned = true;
    } else if (!owned) {
      g = g.clone();
      owned = true;
    }
    add_(g.narrow(dim, start, length), is_select ? dy.unsqueeze(dim) : dy);
    return true;
  }
};

struct ExpandNode : Node {
  Shape in_shape;
  const char* name() const override { return "expand"; }
  std::vector<Tensor> apply(const Tensor& dy) override { return {sum_to(dy, in_shape)}; }
};

}  // namespace

Var reshape(const Var& x, const Shape& shape) { return reshape_like("reshape", x, x.data().reshape(shape)); }
Var flatten(const Var& x, int64_t s, int64_t e) { return reshape_like("flatten", x, x.data().flatten(s, e)); }
Var squeeze(const Var& x, int64_t d) { return reshape_like("squeeze", x, x.data().squeeze(d)); }
Var unsqueeze(const Var& x, int64_t d) { return reshape_like("unsqueeze", x, x.data().unsqueeze(d)); }
Var contiguous(const Var& x) {
  if (x.data().is_contiguous()) return x;
  return reshape_like("contiguous", x, x.data().contiguous());
}

Var permute(const Var& x, const std::vector<int64_t>& dims) {
  Tensor y = x.data().permute(dims);
  if (!any_requires_grad({x})) return Var(y);
  auto n = std::make_shared<PermuteNode>();
  n->inverse.resize(dims.size());
  for (size_t i = 0; i < dims.size(); i++) n->inverse[wrap_dim(dims[i], x.dim(), "permute")] = (int64_t)i;
  return record(n, y, {x});
}

Var transpose(const Var& x, int64_t d0, int64_t d1) {
  std::vector<int64_t> p(x.dim());
  for (int64_t i = 0; i < x.dim(); i++) p[i] = i;
  std::swap(p[wrap_dim(d0, x.dim(), "transpose")], p[wrap_dim(d1, x.dim(), "transpose")]);
  return permute(x, p);
}

Var narrow(const Var& x, int64_t dim, int64_t start, int64_t length) {
  Tensor y = x.data().narrow(dim, start, length);
  if (!any_requires_grad({x})) return Var(y);
  auto n = std::make_shared<NarrowNode>();
  n->in_shape = x.shape();
  n->dim = wrap_dim(dim, x.dim(), "narrow");
  n->start = start < 0 ? start + x.size(dim) : start;
  n->length = length;
  return record(n, y, {x});
}

Var select(const Var& x, int64_t dim, int64_t index) {
  Tensor y = x.data().select(dim, index);
  if (!any_requires_grad({x})) return Var(y);
  auto n = std::make_shared<NarrowNode>();
  n->in_shape = x.shape();
  n->dim = wrap_dim(dim, x.dim(), "select");
  n->start = index < 0 ? index + x.size(dim) : index;
  n->length = 1;
  n->is_select = true;
  return record(n, y, {x});
}

Var expand(const Var& x, const Shape& shape) {
  Tensor y = x.data().expand(shape);
  if (!any_requires_grad({x})) return Var(y);
  auto n = std::make_shared<ExpandNode>();
  n->in_shape = x.shape();
  return record(n, y, {x});
}

}  // namespace dl
