// tests/optim/tiny_model.h - a two-layer MLP built from autograd primitives for the optimiser and checkpoint
// tests, so they do not depend on nn/layers.h or a matmul primitive:
//   y = tanh(x W1^T + b1) W2^T + b2        x (B, I), W1 (H, I), W2 (O, H): torch.nn.Linear's layout and names
// The one missing primitive, x W^T, is a small naive Node here (test-only; the real one is tensor/linalg.h).
#pragma once
#include <cmath>

#include "autograd/ops.h"
#include "nn/init.h"
#include "nn/module.h"

namespace dl::test {

// y(B, N) = x(B, K) W(N, K)^T;  dx = dy W,  dW = dy^T x
struct TestLinearNode : Node {
  Tensor x, w;
  const char* name() const override { return "test_linear"; }
  std::vector<Tensor> apply(const Tensor& dy0) override {
    Tensor dy = dy0.contiguous();
    int64_t B = x.size(0), K = x.size(1), N = w.size(0);
    Tensor dx = zeros({B, K}), dw = zeros({N, K});
    const float *px = x.data<float>(), *pw = w.data<float>(), *pd = dy.data<float>();
    float *pdx = dx.data<float>(), *pdw = dw.data<float>();
    for (int64_t b = 0; b < B; b++)
      for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++) {
          pdx[b * K + k] += pd[b * N + n] * pw[n * K + k];
          pdw[n * K + k] += pd[b * N + n] * px[b * K + k];
        }
    return {needs_grad(0) ? dx : Tensor(), needs_grad(1) ? dw : Tensor()};
  }
  void release() override { x = w = Tensor(); }
};

inline Var test_linear(const Var& x, const Var& w) {
  Tensor xc = x.data().contiguous(), wc = w.data().contiguous();
  int64_t B = xc.size(0), K = xc.size(1), N = wc.size(0);
  Tensor y = zeros({B, N});
  const float *px = xc.data<float>(), *pw = wc.data<float>();
  float* py = y.data<float>();
  for (int64_t b = 0; b < B; b++)
    for (int64_t n = 0; n < N; n++) {
      float acc = 0;
      for (int64_t k = 0; k < K; k++) acc += px[b * K + k] * pw[n * K + k];
      py[b * N + n] = acc;
    }
  auto node = std::make_shared<TestLinearNode>();
  node->x = xc;
  node->w = wc;
  return record(node, y, {x, w});
}

class TestLinear : public nn::Module {
 public:
  TestLinear(int64_t in, int64_t out, Generator& g) {
    weight = register_parameter("weight", nn::init::kaiming_uniform_linear({out, in}, g));
    bias = register_parameter("bias", nn::init::uniform({out}, 1.0 / std::sqrt((double)in), g));
  }
  std::string type_name() const override { return "TestLinear"; }
  Var forward(const Var& x) const { return test_linear(x, weight) + bias; }
  Var weight, bias;
};

class TinyMLP : public nn::Module {
 public:
  TinyMLP(int64_t in, int64_t hidden, int64_t out, uint64_t seed) {
    Generator g(seed);
    fc1 = register_module("fc1", std::make_shared<TestLinear>(in, hidden, g));
    fc2 = register_module("fc2", std::make_shared<TestLinear>(hidden, out, g));
    register_buffer("num_batches", zeros({1}));  // a buffer, to check buffers travel in checkpoints too
  }
  std::string type_name() const override { return "TinyMLP"; }
  Var forward(const Var& x) { return fc2->forward(tanh(fc1->forward(x))); }
  Tensor& num_batches() { return buffer("num_batches"); }
  std::shared_ptr<TestLinear> fc1, fc2;
};

}  // namespace dl::test
