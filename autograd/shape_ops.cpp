// autograd/shape_ops.cpp - forward and backward of the shape primitives (formulas in the header).
#include "autograd/shape_ops.h"

#include "autograd/views.h"

namespace dl {

namespace {

struct CatNode : Node {
  int64_t dim;
  std::vector<int64_t> sizes;
  const char* name() const override { return "cat"; }
  std::vector<Tensor> apply(const Tensor& dy) override {
    std::vector<Tensor> g(sizes.size());
    int64_t off = 0;
    for (size_t i = 0; i < sizes.size(); i++) {
      if (needs_grad(i)) g[i] = dy.narrow(dim, off, sizes[i]);
      off += sizes[i];
    }
    return g;
  }
};

struct PadNode : Node {
  std::vector<int64_t> neg_pads;
  const char* name() const override { return "pad"; }
  std::vector<Tensor> apply(const Tensor& dy) override { return {pad(dy, neg_pads, 0.0)}; }
};

struct FlipNode : Node {
  std::vector<int64_t> dims;
  const char* name() const override { return "flip"; }
  std::vector<Tensor> apply(const Tensor& dy) override { return {flip(dy, dims)}; }
};

struct RollNode : Node {
  int64_t shift, dim;
  const char* name() const override { return "roll"; }
  std::vector<Tensor> apply(const Tensor& dy) override { return {roll(dy, -shift, dim)}; }
};

struct CumsumNode : Node {
  int64_t dim;
  const char* name() const override { return "cumsum"; }
  std::vector<Tensor> apply(const Tensor& dy) override { return {cumsum(dy, dim, /*reverse=*/true)}; }
};

}  // namespace

Var cat(const std::vector<Var>& xs, int64_t dim) {
  std::vector<Tensor> ts;
  for (const Var& x : xs) ts.push_back(x.data());
  Tensor y = cat(ts, dim);
  if (!any_requires_grad(xs)) return Var(y);
  auto n = std::make_shared<CatNode>();
  n->dim = wrap_dim(dim, y.dim(), "cat");
  for (const Var& x : xs) n->sizes.push_back(x.size(n->dim));
  return record(n, y, xs);
}

Var stack(const std::vector<Var>& xs, int64_t dim) {
  if (xs.empty()) fail("stack: expected at least one tensor, got an empty list");
  int64_t d = wrap_dim(dim, xs[0].dim() + 1, "stack");
  std::vector<Var> u;
  for (size_t i = 0; i < xs.size(); i++) {
    if (xs[i].shape() != xs[0].shape())
      fail("stack: input " + std::to_string(i) + " has shape " + shape_str(xs[i].shape()) + " but input 0 has " +
           shape_str(xs[0].shape()) + "; all must be equal");
    u.push_back(unsqueeze(xs[i], d));
  }
  return cat(u, d);
}

std::vector<Var> split(const Var& x, const std::vector<int64_t>& sizes, int64_t dim) {
  int64_t d = wrap_dim(dim, x.dim(), "split"), sum = 0;
  for (int64_t s : sizes) sum += s;
  if (sum != x.size(d))
    fail("split: sizes sum to " + std::to_string(sum) + " but dim " + std::to_string(d) + " of " + shape_str(x.shape()) +
         " has size " + std::to_string(x.size(d)));
  std::vector<Var> out;
  int64_t off = 0;
  for (int64_t s : sizes) {
    out.push_back(narrow(x, d, off, s));
    off += s;
  }
  return out;
}

std::vector<Var> split(const Var& x, int64_t chunk, int64_t dim) {
  return split(x, chunk_sizes(x.size(wrap_dim(dim, x.dim(), "split")), chunk, "split"), dim);
}

Var pad(const Var& x, const std::vector<int64_t>& pads, double value) {
  Tensor y = pad(x.data(), pads, value);
  if (!any_requires_grad({x})) return Var(y);
  auto n = std::make_shared<PadNode>();
  for (int64_t p : pads) n->neg_pads.push_back(-p);
  return record(n, y, {x});
}

Var flip(const Var& x, const std::vector<int64_t>& dims) {
  Tensor y = flip(x.data(), dims);
  if (!any_requires_grad({x})) return Var(y);
  auto n = std::make_shared<FlipNode>();
  n->dims = dims;
  return record(n, y, {x});
}

Var roll(const Var& x, int64_t shift, int64_t dim) {
  Tensor y = roll(x.data(), shift, dim);
  if (!any_requires_grad({x})) return Var(y);
  auto n = std::make_shared<RollNode>();
  n->shift = shift;
  n->dim = dim;
  return record(n, y, {x});
}

Var cumsum(const Var& x, int64_t dim) {
  Tensor y = cumsum(x.data(), dim);
  if (!any_requires_grad({x})) return Var(y);
  auto n = std::make_shared<CumsumNode>();
  n->dim = dim;
  return record(n, y, {x});
}

Var repeat_interleave(const Var& x, int64_t repeats, int64_t dim) {
  int64_t d = wrap_dim(dim, x.dim(), "repeat_interleave");
  if (repeats < 0) fail("repeat_interleave: repeats must be >= 0, got " + std::to_string(repeats));
  Shape e = x.shape(), s = x.shape();
  e.insert(e.begin() + d + 1, repeats);
  s[d] *= repeats;
  return reshape(expand(unsqueeze(x, d + 1), e), s);
}

}  // namespace dl
