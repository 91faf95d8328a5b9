// autograd/conv.cpp - forward and backward of conv1d (formulas in the header).
#include "autograd/conv.h"

namespace dl {

namespace {

struct Conv1dNode : Node {
  Tensor x, w;  // the backward recomputes im2col from x rather than keeping cols (K times larger)
  Conv1dParams p;
  const char* name() const override { return "conv1d"; }
  std::vector<Tensor> apply(const Tensor& dy) override {
    Conv1dGrads g = conv1d_backward(x, w, dy, p, needs_grad(0), needs_grad(1), needs_grad(2));
    return {g.dx, g.dw, g.db};
  }
  void release() override { x = w = Tensor(); }
};

}  // namespace

Var conv1d(const Var& x, const Var& w, const Var& bias, const Conv1dParams& p) {
  Tensor y = conv1d(x.data(), w.data(), bias.defined() ? bias.data() : Tensor(), p);
  if (!any_requires_grad({x, w, bias})) return Var(y);
  auto n = std::make_shared<Conv1dNode>();
  n->x = x.data();
  n->w = w.data();
  n->p = p;
  return record(n, y, {x, w, bias});
}

}  // namespace dl
