// tests/cuda/test_cuda_train.cpp - on a GPU: the ops added for a training step on the device (issue 16 phase 2) agree
// with the CPU, and one full training step of a tiny Transformer and a tiny S4D on the device equals the CPU's (the
// loss, the gradient norm, every parameter after clipping and AdamW; tests/cuda/train_step.h), and of a tiny LSTM.
//
// The same checks run on every machine against the host twin of the backend (tests/cuda_logic/test_device_paths.cpp),
// so a failure here and not there is the GPU side: nvcc, a launch, device memory, cuBLAS or cuFFT. Skips with "no
// CUDA device" without one.
#include <gtest/gtest.h>

#include "autograd/conv.h"
#include "cuda_test_util.h"
#include "op_harness.h"
#include "optim/adam.h"
#include "optim/clip.h"
#include "tensor/ops.h"
#include "tolerance.h"
#include "train_step.h"

namespace dl {
namespace {

using test::all_close;

Tensor dev(const Tensor& t) { return t.to(Device::cuda); }
Tensor host(const Tensor& t) { return t.to(Device::cpu); }
const test::Tol kExact{0, 0};

TEST(CudaTrain, ElementwiseAndReductionsOfPhase2) {
  SKIP_WITHOUT_CUDA();
  Generator g(41);
  Tensor x = mul_scalar(randn({65, 33, 7}, g), 3.0), xt = dev(x).transpose(0, 2);
  Tensor ref = x.transpose(0, 2);
  EXPECT_TRUE(all_close(host(sin(xt)), sin(ref), test::kAgreeF32, "sin"));  // sinf on the GPU vs the CPU's libm
  EXPECT_TRUE(all_close(host(cos(xt)), cos(ref), test::kAgreeF32, "cos"));
  EXPECT_TRUE(all_close(host(sign(xt)), sign(ref), kExact, "sign"));
  EXPECT_TRUE(all_close(host(elu(xt, 0.7)), elu(ref, 0.7), test::kAgreeF32, "elu"));
  for (bool unbiased : {false, true})
    EXPECT_TRUE(all_close(host(var(dev(x), {0, 2}, unbiased)), var(x, {0, 2}, unbiased), test::kAgreeF32, "var"));
  EXPECT_TRUE(all_close(host(cumsum(dev(x), 1)), cumsum(x, 1), kExact, "cumsum"));
  EXPECT_TRUE(all_close(host(flip(dev(x), {1})), flip(x, {1}), kExact, "flip"));
}

TEST(CudaTrain, GatherScatterIndexAddOneHot) {
  SKIP_WITHOUT_CUDA();
  Generator g(42);
  Tensor x = randn({40, 50}, g), idx = randint(0, 50, {40, 70}, g), src = randn({40, 70}, g);
  EXPECT_TRUE(all_close(host(gather(dev(x), 1, dev(idx))), gather(x, 1, idx), kExact, "gather"));
  EXPECT_TRUE(all_close(host(scatter_add(dev(x), 1, dev(idx), dev(src))), scatter_add(x, 1, idx, src), kExact, "scatter_add"));
  Tensor rows = randint(0, 40, {300}, g), add_src = randn({300, 50}, g), out = x.clone(), outd = dev(x);
  index_add_(out, 0, rows, add_src);
  index_add_(outd, 0, dev(rows), dev(add_src));
  EXPECT_TRUE(all_close(host(outd), out, kExact, "index_add_"));
  EXPECT_TRUE(all_close(host(one_hot(dev(rows), 40)), one_hot(rows, 40), kExact, "one_hot"));
}

// cuFFT's padded product (the backend's fft_conv) against the CPU's FFTW, forward and adjoint.
TEST(CudaTrain, CausalConvAndItsAdjoint) {
  SKIP_WITHOUT_CUDA();
  Generator g(43);
  Tensor a = randn({4, 16, 200}, g), b = randn({4, 16, 200}, g), dy = randn({4, 16, 200}, g);
  Var va(a, true), vb(b, true), da(dev(a), true), db(dev(b), true);
  Var yc = fft_conv(va, vb, 200), yd = causal_conv(da, db);  // the CPU reference: the rfft composition
  EXPECT_TRUE(all_close(host(yd.data()), yc.data(), test::kFixtureLong, "causal_conv"));
  yc.backward(dy);
  yd.backward(dev(dy));
  EXPECT_TRUE(all_close(host(da.grad()), va.grad(), test::kFixtureLong, "d a"));
  EXPECT_TRUE(all_close(host(db.grad()), vb.grad(), test::kFixtureLong, "d b"));
}

// conv1d on the device (tensor/conv.cpp's depthwise composition of device ops) against the CPU kernel: a causal
// dilated depthwise convolution with a channel multiplier, the input a transposed view, forward and every gradient.
TEST(CudaTrain, DepthwiseConv1dAndItsGradients) {
  SKIP_WITHOUT_CUDA();
  Generator g(44);
  Conv1dParams p;
  p.pad_left = 6, p.dilation = 3, p.groups = 32;
  Tensor x = randn({4, 300, 32}, g), w = randn({64, 1, 3}, g), b = randn({64}, g);
  Var xc(x, true), wc(w, true), bc(b, true), xd(dev(x), true), wd(dev(w), true), bd(dev(b), true);
  Var yc = conv1d(transpose(xc, 1, 2), wc, bc, p), yd = conv1d(transpose(xd, 1, 2), wd, bd, p);
  EXPECT_TRUE(all_close(host(yd.data()), yc.data(), test::kAgreeF32, "conv1d"));
  Tensor dy = randn(yc.shape(), g);
  yc.backward(dy);
  yd.backward(dev(dy));
  EXPECT_TRUE(all_close(host(xd.grad()), xc.grad(), test::kAgreeF32, "conv1d dx"));
  EXPECT_TRUE(all_close(host(wd.grad()), wc.grad(), test::kFixtureLong, "conv1d dw"));  // sums of 1200 products
  EXPECT_TRUE(all_close(host(bd.grad()), bc.grad(), test::kFixtureLong, "conv1d db"));
}

void expect_step_agrees(const std::string& layer) {
  test::StepResult cpu = test::train_one_step(layer, Device::cpu), gpu = test::train_one_step(layer, Device::cuda);
  EXPECT_NEAR(gpu.loss, cpu.loss, 1e-5 * (1 + std::abs(cpu.loss))) << layer << ": loss";
  EXPECT_NEAR(gpu.grad_norm, cpu.grad_norm, 1e-4 * (1 + cpu.grad_norm)) << layer << ": gradient norm";
  ASSERT_EQ(gpu.params.size(), cpu.params.size());
  for (auto& [name, t] : cpu.params) EXPECT_TRUE(all_close(gpu.params.at(name), t, test::kAgreeF32, layer + " " + name));
}

TEST(CudaTrain, TransformerTrainingStepEqualsCpu) {
  SKIP_WITHOUT_CUDA();
  expect_step_agrees("attention");
}

TEST(CudaTrain, TransformerOnTheFlashPrimitiveEqualsCpu) {  // the CPU's packed kernel vs the device's flash kernel
  SKIP_WITHOUT_CUDA();
  expect_step_agrees("attention_packed");
}

TEST(CudaTrain, S4DTrainingStepEqualsCpu) {
  SKIP_WITHOUT_CUDA();
  expect_step_agrees("s4d");
}

TEST(CudaTrain, S4AndDlrTrainingStepsEqualCpu) {  // S4's DPLR spectrum and DLR's Vandermonde product on the device
  SKIP_WITHOUT_CUDA();
  for (const char* layer : {"s4", "dlr"}) expect_step_agrees(layer);
}

TEST(CudaTrain, LstmTrainingStepEqualsCpu) {
  SKIP_WITHOUT_CUDA();
  expect_step_agrees("lstm");
}

TEST(CudaTrain, ConvolutionTrainingStepsEqualCpu) {  // pretrained_convs' mixers
  SKIP_WITHOUT_CUDA();
  for (const char* layer : {"lightconv", "dynamicconv", "dilatedconv"}) expect_step_agrees(layer);
}

}  // namespace
}  // namespace dl
