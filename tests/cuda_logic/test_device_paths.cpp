// tests/cuda_logic/test_device_paths.cpp - the device branches of tensor/, autograd/, optim/ and nn/ run, on a
// machine without a GPU, against the CPU.
//
// In this binary Device::cuda is the host twin of the backend (cuda/twin.h): device
// memory is host memory behind a poisoned pointer, and every backend method runs the same cuda/ops/ functions the
// GPU build runs, with thrust::cpp::par. So what is tested here is everything above the kernels - which branch an
// op takes, the shapes and views it hands the backend, where the optimizer keeps its state, what crosses to the host
// - and the kernels' logic; not nvcc, the launch or cuBLAS/cuFFT (tests/cuda does that on a GPU).
// Each test computes on the "device" and on the CPU from the same input and compares.
#include <gtest/gtest.h>

#include "../cuda/train_step.h"
#include "autograd/conv.h"
#include "logic_util.h"
#include "optim/adam.h"
#include "optim/clip.h"
#include "optim/sgd.h"
#include "nn/ssm/ssm_ops.h"
#include "tensor/nn_kernels.h"

namespace dl {
namespace {

TEST(DevicePaths, TheTwinIsTheDevice) {
  Backend* b = device_backend(kDev);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(b->available());
  Tensor x = on_dev(arange(6).to(DType::f32));
  EXPECT_EQ(x.device(), kDev);
  // a CPU kernel handed a device tensor fails loudly, naming the device, instead of reading device memory
  try {
    (void)x.data<float>();
    ADD_FAILURE() << "data<T>() of a device tensor should throw";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("cuda tensor [6] reached a CPU kernel"), std::string::npos) << e.what();
  }
}

TEST(DevicePaths, SinCosSignEluOnViews) {
  Generator g(31);
  Tensor x = mul_scalar(random_view({5, 4, 3}, g, DType::f32), 3.0), xd = on_dev(x.contiguous()).permute({2, 0, 1});
  Tensor xp = x.contiguous().permute({2, 0, 1});
  EXPECT_TRUE(all_close(back(sin(xd)), sin(xp), kExact, "sin"));
  EXPECT_TRUE(all_close(back(cos(xd)), cos(xp), kExact, "cos"));
  EXPECT_TRUE(all_close(back(sign(xd)), sign(xp), kExact, "sign"));
  EXPECT_TRUE(all_close(back(elu(xd, 0.5)), elu(xp, 0.5), kExact, "elu"));
  Tensor xi = randint(-3, 4, {7}, g);
  EXPECT_TRUE(all_close(back(sign(on_dev(xi))), sign(xi), kExact, "sign i64"));
}

// Sums of few outputs over many terms take the two-level path (cuda/ops/common.cuh's sum_slices: S interleaved f64
// partials, then their sum in order): a whole-tensor sum and mean, a bias-gradient-like sum over the leading dims,
// layer_norm's dweight / dbias over 4096 rows; against the CPU (another order of the same f64 sums).
TEST(DevicePaths, LongSumsInTwoLevels) {
  Generator g(37);
  Tensor x = add_scalar(randn({257, 131}, g), 0.5), xd = on_dev(x);  // 33667 terms: 1052 slices for one output
  EXPECT_TRUE(all_close(back(sum(xd)), sum(x), agree(DType::f32), "sum of everything"));
  EXPECT_TRUE(all_close(back(mean(xd)), mean(x), agree(DType::f32), "mean of everything"));
  Tensor y = randn({64, 80, 3}, g).to(DType::f64), yd = on_dev(y);  // 5120 terms for each of 3 outputs
  EXPECT_TRUE(all_close(back(sum(yd, {0, 1})), sum(y, {0, 1}), agree(DType::f64), "sum over the leading dims"));
  EXPECT_TRUE(all_close(back(sum(yd.permute({2, 0, 1}), {1, 2})), sum(y, {0, 1}), agree(DType::f64), "through a view"));
  Tensor h = randn({4096, 8}, g), w = randn({8}, g), b = randn({8}, g), dy = randn({4096, 8}, g);
  NormOut o = layer_norm(h, w, b, 1e-5);
  NormGrads gc = layer_norm_backward(dy, h, o.mean, o.rstd, w, true, true, true);
  NormOut od = layer_norm(on_dev(h), on_dev(w), on_dev(b), 1e-5);
  NormGrads gd = layer_norm_backward(on_dev(dy), on_dev(h), od.mean, od.rstd, on_dev(w), true, true, true);
  EXPECT_TRUE(all_close(back(gd.dweight), gc.dweight, test::kFixtureLong, "layer_norm dweight over 4096 rows"));
  EXPECT_TRUE(all_close(back(gd.dbias), gc.dbias, test::kFixtureLong, "layer_norm dbias over 4096 rows"));
  EXPECT_TRUE(all_close(back(gd.dx), gc.dx, agree(DType::f32), "layer_norm dx"));
}

TEST(DevicePaths, VarCumsumFlip) {
  Generator g(32);
  Tensor x = add_scalar(randn({4, 5, 6}, g), 3.0), xd = on_dev(x);
  for (bool unbiased : {false, true}) {
    EXPECT_TRUE(all_close(back(var(xd, {1}, unbiased, true)), var(x, {1}, unbiased, true), agree(DType::f32), "var dim 1"));
    EXPECT_TRUE(all_close(back(var(xd, {0, 2}, unbiased)), var(x, {0, 2}, unbiased), agree(DType::f32), "var dims 0, 2"));
  }
  EXPECT_TRUE(all_close(back(cumsum(xd, 1)), cumsum(x, 1), kExact, "cumsum"));
  EXPECT_TRUE(all_close(back(cumsum(xd.transpose(0, 2), 0, true)), cumsum(x.transpose(0, 2), 0, true), kExact, "cumsum rev"));
  EXPECT_TRUE(all_close(back(flip(xd, {0, 2})), flip(x, {0, 2}), kExact, "flip"));
}

TEST(DevicePaths, GatherScatterIndexAddOneHotWithHostIndices) {
  Generator g(33);
  Tensor x = randn({5, 6}, g), xd = on_dev(x);
  Tensor idx = randint(0, 6, {5, 4}, g);  // on the host: the device seams move it
  EXPECT_TRUE(all_close(back(gather(xd, 1, idx)), gather(x, 1, idx), kExact, "gather"));
  EXPECT_TRUE(all_close(back(gather(xd, 1, on_dev(idx))), gather(x, 1, idx), kExact, "gather, device index"));
  Tensor src = randn({5, 4}, g);
  EXPECT_TRUE(all_close(back(scatter_add(xd, 1, idx, on_dev(src))), scatter_add(x, 1, idx, src), kExact, "scatter_add"));
  Tensor rows = randint(0, 5, {9}, g), add_src = randn({9, 6}, g);
  Tensor out = x.clone(), outd = on_dev(x);
  index_add_(out, 0, rows, add_src);
  index_add_(outd, 0, rows, on_dev(add_src));
  EXPECT_TRUE(all_close(back(outd), out, kExact, "index_add_"));
  EXPECT_TRUE(all_close(back(one_hot(on_dev(rows), 5)), one_hot(rows, 5), kExact, "one_hot"));
  EXPECT_TRUE(all_close(back(index_select(xd, 1, rows.narrow(0, 0, 3))), index_select(x, 1, rows.narrow(0, 0, 3)), kExact,
                        "index_select, host index"));
  // an index out of range is named, from the host copy, before any kernel runs
  EXPECT_THROW(gather(xd, 1, add_scalar(idx, 6)), ShapeError);
}

// The dropout node keeps its mask on the device, drawn from the same one u64 as the CPU's bits: same y, same dx.
TEST(DevicePaths, DropoutMaskOnTheDeviceEqualsTheCpus) {
  Generator g(34);
  Tensor x = randn({3, 4100}, g);  // crosses a 4096-element draw row
  Generator ga(99), gb(99);
  Var a(x, true), b(on_dev(x), true);
  Var ya = dropout(a, 0.3, true, ga), yb = dropout(b, 0.3, true, gb);
  EXPECT_TRUE(all_close(back(yb.data()), ya.data(), kExact, "dropout forward"));
  Tensor dy = randn({3, 4100}, g);
  ya.backward(dy);
  yb.backward(on_dev(dy));
  EXPECT_TRUE(all_close(back(b.grad()), a.grad(), kExact, "dropout backward"));
  EXPECT_EQ(ga.next_u64(), gb.next_u64()) << "both drew the same number of values";
}

// A checkpoint loaded into a model on the device: copy_ across devices, both ways.
TEST(DevicePaths, CopyAcrossDevices) {
  Generator g(35);
  Tensor x = randn({4, 3}, g), d = zeros({3, 4}, DType::f32, kDev);
  d.copy_(x.transpose(0, 1));
  EXPECT_TRUE(all_close(back(d), x.transpose(0, 1).contiguous(), kExact, "host -> device view"));
  Tensor h = zeros({3, 4});
  h.copy_(d);
  EXPECT_TRUE(all_close(h, x.transpose(0, 1).contiguous(), kExact, "device -> host"));
}

// Adam / AdamW on device parameters: the moments live there, three steps equal the CPU's, clip_grad_norm's norms
// (2, 1, inf) equal the CPU's, and the saved state is on the host and loads back onto the device.
TEST(DevicePaths, AdamWAndClippingOnTheDevice) {
  Generator g(36);
  Tensor w0 = randn({5, 7}, g), b0 = randn({7}, g);
  Var wc(w0.clone(), true), bc(b0.clone(), true), wd(on_dev(w0), true), bd(on_dev(b0), true);
  optim::AdamWOptions o;
  o.lr = 0.05, o.weight_decay = 0.1;
  optim::AdamW oc({wc, bc}, o), od({wd, bd}, o);
  for (int step = 0; step < 3; step++) {
    Tensor gw = randn({5, 7}, g), gb = randn({7}, g);
    wc.mutable_grad() = gw, bc.mutable_grad() = gb;
    wd.mutable_grad() = on_dev(gw), bd.mutable_grad() = on_dev(gb);
    for (double q : {2.0, 1.0, (double)INFINITY})
      EXPECT_NEAR(optim::grad_norm({wd, bd}, q), optim::grad_norm({wc, bc}, q), 1e-9) << "norm " << q;
    EXPECT_NEAR(optim::clip_grad_norm({wd, bd}, 1.0), optim::clip_grad_norm({wc, bc}, 1.0), 1e-9);
    oc.step(), od.step();
    EXPECT_TRUE(all_close(back(wd.data()), wc.data(), agree(DType::f32), "AdamW weight step " + std::to_string(step)));
    EXPECT_TRUE(all_close(back(bd.data()), bc.data(), agree(DType::f32), "AdamW bias step " + std::to_string(step)));
  }
  optim::OptimizerState st = od.state_dict();
  for (auto& [name, t] : st.tensors) EXPECT_EQ(t.device(), Device::cpu) << name << ": the saved state is a host copy";
  optim::OptimizerState sc = oc.state_dict();
  for (auto& [name, t] : sc.tensors) EXPECT_TRUE(all_close(st.tensors.at(name), t, agree(DType::f32), name));
  optim::AdamW od2({wd, bd}, o);
  od2.load_state_dict(st);
  Tensor gw = randn({5, 7}, g);
  wd.mutable_grad() = on_dev(gw), bd.zero_grad();
  od2.step();  // would throw (a host buffer in a device update) if the loaded moments had stayed on the host
  EXPECT_EQ(wd.data().device(), kDev);
}

TEST(DevicePaths, SgdRefusesDeviceParametersByName) {
  Var w(zeros({2}, DType::f32, kDev), true);
  w.mutable_grad() = ones({2}, DType::f32, kDev);
  optim::SGD sgd(std::vector<Var>{w}, optim::SGDOptions{});
  try {
    sgd.step();
    ADD_FAILURE() << "SGD has no device branch and should refuse";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("is on cuda"), std::string::npos) << e.what();
  }
}

// The S4D path on the device: the kernel computed on the host from copies of its parameters, the convolution on
// causal_conv; forward and every gradient against the CPU's ssm_conv (both directions of a bidirectional kernel).
TEST(DevicePaths, CausalConvAndItsAdjoint) {
  Generator g(37);
  Tensor a = randn({2, 3, 9}, g), b = randn({2, 3, 9}, g), dy = randn({2, 3, 9}, g);
  Var va(a, true), vb(b, true), da(on_dev(a), true), db(on_dev(b), true);
  Var yc = fft_conv(va, vb, 9), yd = causal_conv(da, db);  // the CPU reference: the rfft composition
  EXPECT_TRUE(all_close(back(yd.data()), yc.data(), agree(DType::f32), "causal_conv"));
  yc.backward(dy);
  yd.backward(on_dev(dy));
  EXPECT_TRUE(all_close(back(da.grad()), va.grad(), agree(DType::f32), "d a"));
  EXPECT_TRUE(all_close(back(db.grad()), vb.grad(), agree(DType::f32), "d b"));
}

// conv1d on a device (tensor/conv.cpp: the depthwise convolution composed of device ops): forward and every
// gradient against the CPU kernel, for the shapes the conv layers use - causal and centred padding, dilation, a
// channel multiplier (Cout = 2 Cin), with and without bias, the input a transposed view - in f32 and f64; and a dense,
// strided convolution, which takes the general device path (im2col; every shape is an OpCase of tests/autograd too).
TEST(DevicePaths, DepthwiseConv1dAndItsGradients) {
  Generator g(38);
  struct Case {
    int64_t cout, k, pl, pr, d;
    bool bias;
  };
  for (DType dt : {DType::f32, DType::f64})
    for (Case c : {Case{6, 3, 4, 0, 2, true}, Case{6, 5, 2, 2, 1, false}, Case{12, 3, 1, 1, 1, true}, Case{6, 1, 0, 0, 1, true}}) {
      const std::string what = "conv1d Cout " + std::to_string(c.cout) + " K " + std::to_string(c.k) + " d " +
                               std::to_string(c.d) + " " + dtype_name(dt);
      Conv1dParams p;
      p.pad_left = c.pl, p.pad_right = c.pr, p.dilation = c.d, p.groups = 6;
      Tensor x = randn({2, 9, 6}, g).to(dt), w = randn({c.cout, 1, c.k}, g).to(dt), b = randn({c.cout}, g).to(dt);
      Var xc(x, true), wc(w, true), bc(b, true), xd(on_dev(x), true), wd(on_dev(w), true), bd(on_dev(b), true);
      Var yc = conv1d(transpose(xc, 1, 2), wc, c.bias ? bc : Var(), p);
      Var yd = conv1d(transpose(xd, 1, 2), wd, c.bias ? bd : Var(), p);
      EXPECT_TRUE(all_close(back(yd.data()), yc.data(), agree(dt), what));
      Tensor dy = randn(yc.shape(), g).to(dt);
      yc.backward(dy);
      yd.backward(on_dev(dy));
      EXPECT_TRUE(all_close(back(xd.grad()), xc.grad(), agree(dt), what + " dx"));
      EXPECT_TRUE(all_close(back(wd.grad()), wc.grad(), agree(dt), what + " dw"));
      if (c.bias) EXPECT_TRUE(all_close(back(bd.grad()), bc.grad(), agree(dt), what + " db"));
    }
  Conv1dParams dense;  // groups 1 with 6 input channels, stride 2: the general path
  dense.stride = 2, dense.pad_left = 1;
  Tensor x = randn({2, 6, 9}, g), w = randn({4, 6, 3}, g), b = randn({4}, g);
  EXPECT_TRUE(all_close(back(conv1d(on_dev(x), on_dev(w), on_dev(b), dense)), conv1d(x, w, b, dense), agree(DType::f32),
                        "dense strided conv1d"));
}

// S4D's and DLR's kernels with their parameters on the device: the (H, N) setup on the host, the Vandermonde product
// (tensor/vandermonde.h) on the device - every term's exp(E l) directly, where the CPU advances powers and restarts
// every 256 lags - and its gradients back through the host's chain rule to parameters on the device. L = 300 crosses
// a restart; bidirectional (Cc = 2); both discretisations; f32 and f64 parameters.
TEST(DevicePaths, SsmKernelsOnTheDeviceAndTheirGradients) {
  Generator g(39);
  const int64_t H = 3, N = 4, L = 300;
  for (DType dt : {DType::f32, DType::f64})
    for (auto disc : {nn::Discretization::zoh, nn::Discretization::bilinear}) {
      const std::string what = std::string("diag_ssm_kernel ") + dtype_name(dt) + (disc == nn::Discretization::zoh ? " zoh" : " bilinear");
      Tensor log_dt = add_scalar(mul_scalar(rand({H}, g), 3.0), -5.0).to(dt), a_re = mul_scalar(randn({H, N}, g), 0.3).to(dt);
      Tensor A_imag = mul_scalar(rand({H, N}, g), 10.0).to(dt), B = randn({H, N, 2}, g).to(dt), C = randn({2, H, N, 2}, g).to(dt);
      std::vector<Tensor> ps{log_dt, a_re, A_imag, B, C};
      std::vector<Var> vc, vd;
      for (const Tensor& t : ps) vc.push_back(Var(t, true)), vd.push_back(Var(on_dev(t), true));
      nn::DiagKernelOptions o;
      o.disc = disc;
      Var kc = nn::diag_ssm_kernel(vc[0], vc[1], vc[2], vc[3], vc[4], L, o);
      Var kd = nn::diag_ssm_kernel(vd[0], vd[1], vd[2], vd[3], vd[4], L, o);
      EXPECT_TRUE(all_close(back(kd.data()), kc.data(), agree(dt), what));
      Tensor dK = randn(kc.shape(), g).to(dt);
      kc.backward(dK);
      kd.backward(on_dev(dK));
      const char* names[] = {"log_dt", "a_re", "A_imag", "B", "C"};
      for (size_t i = 0; i < ps.size(); i++)
        EXPECT_TRUE(all_close(back(vd[i].grad()), vc[i].grad(), agree(dt), what + " d" + names[i]));
    }
  Tensor x = mul_scalar(rand({N}, g), 0.5), y = mul_scalar(randn({N}, g), 3.0), W = randn({2, H, N, 2}, g);
  Var xc(x, true), yc(y, true), wc(W, true), xd(on_dev(x), true), yd(on_dev(y), true), wd(on_dev(W), true);
  Var kc = nn::dlr_kernel(xc, yc, wc, L), kd = nn::dlr_kernel(xd, yd, wd, L);
  EXPECT_TRUE(all_close(back(kd.data()), kc.data(), agree(DType::f32), "dlr_kernel"));
  Tensor dK = randn(kc.shape(), g);
  kc.backward(dK);
  kd.backward(on_dev(dK));
  EXPECT_TRUE(all_close(back(xd.grad()), xc.grad(), agree(DType::f32), "dlr_kernel dx"));
  EXPECT_TRUE(all_close(back(yd.grad()), yc.grad(), agree(DType::f32), "dlr_kernel dy"));
  EXPECT_TRUE(all_close(back(wd.grad()), wc.grad(), agree(DType::f32), "dlr_kernel dW"));
}

void expect_step_agrees(const std::string& layer) {
  test::StepResult cpu = test::train_one_step(layer, Device::cpu), dev = test::train_one_step(layer, kDev);
  EXPECT_NEAR(dev.loss, cpu.loss, 1e-5 * (1 + std::abs(cpu.loss))) << layer << ": loss";
  EXPECT_NEAR(dev.grad_norm, cpu.grad_norm, 1e-4 * (1 + cpu.grad_norm)) << layer << ": gradient norm";
  ASSERT_EQ(dev.params.size(), cpu.params.size());
  for (auto& [name, t] : cpu.params) EXPECT_TRUE(all_close(dev.params.at(name), t, agree(DType::f32), layer + " " + name));
}

TEST(DevicePaths, TransformerTrainingStepEqualsCpu) { expect_step_agrees("attention"); }
TEST(DevicePaths, TransformerOnTheFlashPrimitiveEqualsCpu) { expect_step_agrees("attention_packed"); }
TEST(DevicePaths, S4DTrainingStepEqualsCpu) { expect_step_agrees("s4d"); }
TEST(DevicePaths, S4AndDlrTrainingStepsEqualCpu) {
  for (const char* layer : {"s4", "dlr"}) expect_step_agrees(layer);
}
TEST(DevicePaths, LstmTrainingStepEqualsCpu) { expect_step_agrees("lstm"); }
TEST(DevicePaths, ConvolutionTrainingStepsEqualCpu) {  // pretrained_convs' mixers: conv1d and the dynamic conv's sum
  for (const char* layer : {"lightconv", "dynamicconv", "dilatedconv"}) expect_step_agrees(layer);
}

}  // namespace
}  // namespace dl
