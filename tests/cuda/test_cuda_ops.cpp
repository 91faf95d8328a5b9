// tests/cuda/test_cuda_ops.cpp - the Thrust-based device ops (cuda/ops/) through tensor/'s dispatch agree
// with the CPU: strided copies, broadcasting binary ops, unary ops and their derivatives, reductions over
// any dims, sum_to, softmax over any dim, layer_norm, cross-entropy, embedding, dropout, the Adam step,
// to(dtype), where and masked_fill.
//
// Each test runs the tensor/ op on CUDA tensors (views included: transposed, narrowed, expanded) and the
// same op on the CPU copies, and compares with the tolerance policy. tests/cuda_logic runs the same
// functors on the CPU on every machine; this file checks the GPU compile, launch and memory. Every test
// skips with "no CUDA device" without one.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "op_harness.h"
#include "cuda_test_util.h"
#include "tensor/backend.h"
#include "tensor/ops.h"
#include "tolerance.h"

namespace dl {
namespace {

using test::all_close;
using test::Tol;

using test::cuda_ready;


Tensor dev(const Tensor& t) { return t.to(Device::cuda); }
Tensor host(const Tensor& t) { return t.to(Device::cpu); }
Tol agree(DType t) { return t == DType::f64 ? test::kAgreeF64 : test::kAgreeF32; }
const Tol kExact{0, 0};

TEST(CudaOps, ContiguousOfViews) {
  SKIP_WITHOUT_CUDA();
  Generator g(21);
  for (DType t : {DType::f32, DType::f64}) {
    Tensor x = randn({6, 7, 129}, g, t), dx = dev(x);
    EXPECT_TRUE(all_close(host(dx.permute({2, 0, 1}).contiguous()), x.permute({2, 0, 1}), kExact, "permuted"));
    EXPECT_TRUE(all_close(host(dx.narrow(2, 3, 100).contiguous()), x.narrow(2, 3, 100), kExact, "narrowed"));
    EXPECT_TRUE(all_close(host(dx.narrow(1, 2, 1).expand({6, 5, 129}).contiguous()), x.narrow(1, 2, 1).expand({6, 5, 129}), kExact,
                          "expanded"));
    Tensor buf = zeros({129, 7, 6}, t, Device::cuda);
    buf.permute({2, 1, 0}).copy_(dx);  // copy into a view
    EXPECT_TRUE(all_close(host(buf), x.permute({2, 1, 0}), kExact, "copy into a view"));
  }
}

TEST(CudaOps, CastAndWhere) {
  SKIP_WITHOUT_CUDA();
  Generator g(27);
  Tensor x = mul_scalar(randn({33, 70}, g), 5.0).transpose(0, 1);
  for (DType to : {DType::f32, DType::f64, DType::i64})
    EXPECT_TRUE(all_close(host(dev(x).to(to)), x.to(to), kExact, std::string("to ") + dtype_name(to)));
  Tensor cond = randint(0, 2, {70, 1}, g), a = randn({70, 33}, g), b = randn({33}, g);
  EXPECT_TRUE(all_close(host(where(dev(cond), dev(a), dev(b))), where(cond, a, b), kExact, "where"));
  EXPECT_TRUE(all_close(host(masked_fill(dev(a), dev(cond), -1e9)), masked_fill(a, cond, -1e9), kExact, "masked_fill"));
  Tensor into = zeros({70, 33}, DType::f64, Device::cuda);
  into.copy_(dev(x));  // copy_ converts the dtype, as on the CPU
  EXPECT_TRUE(all_close(host(into), x.to(DType::f64), kExact, "copy_ f32 into f64"));
}

TEST(CudaOps, BinaryBroadcastingEveryOp) {
  SKIP_WITHOUT_CUDA();
  Generator g(22);
  using F = Tensor (*)(const Tensor&, const Tensor&);
  std::vector<std::pair<const char*, F>> fs = {{"add", add}, {"sub", sub}, {"mul", mul}, {"div", div}, {"pow", pow},
                                               {"maximum", maximum}, {"minimum", minimum}, {"eq", eq}, {"ne", ne},
                                               {"lt", lt}, {"le", le}, {"gt", gt}, {"ge", ge}};
  for (DType t : {DType::f32, DType::f64}) {
    Tensor a = add_scalar(abs(randn({4, 1, 300}, g, t)), 0.5), b = randn({5, 300}, g, t).transpose(0, 1).transpose(0, 1);
    Tensor at = randn({300, 5}, g, t).transpose(0, 1);  // a transposed operand
    for (auto [name, f] : fs) {
      EXPECT_TRUE(all_close(host(f(dev(a), dev(b))), f(a, b), agree(t), std::string(name) + " broadcast " + dtype_name(t)));
      EXPECT_TRUE(all_close(host(f(dev(at), dev(b))), f(at, b), agree(t), std::string(name) + " transposed " + dtype_name(t)));
    }
    EXPECT_TRUE(all_close(host(mul_scalar(dev(a), 0.3)), mul_scalar(a, 0.3), agree(t), "mul_scalar"));
    EXPECT_TRUE(all_close(host(clamp(dev(b), -0.5, 0.5)), clamp(b, -0.5, 0.5), agree(t), "clamp"));
  }
}

TEST(CudaOps, UnaryAndBackwardOnViews) {
  SKIP_WITHOUT_CUDA();
  Generator g(23);
  for (UnaryOp op : {UnaryOp::neg, UnaryOp::exp, UnaryOp::log, UnaryOp::sqrt, UnaryOp::rsqrt, UnaryOp::abs, UnaryOp::tanh,
                     UnaryOp::sigmoid, UnaryOp::relu, UnaryOp::gelu_erf, UnaryOp::gelu_tanh, UnaryOp::silu, UnaryOp::softplus})
    for (DType t : {DType::f32, DType::f64}) {
      bool pos = op == UnaryOp::log || op == UnaryOp::sqrt || op == UnaryOp::rsqrt;
      Tensor x = (pos ? uniform({257, 33}, 0.1, 3.0, g, t) : mul_scalar(randn({257, 33}, g, t), 3.0)).transpose(0, 1);
      Tensor y = unary(op, x), dy = randn({33, 257}, g, t);
      std::string what = "unary op " + std::to_string((int)op) + " " + dtype_name(t);
      EXPECT_TRUE(all_close(host(unary(op, dev(x))), y, agree(t), what));
      EXPECT_TRUE(all_close(host(unary_backward(op, dev(x), dev(y), dev(dy))), unary_backward(op, x, y, dy), agree(t), what + " backward"));
    }
}

TEST(CudaOps, ReductionsAndSumTo) {
  SKIP_WITHOUT_CUDA();
  Generator g(24);
  for (DType t : {DType::f32, DType::f64}) {
    Tensor x = randn({9, 130, 7}, g, t).permute({1, 0, 2}), dx = dev(x);  // (130, 9, 7), non-contiguous
    for (Dims dims : std::vector<Dims>{{}, {0}, {1}, {2}, {0, 2}, {-1, 0}})
      for (bool keep : {false, true}) {
        std::string what = std::string(dtype_name(t)) + " dims " + std::to_string(dims.size()) + (keep ? " keepdim" : "");
        EXPECT_TRUE(all_close(host(sum(dx, dims, keep)), sum(x, dims, keep), agree(t), "sum " + what));
        EXPECT_TRUE(all_close(host(mean(dx, dims, keep)), mean(x, dims, keep), agree(t), "mean " + what));
        EXPECT_TRUE(all_close(host(logsumexp(dx, dims, keep)), logsumexp(x, dims, keep), agree(t), "logsumexp " + what));
        EXPECT_TRUE(all_close(host(amax(dx, dims, keep)), amax(x, dims, keep), kExact, "amax " + what));
      }
    for (int64_t d : {0, 1, 2}) {
      EXPECT_TRUE(all_close(host(argmax(dx, d)), argmax(x, d), kExact, "argmax"));
      EXPECT_TRUE(all_close(host(min(dx, d).values), min(x, d).values, kExact, "min"));
    }
    Tensor gr = randn({4, 5, 6}, g, t);
    for (Shape s : {Shape{5, 1}, Shape{1, 6}, Shape{}, Shape{4, 1, 1}})
      EXPECT_TRUE(all_close(host(sum_to(dev(gr), s)), sum_to(gr, s), agree(t), "sum_to " + shape_str(s)));
  }
}

TEST(CudaOps, SoftmaxLayerNormCrossEntropy) {
  SKIP_WITHOUT_CUDA();
  Generator g(25);
  for (DType t : {DType::f32, DType::f64}) {
    Tensor x = mul_scalar(randn({8, 33, 65}, g, t), 3.0), dy = randn({8, 33, 65}, g, t);
    for (int64_t d : {0, 1, 2}) {
      Tensor y = softmax(x, d), ly = log_softmax(x, d);
      EXPECT_TRUE(all_close(host(softmax(dev(x), d)), y, agree(t), "softmax"));
      EXPECT_TRUE(all_close(host(log_softmax(dev(x), d)), ly, agree(t), "log_softmax"));
      EXPECT_TRUE(all_close(host(softmax_backward(dev(y), dev(dy), d)), softmax_backward(y, dy, d), agree(t), "softmax backward"));
      EXPECT_TRUE(all_close(host(log_softmax_backward(dev(ly), dev(dy), d)), log_softmax_backward(ly, dy, d), agree(t),
                            "log_softmax backward"));
    }
    Tensor w = randn({65}, g, t), b = randn({65}, g, t);
    NormOut n = layer_norm(x, w, b, 1e-5), dn = layer_norm(dev(x), dev(w), dev(b), 1e-5);
    EXPECT_TRUE(all_close(host(dn.y), n.y, agree(t), "layer_norm"));
    NormGrads ng = layer_norm_backward(dy, x, n.mean, n.rstd, w, true, true, true);
    NormGrads dg = layer_norm_backward(dev(dy), dev(x), dn.mean, dn.rstd, dev(w), true, true, true);
    EXPECT_TRUE(all_close(host(dg.dx), ng.dx, agree(t), "layer_norm dx"));
    EXPECT_TRUE(all_close(host(dg.dweight), ng.dweight, agree(t), "layer_norm dweight"));
    EXPECT_TRUE(all_close(host(dg.dbias), ng.dbias, agree(t), "layer_norm dbias"));
    Tensor target = randint(0, 65, {8, 33}, g);
    target.data<int64_t>()[5] = -100;
    for (Reduction red : {Reduction::none, Reduction::mean, Reduction::sum}) {
      CrossEntropyOut c = cross_entropy(x, target, -100, 0.1, red), dc = cross_entropy(dev(x), dev(target), -100, 0.1, red);
      EXPECT_EQ(dc.count, c.count);
      EXPECT_TRUE(all_close(host(dc.loss), c.loss, agree(t), std::string("cross_entropy ") + reduction_name(red)));
      Tensor gy = red == Reduction::none ? randn({8, 33}, g, t) : scalar_tensor(0.5, t);
      EXPECT_TRUE(all_close(host(cross_entropy_backward(dev(gy), dev(x), dev(target), dc.lse, -100, 0.1, red, dc.count)),
                            cross_entropy_backward(gy, x, target, c.lse, -100, 0.1, red, c.count), agree(t), "cross_entropy backward"));
    }
  }
}

TEST(CudaOps, EmbeddingDropoutAdam) {
  SKIP_WITHOUT_CUDA();
  Generator g(26);
  Tensor w = randn({1000, 64}, g), idx = randint(0, 1000, {16, 50}, g), dy = randn({16, 50, 64}, g);
  EXPECT_TRUE(all_close(host(embedding(dev(w), dev(idx))), embedding(w, idx), kExact, "embedding"));
  EXPECT_TRUE(all_close(host(embedding_backward(dev(dy), dev(idx), 1000)), embedding_backward(dy, idx, 1000), kExact,
                        "embedding_backward"));
  Tensor sel = randint(0, 1000, {37}, g);
  EXPECT_TRUE(all_close(host(index_select(dev(w), 0, dev(sel))), index_select(w, 0, sel), kExact, "index_select dim 0"));
  Tensor sel1 = randint(0, 64, {9}, g);
  EXPECT_TRUE(all_close(host(index_select(dev(w), 1, dev(sel1))), index_select(w, 1, sel1), kExact, "index_select dim 1"));
  Backend& b = *device_backend(Device::cuda);
  Generator g1(7), g2(7);
  Tensor want = dropout_mask({100003}, 0.3, g1), got = Tensor::empty({100003}, DType::f32, Device::cuda);
  b.dropout_mask(g2.next_u64(), 0.3, got);
  EXPECT_TRUE(all_close(host(got), want, kExact, "dropout mask"));
  Tensor p = randn({4097}, g), grad = randn({4097}, g), m = zeros({4097}), v = zeros({4097});
  Tensor dp = dev(p), dgr = dev(grad), dm = dev(m), dv = dev(v);
  AdamScalars s{0.9, 0.999, 1e-8, 0.01, 1e-3 / (1 - 0.9), std::sqrt(1 - 0.999), 1 - 1e-3 * 0.01, true};
  b.adam_step(s, dp, dgr, dm, dv);
  // the CPU twin of the fused step, written out (optim/adam.cpp's loop)
  for (int64_t i = 0; i < 4097; i++) {
    float* pp = p.data<float>();
    float gi = grad.data<float>()[i], mi = 0.1f * gi, vi = 0.001f * gi * gi;
    pp[i] *= (float)s.shrink;
    pp[i] -= (float)s.step_size * (mi / (std::sqrt(vi) / (float)s.bc2_sqrt + (float)s.eps));
  }
  EXPECT_TRUE(all_close(host(dp), p, agree(DType::f32), "adam_step"));
  EXPECT_NEAR(b.sum_sq(dgr), sum(mul(grad, grad)).item(), 1e-3);
}

}  // namespace
}  // namespace dl
