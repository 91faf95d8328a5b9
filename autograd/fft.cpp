// autograd/fft.cpp - rfft/irfft nodes and the complex helpers composed of primitives (formulas in the header).
#include "autograd/fft.h"

#include "autograd/elementwise.h"
#include "autograd/shape_ops.h"
#include "autograd/views.h"
#include "tensor/shape_ops.h"

namespace dl {

namespace {

struct RfftNode : Node {
  int64_t n, L;
  const char* name() const override { return "rfft"; }
  std::vector<Tensor> apply(const Tensor& dy) override { return {rfft_backward(dy, n, L)}; }
};

struct IrfftNode : Node {
  int64_t n, m;
  const char* name() const override { return "irfft"; }
  std::vector<Tensor> apply(const Tensor& dy) override { return {irfft_backward(dy, n, m)}; }
};

// forward y = causal_conv(a, b); backward on reversed rows (header)
struct CausalConvNode : Node {
  Tensor a, b;
  const char* name() const override { return "causal_conv"; }
  void release() override { a = b = Tensor(); }
  std::vector<Tensor> apply(const Tensor& dy) override {
    Tensor r = flip(dy, {-1});
    return {needs_grad(0) ? flip(causal_conv(r, b), {-1}) : Tensor(), needs_grad(1) ? flip(causal_conv(r, a), {-1}) : Tensor()};
  }
};

}  // namespace

Var causal_conv(const Var& a, const Var& b) {
  Tensor y = causal_conv(a.data(), b.data());
  if (!any_requires_grad({a, b})) return Var(y);
  auto node = std::make_shared<CausalConvNode>();
  node->a = a.data(), node->b = b.data();
  return record(node, y, {a, b});
}

Var rfft(const Var& x, int64_t n) {
  if (n < 0 && x.dim() > 0) n = x.size(-1);
  Tensor y = rfft(x.data(), n);
  if (!any_requires_grad({x})) return Var(y);
  auto node = std::make_shared<RfftNode>();
  node->n = n;
  node->L = x.size(-1);
  return record(node, y, {x});
}

Var irfft(const Var& X, int64_t n) {
  if (n < 0 && X.dim() >= 2) n = 2 * (X.size(-2) - 1);
  Tensor y = irfft(X.data(), n);
  if (!any_requires_grad({X})) return Var(y);
  auto node = std::make_shared<IrfftNode>();
  node->n = n;
  node->m = X.size(-2);
  return record(node, y, {X});
}

CVar as_complex(const Var& x) {
  if (x.dim() < 1 || x.size(-1) != 2) fail("as_complex: expected a trailing (re, im) dim of size 2, got " + shape_str(x.shape()));
  return {select(x, -1, 0), select(x, -1, 1)};
}
Var as_real(const CVar& z) { return stack({z.re, z.im}, -1); }

CVar cadd(const CVar& a, const CVar& b) { return {a.re + b.re, a.im + b.im}; }
CVar csub(const CVar& a, const CVar& b) { return {a.re - b.re, a.im - b.im}; }
CVar cmul(const CVar& a, const CVar& b) { return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }
CVar cexp(const CVar& z) {
  Var e = exp(z.re);
  return {e * cos(z.im), e * sin(z.im)};
}
CVar creciprocal(const CVar& z) {
  Var inv = pow(z.re * z.re + z.im * z.im, -1.0);  // 1 / |z|^2
  return {z.re * inv, neg(z.im) * inv};
}
CVar cdiv(const CVar& a, const CVar& b) { return cmul(a, creciprocal(b)); }
CVar cscale(const CVar& z, const Var& s) { return {z.re * s, z.im * s}; }

Var fft_conv(const Var& u, const Var& k, int64_t L) {
  if (u.dim() < 1 || k.dim() < 1 || u.size(-1) != L || k.size(-1) != L)
    fail("fft_conv: u " + shape_str(u.shape()) + " and k " + shape_str(k.shape()) + " must both end in L = " + std::to_string(L));
  if (u.data().device() != Device::cpu) {  // the device seam: one primitive on the backend's fft_conv
    Shape s = broadcast_shapes(u.shape(), k.shape(), "fft_conv");
    return causal_conv(expand(u, s), expand(k, s));
  }
  int64_t n = 2 * L;
  CVar U = as_complex(rfft(u, n)), K = as_complex(rfft(k, n));  // (..., L+1)
  Var y = irfft(as_real(cmul(U, K)), n);                        // (..., 2L): linear convolution, no wrap-around
  return narrow(y, -1, 0, L);
}

}  // namespace dl
