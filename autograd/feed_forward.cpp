// autograd/feed_forward.cpp - the feed-forward block as one node under the bf16 products (what and why in the header).
#include "autograd/feed_forward.h"

#include <omp.h>

#include "autograd/elementwise.h"  // gelu
#include "autograd/linalg.h"       // linear
#include "autograd/nn_ops.h"       // dropout
#include "tensor/bf16_gemm.h"
#include "tensor/linalg.h"      // linear_keeping_bf16_input
#include "tensor/nn_kernels.h"  // gelu_erf_with_grad, dropout_keep_bits, apply_dropout_bits_block

namespace dl {

namespace {

struct FeedForwardBf16Node : Node {
  Bf16PackedB xb;         // x's across-row words (dw1's B), as the linear node keeps them
  Shape x_shape;
  Tensor gp, w1, w2;      // gelu'(h) (R, H), h = x w1^T + b1: the forward writes it over h
  Bf16PackedB db;         // d's across-row words (dw2's B)
  std::vector<uint64_t> bits;  // the dropout's keep bits over h's elements; empty: no dropout
  double p = 0;
  const char* name() const override { return "feed_forward"; }
  std::vector<Tensor> apply(const Tensor& dy) override {
    if (!gp.defined()) fail("feed_forward: backward called twice without retain_graph");
    const int64_t H = w1.size(0), C = w1.size(1), O = w2.size(0), R = gp.size(0);
    const int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
    const Tensor dyc = dy.to(DType::f32).contiguous(), w1c = w1.contiguous(), w2c = w2.contiguous();
    Tensor db2 = needs_grad(4) ? Tensor::empty({O}) : Tensor();
    const Bf16PackedBoth dyb = bf16_pack_both(dyc.data<float>(), O, R, O, nt, db2.defined() ? db2.data<float>() : nullptr);
    Tensor dw2 = Tensor::empty({O, H});  // dw2 = dy^T d
    bf16_gemm(true, dyb, db, dw2.data<float>(), H, nt);
    Tensor dd = Tensor::empty({R, H});  // dd = dy w2
    bf16_gemm(false, dyb, false, H, w2c.data<float>(), H, dd.data<float>(), H, nt);
    // dh = (dd m) gelu'(h): the dropout's backward, then GELU's, each as its op computes it
    const float *pd = dd.data<float>(), *pg = gp.data<float>();
    auto rows = [&](int64_t r0, int64_t n, float* buf) {
      const float *dr = pd + r0 * H, *gr = pg + r0 * H;
      if (!bits.empty()) apply_dropout_bits_block(dr, buf, bits.data(), r0 * H, n * H, p), dr = buf;
#pragma omp simd
      for (int64_t i = 0; i < n * H; i++) buf[i] = dr[i] * gr[i];
    };
    Tensor db1 = needs_grad(2) ? Tensor::empty({H}) : Tensor();
    const Bf16PackedBoth dhb = bf16_pack_both_rows(R, H, rows, nt, db1.defined() ? db1.data<float>() : nullptr);
    dd = Tensor();
    Tensor dw1 = Tensor::empty({H, C}), dx;  // dw1 = dh^T x
    bf16_gemm(true, dhb, xb, dw1.data<float>(), C, nt);
    if (needs_grad(0)) {  // dx = dh w1
      dx = Tensor::empty(x_shape);
      bf16_gemm(false, dhb, false, C, w1c.data<float>(), C, dx.data<float>(), C, nt);
    }
    return {dx, dw1, db1, dw2, db2};
  }
  void release() override {
    xb = db = Bf16PackedB();
    gp = w1 = w2 = Tensor();
    bits = {};
  }
};

bool is_f32_cpu(const Var& v) { return !v.defined() || (v.data().dtype() == DType::f32 && v.data().device() == Device::cpu); }

}  // namespace

Var feed_forward(const Var& x, const Var& w1, const Var& b1, const Var& w2, const Var& b2, double p, bool training, Generator& g) {
  const bool fused = any_requires_grad({x, w1, b1, w2, b2}) && w1.requires_grad() && w2.requires_grad() &&
                     linear_keeps_bf16_input(x.data()) && is_f32_cpu(w1) &&
                     is_f32_cpu(w2) && is_f32_cpu(b1) && is_f32_cpu(b2) && w1.dim() == 2 && w2.dim() == 2 &&
                     w2.size(1) == w1.size(0) && x.size(-1) == w1.size(1) && p >= 0.0 && p <= 1.0 &&
                     (!b1.defined() || b1.data().shape() == Shape{w1.size(0)}) &&
                     (!b2.defined() || b2.data().shape() == Shape{w2.size(0)});
  if (!fused)  // the four ops (they name any bad shape or p)
    return linear(dropout(gelu(linear(x, w1, b1)), p, training, g), w2, b2);
  const int64_t H = w1.size(0), O = w2.size(0);
  const int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
  auto n = std::make_shared<FeedForwardBf16Node>();
  n->gp = linear_keeping_bf16_input(x.data(), w1.data(), b1.defined() ? b1.data() : Tensor(), n->xb).reshape({-1, H});  // h
  const int64_t R = n->gp.size(0);
  if (training && p > 0) n->bits = dropout_keep_bits(R * H, p, g);  // the dropout op's draw
  n->p = p;
  float* ph = n->gp.data<float>();
  // d = dropout(gelu(h)) as the two ops compute it, and gelu'(h) written over h from the same erf (tensor/nn_kernels.h's
  // gelu_erf_with_grad, which the elementwise GELU and its backward also take), so the backward takes no exponential
  auto rows = [&](int64_t r0, int64_t m, float* buf) {
    float* hr = ph + r0 * H;
#pragma omp simd
    for (int64_t i = 0; i < m * H; i++) buf[i] = gelu_erf_with_grad(hr[i], hr[i]);
    if (!n->bits.empty()) apply_dropout_bits_block(buf, buf, n->bits.data(), r0 * H, m * H, p);
  };
  const Bf16PackedBoth d = bf16_pack_both_rows(R, H, rows, nt);
  Shape ys = x.shape();
  ys.back() = O;
  Tensor y = Tensor::empty(ys);
  const Tensor w2c = w2.data().contiguous(), b2c = b2.defined() ? b2.data().contiguous() : Tensor();
  bf16_gemm(false, d, true, O, w2c.data<float>(), H, y.data<float>(), O, nt, b2c.defined() ? b2c.data<float>() : nullptr);
  n->db = d.across;
  n->x_shape = x.shape();
  n->w1 = w1.data(), n->w2 = w2.data();
  return record(n, y, {x, w1, b1, w2, b2});
}

}  // namespace dl
