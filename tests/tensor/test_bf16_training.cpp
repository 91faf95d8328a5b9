// tests/tensor/test_bf16_training.cpp - learning under Precision::bf16: a small MLP (16 -> 64 -> 8, ReLU) learns a
// random linear teacher's labels (argmax of x W, W (16, 8)) with Adam, and must reach 90% held-out accuracy within
// 200 steps - in bf16 and in its float32 twin, and the two end within 3 points of each other. The products (forward
// and both backward products of each linear) run in bf16; the loss, its softmax, Adam and the weights stay float32.
// It can fail: with the packing broken (the two halves of each A pair swapped) the bf16 run ended at 6.6%.
// Skips where this CPU has no bf16 arithmetic (or DL_BF16=off): the mode would then run float32.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "bf16_kernels.h"  // PrecisionScope
#include "autograd/ops.h"
#include "nn/layers.h"
#include "optim/adam.h"
#include "tensor/bf16.h"

using namespace dl;

namespace {

constexpr int64_t kIn = 16, kClasses = 8, kTrain = 4096, kTest = 1024, kBatch = 128;

struct Data {
  Tensor x, y;  // (n, kIn) f32, (n) i64
};

// The teacher: y = argmax(x W), W (kIn, kClasses) standard normal: 8 regions split by hyperplanes through 0.
Data teacher_data(int64_t n, Generator& g, const std::vector<double>& w) {
  Tensor x = randn({n, kIn}, g);
  std::vector<int64_t> y(n);
  const float* px = x.data<float>();
  for (int64_t r = 0; r < n; r++) {
    double best = -1e300;
    for (int c = 0; c < kClasses; c++) {
      double s = 0;
      for (int k = 0; k < kIn; k++) s += px[r * kIn + k] * w[k * kClasses + c];
      if (s > best) best = s, y[r] = c;
    }
  }
  return {x, from_vector(y, {n})};
}

// Trains the student for `steps` Adam steps in the given precision; returns the held-out accuracy.
double train(Precision p, int steps) {
  Generator g(11);
  std::vector<double> w(kIn * kClasses);
  for (double& v : w) v = g.normal();
  Data tr = teacher_data(kTrain, g, w), te = teacher_data(kTest, g, w);
  nn::Linear l1(kIn, 64, g), l2(64, kClasses, g);
  optim::AdamOptions o;
  o.lr = 1e-2;
  optim::Adam opt(std::vector<Var>{l1.weight, l1.bias, l2.weight, l2.bias}, o);
  const test::PrecisionScope precision(p);
  for (int s = 0; s < steps; s++) {
    const int64_t r0 = s * kBatch % kTrain;
    Var x(tr.x.narrow(0, r0, kBatch));  // (kBatch, kIn)
    Var loss = cross_entropy(l2.forward(relu(l1.forward(x))), tr.y.narrow(0, r0, kBatch));
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
  Tensor logits = l2.forward(relu(l1.forward(Var(te.x)))).data();  // (kTest, kClasses)
  const float* pl = logits.data<float>();
  const int64_t* py = te.y.data<int64_t>();
  int64_t right = 0;
  for (int64_t r = 0; r < kTest; r++) {
    int64_t arg = 0;
    for (int64_t c = 1; c < kClasses; c++)
      if (pl[r * kClasses + c] > pl[r * kClasses + arg]) arg = c;
    right += arg == py[r];
  }
  return (double)right / kTest;
}

}  // namespace

TEST(Bf16Training, MlpLearnsTeacherInBf16AndFp32) {
  if (!bf16_gemm_usable()) GTEST_SKIP() << "the bf16 mode would run float32 here: " << cpu_info().name();
  const int steps = 200;  // both reach ~94.5% (chance: 12.5%); 100 steps give ~93.5%
  const double acc32 = train(Precision::fp32, steps), acc16 = train(Precision::bf16, steps);
  EXPECT_GE(acc32, 0.90) << "float32 twin";
  EXPECT_GE(acc16, 0.90) << "bf16";
  EXPECT_NEAR(acc16, acc32, 0.03) << "bf16 " << acc16 << " vs float32 " << acc32;
  std::printf("held-out accuracy after %d steps: float32 %.4f, bf16 %.4f\n", steps, acc32, acc16);
}
