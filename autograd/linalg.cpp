// autograd/linalg.cpp - forward and backward of matmul and linear (formulas in the header).
#include "autograd/linalg.h"

#include "tensor/bf16_gemm.h"  // Bf16PackedB

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

// Keeps x, or under Precision::bf16 (when the weight has a gradient) x's bf16 pairs in place of it: dw rounds x to
// bf16 anyway, so the pairs give the same dw in half the bytes (tensor/linalg.h, linear_input_bf16).
struct LinearNode : Node {
  Tensor x, w;
  Bf16PackedB xb;  // x's pairs; then x stays undefined and x_shape is its shape
  Shape x_shape;
  const char* name() const override { return "linear"; }
  std::vector<Tensor> apply(const Tensor& dy) override {
    LinearGrads g = xb.words ? linear_backward(xb, x_shape, w, dy, needs_grad(0), needs_grad(1), needs_grad(2))
                             : linear_backward(x, w, dy, needs_grad(0), needs_grad(1), needs_grad(2));
    return {g.dx, g.dw, g.db};
  }
  void release() override {
    x = w = Tensor();
    xb = Bf16PackedB();
  }
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
  const Tensor b = bias.defined() ? bias.data() : Tensor();
  const bool grad = any_requires_grad({x, w, bias}), keep_pairs = grad && w.requires_grad() && linear_keeps_bf16_input(x.data());
  Bf16PackedB xb;  // x's pairs for the backward, from the same read of x as the forward's product
  Tensor y = keep_pairs ? linear_keeping_bf16_input(x.data(), w.data(), b, xb) : linear(x.data(), w.data(), b);
  if (!grad) return Var(y);
  auto n = std::make_shared<LinearNode>();
  if (keep_pairs) n->xb = xb, n->x_shape = x.data().shape();
  else n->x = x.data();
  n->w = w.data();
  return record(n, y, {x, w, bias});
}

}  // namespace dl
