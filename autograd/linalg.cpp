// autograd/linalg.cpp - forward and backward of matmul and linear (formulas in the header).
#include "autograd/linalg.h"

namespace dl {

namespace {

struct MatmulNode : Node {
  Tensor a, b;  // both needed: da uses b, db uses a
  const char* name() const override { return "matmul"; }
  std::vector<Tensor> apply(const Tensor& dy) override {
    MatmulGrads g = matmul_backward(a, b, dy, needs_grad(0), needs_grad(1));
    return {g.da, g.db};
  }
  void release() override { a = b = Tensor(); }
};

struct LinearNode : Node {
  Tensor x, w;
  const char* name() const override { return "linear"; }
  std::vector<Tensor> apply(const Tensor& dy) override {
    LinearGrads g = linear_backward(x, w, dy, needs_grad(0), needs_grad(1), needs_grad(2));
    return {g.dx, g.dw, g.db};
  }
  void release() override { x = w = Tensor(); }
};

}  // namespace

Var matmul(const Var& a, const Var& b) {
  Tensor y = matmul(a.data(), b.data());
  if (!any_requires_grad({a, b})) return Var(y);
  auto n = std::make_shared<MatmulNode>();
  n->a = a.data();
  n->b = b.data();
  return record(n, y, {a, b});
}

Var linear(const Var& x, const Var& w, const Var& bias) {
  Tensor y = linear(x.data(), w.data(), bias.defined() ? bias.data() : Tensor());
  if (!any_requires_grad({x, w, bias})) return Var(y);
  auto n = std::make_shared<LinearNode>();
  n->x = x.data();
  n->w = w.data();
  return record(n, y, {x, w, bias});
}

}  // namespace dl
