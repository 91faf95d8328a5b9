// autograd/elementwise.cpp - forward and backward of the elementwise primitives (formulas in the header).
#include "autograd/elementwise.h"

namespace dl {

namespace {

// y = a (op) b with broadcasting; the backward returns one gradient per input, reduced to its shape.
struct BinaryNode : Node {
  BinaryOp op;
  Tensor a, b;  // saved only where the formula needs them
  Shape sa, sb;
  const char* name() const override {
    switch (op) {
      case BinaryOp::add: return "add";
      case BinaryOp::sub: return "sub";
      case BinaryOp::mul: return "mul";
      case BinaryOp::div: return "div";
    }
    return "binary";
  }
  std::vector<Tensor> apply(const Tensor& dy) override {
    Tensor da, db;
    switch (op) {
      case BinaryOp::add:
        if (needs_grad(0)) da = sum_to(dy, sa);
        if (needs_grad(1)) db = sum_to(dy, sb);
        break;
      case BinaryOp::sub:
        if (needs_grad(0)) da = sum_to(dy, sa);
        if (needs_grad(1)) db = sum_to(neg(dy), sb);
        break;
      case BinaryOp::mul:  // da = dy * b, db = dy * a
        if (needs_grad(0)) da = sum_to(mul(dy, b), sa);
        if (needs_grad(1)) db = sum_to(mul(dy, a), sb);
        break;
      case BinaryOp::div:  // da = dy / b, db = -dy * a / b^2
        if (needs_grad(0)) da = sum_to(div(dy, b), sa);
        if (needs_grad(1)) db = sum_to(neg(div(mul(dy, a), mul(b, b))), sb);
        break;
    }
    return {da, db};
  }
  void release() override { a = b = Tensor(); }
};

Var binary(BinaryOp op, const Var& a, const Var& b) {
  Tensor y;
  switch (op) {
    case BinaryOp::add: y = add(a.data(), b.data()); break;
    case BinaryOp::sub: y = sub(a.data(), b.data()); break;
    case BinaryOp::mul: y = mul(a.data(), b.data()); break;
    case BinaryOp::div: y = div(a.data(), b.data()); break;
  }
  if (!any_requires_grad({a, b})) return Var(y);
  auto n = std::make_shared<BinaryNode>();
  n->op = op;
  n->sa = a.shape();
  n->sb = b.shape();
  if (op == BinaryOp::mul || op == BinaryOp::div) {
    if (b.requires_grad() || op == BinaryOp::mul) n->a = a.data();
    n->b = b.data();
  }
  return record(n, y, {a, b});
}

// y = f(x) for the unary ops of tensor/elementwise.h; saves the one of x and y its derivative uses
// (unary_backward_uses_y). Saving both held every GELU's output until the backward, whether or not the next op keeps
// it (a bf16 linear keeps only its pairs: then the float32 output was held by this node alone).
struct UnaryNode : Node {
  UnaryOp op;
  Tensor x, y;
  const char* name_ = "unary";
  const char* name() const override { return name_; }
  std::vector<Tensor> apply(const Tensor& dy) override { return {unary_backward(op, x, y, dy)}; }
  void release() override { x = y = Tensor(); }
};

Var unary_var(UnaryOp op, const char* name, const Var& x) {
  Tensor y = unary(op, x.data());
  if (!any_requires_grad({x})) return Var(y);
  auto n = std::make_shared<UnaryNode>();
  n->op = op;
  n->name_ = name;
  if (unary_backward_uses_y(op)) n->y = y;
  else n->x = x.data();
  return record(n, y, {x});
}

// Ops whose backward is dy times a tensor computed in the forward: dx = dy * dydx.
struct ScaleNode : Node {
  const char* name_;
  Tensor dydx;  // undefined means "dydx is the constant `c`"
  double c = 1.0;
  const char* name() const override { return name_; }
  std::vector<Tensor> apply(const Tensor& dy) override { return {dydx.defined() ? mul(dy, dydx) : mul_scalar(dy, c)}; }
  void release() override { dydx = Tensor(); }
};

Var scaled(const char* name, const Var& x, const Tensor& y, const Tensor& dydx, double c = 1.0) {
  if (!any_requires_grad({x})) return Var(y);
  auto n = std::make_shared<ScaleNode>();
  n->name_ = name;
  n->dydx = dydx;
  n->c = c;
  return record(n, y, {x});
}

// where(c, a, b): da = dy * c, db = dy * (1 - c)
struct WhereNode : Node {
  Tensor cond;
  Shape sa, sb;
  const char* name() const override { return "where"; }
  std::vector<Tensor> apply(const Tensor& dy) override {
    Tensor zero = zeros({}, dy.dtype(), dy.device());
    Tensor da, db;
    if (needs_grad(0)) da = sum_to(dl::where(cond, dy, zero), sa);
    if (needs_grad(1)) db = sum_to(dl::where(cond, zero, dy), sb);
    return {da, db};
  }
  void release() override { cond = Tensor(); }
};

}  // namespace

Var add(const Var& a, const Var& b) { return binary(BinaryOp::add, a, b); }
Var sub(const Var& a, const Var& b) { return binary(BinaryOp::sub, a, b); }
Var mul(const Var& a, const Var& b) { return binary(BinaryOp::mul, a, b); }
Var div(const Var& a, const Var& b) { return binary(BinaryOp::div, a, b); }

Var neg(const Var& x) { return scaled("neg", x, neg(x.data()), Tensor(), -1.0); }
Var add_scalar(const Var& x, double s) { return scaled("add_scalar", x, add_scalar(x.data(), s), Tensor(), 1.0); }
Var mul_scalar(const Var& x, double s) { return scaled("mul_scalar", x, mul_scalar(x.data(), s), Tensor(), s); }
Var pow(const Var& x, double p) {  // dx = dy * p * x^(p-1)
  Tensor y = pow_scalar(x.data(), p);
  if (!any_requires_grad({x})) return Var(y);
  return scaled("pow", x, y, mul_scalar(pow_scalar(x.data(), p - 1), p));
}
Var exp(const Var& x) { return unary_var(UnaryOp::exp, "exp", x); }
Var log(const Var& x) { return unary_var(UnaryOp::log, "log", x); }
Var sqrt(const Var& x) { return unary_var(UnaryOp::sqrt, "sqrt", x); }
Var rsqrt(const Var& x) { return unary_var(UnaryOp::rsqrt, "rsqrt", x); }
Var abs(const Var& x) { return unary_var(UnaryOp::abs, "abs", x); }
Var tanh(const Var& x) { return unary_var(UnaryOp::tanh, "tanh", x); }
Var sigmoid(const Var& x) { return unary_var(UnaryOp::sigmoid, "sigmoid", x); }
Var relu(const Var& x) { return unary_var(UnaryOp::relu, "relu", x); }
Var gelu(const Var& x, bool t) { return unary_var(t ? UnaryOp::gelu_tanh : UnaryOp::gelu_erf, t ? "gelu_tanh" : "gelu", x); }
Var silu(const Var& x) { return unary_var(UnaryOp::silu, "silu", x); }
Var softplus(const Var& x) { return unary_var(UnaryOp::softplus, "softplus", x); }
Var elu(const Var& x, double alpha) {  // dx = dy for x > 0, dy * (y + alpha) otherwise
  Tensor y = elu(x.data(), alpha);
  if (!any_requires_grad({x})) return Var(y);
  const Device dev = x.data().device();
  Tensor pos = gt(x.data(), zeros({}, x.dtype(), dev));
  Tensor d = where(pos, ones({}, x.dtype(), dev), add_scalar(y, alpha));
  return scaled("elu", x, y, d);
}
Var clamp(const Var& x, double lo, double hi) {  // dx = dy inside [lo, hi], 0 outside
  Tensor y = clamp(x.data(), lo, hi);
  if (!any_requires_grad({x})) return Var(y);
  const Device dev = x.data().device();
  Tensor inside = mul(ge(x.data(), full({}, lo, x.dtype(), dev)), le(x.data(), full({}, hi, x.dtype(), dev)));
  return scaled("clamp", x, y, inside);
}
Var sin(const Var& x) {  // d sin = cos
  Tensor y = sin(x.data());
  return any_requires_grad({x}) ? scaled("sin", x, y, cos(x.data())) : Var(y);
}
Var cos(const Var& x) {  // d cos = -sin
  Tensor y = cos(x.data());
  return any_requires_grad({x}) ? scaled("cos", x, y, neg(sin(x.data()))) : Var(y);
}

Var where(const Tensor& cond, const Var& a, const Var& b) {
  Tensor y = where(cond, a.data(), b.data());
  if (!any_requires_grad({a, b})) return Var(y);
  auto n = std::make_shared<WhereNode>();
  n->cond = cond.to(a.dtype());
  n->sa = a.shape();
  n->sb = b.shape();
  return record(n, y, {a, b});
}

Var masked_fill(const Var& x, const Tensor& mask, double value) {
  const Device dev = x.data().device();  // a host mask follows a device x there (as tensor/'s masked_fill)
  return where(mask.device() == dev ? mask : mask.to(dev), Var(full({}, value, x.dtype(), dev)), x);
}

}  // namespace dl
