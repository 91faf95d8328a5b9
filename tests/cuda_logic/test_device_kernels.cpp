// tests/cuda_logic/test_device_kernels.cpp - the hot paths of the device backend that have no per-op CPU twin in the op
// harness: the attention primitive (cuda/ops/attention.cuh) against the CPU's flash_attention, S4's DPLR spectrum
// (cuda/ops/dplr.cuh) against the CPU's s4_dplr_kernel, and the multi-tensor AdamW step and gradient norm
// (cuda/ops/optim.cuh) against the per-tensor CPU loops. Device::cuda is the host twin here (see test_device_paths.cpp):
// the same functors the GPU runs, with thrust::cpp::par.
#include <gtest/gtest.h>

#include "cuda/backend_libs.cuh"  // in_fft_batches
#include "cuda/ops/attention.cuh"
#include "logic_util.h"
#include "nn/fused/flash_attention.h"
#include "nn/fused/lstm_kernels.h"
#include "nn/ssm/s4.h"
#include "optim/adam.h"
#include "optim/clip.h"
#include "tensor/backend.h"  // flush_device_checks
#include "tensor/fft.h"
#include "tensor/indexing.h"
#include "tensor/optim_kernels.h"

namespace dl {
namespace {

// ---- attention ----
struct AttnCase {
  std::string name;
  int64_t B, T, C, heads;
  bool causal = false, mask = false, prefix = false, all_padding_row = false;
  double p = 0;
  int64_t window = 0;
  int64_t qkv_offset = 0, dy_offset = 0;  // floats between a 16-byte boundary and the device copy's first element
};

// t on the device as a view that starts `offset` floats into its buffer (offset 1: no row on a 16-byte boundary)
Tensor on_dev_at(const Tensor& t, int64_t offset) {
  if (offset == 0) return on_dev(t);
  std::vector<float> v(offset, 0.f);
  const float* p = t.contiguous().data<float>();
  v.insert(v.end(), p, p + t.numel());
  return on_dev(from_vector(v, {(int64_t)v.size()})).narrow(0, offset, t.numel()).view(t.shape());
}

void expect_attention_agrees(const AttnCase& c) {
  Generator g(41);
  Tensor qkv = randn({c.B, c.T, 3 * c.C}, g);
  Tensor km, prefix;
  if (c.mask) {  // example b keeps its first T - 3 b positions (the last row all padding when asked)
    std::vector<float> m(c.B * c.T, 1.f);
    for (int64_t b = 0; b < c.B; b++)
      for (int64_t t = std::max<int64_t>(0, c.T - 3 * b); t < c.T; t++) m[b * c.T + t] = 0.f;
    if (c.all_padding_row)
      for (int64_t t = 0; t < c.T; t++) m[(c.B - 1) * c.T + t] = 0.f;
    km = from_vector(m, {c.B, c.T});
  }
  if (c.prefix) {
    std::vector<int64_t> P(c.B);
    for (int64_t b = 0; b < c.B; b++) P[b] = (b * 5) % (c.T + 1);
    prefix = from_vector(P, {c.B});
  }
  const bool training = c.p > 0;
  Generator gc(5), gd(5);  // one state: both draw the same dropout seed
  Var xc(qkv, true), xd(on_dev_at(qkv, c.qkv_offset), true);
  Var yc = nn::flash_attention(xc, c.heads, c.causal, c.p, training, gc, km, prefix, c.window);
  Var yd = nn::flash_attention(xd, c.heads, c.causal, c.p, training, gd, km.defined() ? on_dev(km) : km, prefix, c.window);
  EXPECT_TRUE(all_close(back(yd.data()), yc.data(), test::kAgreeF32, c.name + " out"));
  Tensor dy = randn(yc.shape(), g);
  yc.backward(dy);
  yd.backward(on_dev_at(dy, c.dy_offset));
  EXPECT_TRUE(all_close(back(xd.grad()), xc.grad(), test::kAgreeF32, c.name + " dqkv"));
}

// Odd lengths (37: one full key tile of 32 and a partial one), heads of 8 to 128 (16, 32 and 64 compiled as constants),
// each mask, the prefix-LM mask, a row whose keys are all padding (uniform weights), dropout with the CPU's
// counter-hash mask, and windows (the band |t - s| <= w: rows of a padded tail whose band holds no real key average
// their band, on both).
std::vector<AttnCase> row_cases() {
  return {
      {"plain", 2, 37, 16, 2},
      {"causal", 2, 37, 16, 2, true},
      {"key padding", 3, 37, 16, 2, false, true},
      {"causal + key padding + an all-padding row", 3, 20, 16, 2, true, true, false, true},
      {"prefix-LM", 3, 29, 16, 2, false, false, true},
      {"prefix-LM + key padding", 3, 29, 16, 2, false, true, true},
      {"dropout 0.3", 2, 37, 16, 2, false, false, false, false, 0.3},
      {"causal + dropout + padding", 3, 33, 24, 3, true, true, false, false, 0.2},
      {"head size 128", 1, 9, 128, 1},
      // the head sizes compiled as constants (cuda/ops/attention.cuh's HSC), each through a different mask
      {"head size 16, prefix-LM + key padding", 2, 21, 32, 2, false, true, true},
      {"head size 32, causal + dropout + padding", 2, 37, 64, 2, true, true, false, false, 0.2},
      {"head size 64, plain", 2, 35, 128, 2},
      {"one position", 2, 1, 8, 1, true},
      {"window 5", 2, 37, 16, 2, false, false, false, false, 0, 5},
      {"window 3, causal + key padding + an all-padding row", 3, 20, 16, 2, true, true, false, true, 0, 3},
      {"window 4, prefix-LM + key padding + dropout", 3, 29, 16, 2, false, true, true, false, 0.2, 4},
      {"window 1, head size 32, key padding", 3, 37, 64, 2, false, true, false, false, 0, 1},
      {"window 50 (wider than T), causal", 2, 37, 16, 2, true, false, false, false, 0, 50},
      // rows off the 16-byte boundary the float4 path reads at: the plain path instead (on the twin a float4 read of
      // such a row throws, as it would fault on the device)
      {"head size 32, qkv off the boundary", 2, 37, 64, 2, true, true, false, false, 0.2, 0, 1},
      {"head size 16, dout off the boundary", 2, 21, 32, 2, false, false, true, false, 0, 0, 0, 3},
  };
}

// The tensor-core tiles (cuda/ops/attention_tc.cuh: head sizes 16, 32, 64) through every mask: lengths that end in a
// partial tile of 16 (37, 21, 29, 20), one position, whole tiles (48), a row of all padding, windows inside a tile and
// wider than T, dropout, the prefix-LM mask.
std::vector<AttnCase> tile_cases() {
  return {
      {"tiles: plain, head 16", 2, 37, 32, 2},
      {"tiles: causal, head 32", 2, 37, 64, 2, true},
      {"tiles: key padding, head 16", 3, 37, 32, 2, false, true},
      {"tiles: causal + key padding + an all-padding row, head 16", 3, 20, 32, 2, true, true, false, true},
      {"tiles: prefix-LM, head 32", 3, 29, 64, 2, false, false, true},
      {"tiles: prefix-LM + key padding, head 16", 3, 21, 32, 2, false, true, true},
      {"tiles: dropout 0.3, head 16", 2, 37, 32, 2, false, false, false, false, 0.3},
      {"tiles: one position, head 16", 2, 1, 16, 1, true},
      {"tiles: three whole tiles, causal + dropout, head 64", 2, 48, 128, 2, true, false, false, false, 0.1},
      {"tiles: window 5, head 16", 2, 37, 32, 2, false, false, false, false, 0, 5},
      {"tiles: window 3, causal + key padding + an all-padding row, head 16", 3, 20, 32, 2, true, true, false, true, 0, 3},
      {"tiles: window 4, prefix-LM + key padding + dropout, head 16", 3, 29, 32, 2, false, true, true, false, 0.2, 4},
      {"tiles: window 50 (wider than T), causal, head 64", 2, 37, 128, 2, true, false, false, false, 0, 50},
      {"tiles: 70 positions, causal + key padding, head 32", 2, 70, 64, 2, true, true},
  };
}

TEST(DeviceKernels, AttentionAgreesWithTheCpusFlashKernel) {
  for (const AttnCase& c : row_cases()) expect_attention_agrees(c);
}

TEST(DeviceKernels, AttentionTilesAgreeWithTheCpusFlashKernel) {
  for (const AttnCase& c : tile_cases()) expect_attention_agrees(c);
}

// DL_ATTENTION_TC=0: the rows' kernels at the head sizes the tiles would take
TEST(DeviceKernels, AttentionRowsAgreeWhereTheTilesWouldRun) {
  setenv("DL_ATTENTION_TC", "0", 1);
  for (const AttnCase& c : tile_cases()) expect_attention_agrees(c);
  for (const AttnCase& c : row_cases()) expect_attention_agrees(c);
  unsetenv("DL_ATTENTION_TC");
}

static_assert(nn::kDeviceFlashMaxHead == ops::kAttnMaxHead, "the path table's head limit is the kernel's");

TEST(DeviceKernels, AttentionRefusesHeadsAboveTheKernelsLimit) {
  Generator g(1), gd(1);
  Var x(on_dev(randn({1, 4, 3 * 256}, g)), true);
  try {
    nn::flash_attention(x, 1, false, 0, false, gd);
    FAIL() << "a head of 256 should be refused";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("head size 256"), std::string::npos) << e.what();
  }
}

// ---- the LSTM cell ----
// lstm_cell_fused on the device (cuda/ops/lstm.cuh) against the CPU's node: pre-activations spread over +-12 (the
// sigmoids and tanh saturate at both ends), both float dtypes, forward and both gradients.
TEST(DeviceKernels, LstmCellAgreesWithTheCpusNode) {
  for (DType t : {DType::f32, DType::f64}) {
    Generator g(47);
    const int64_t B = 5, Hd = 7;
    Tensor gates = mul_scalar(randn({B, 4 * Hd}, g, t), 4.0), c = randn({B, Hd}, g, t), dy = randn({B, 2, Hd}, g, t);
    Var gc(gates, true), cc(c, true), gd(on_dev(gates), true), cd(on_dev(c), true);
    Var yc = nn::lstm_cell_fused(gc, cc), yd = nn::lstm_cell_fused(gd, cd);
    const std::string what = std::string("lstm cell ") + dtype_name(t);
    EXPECT_TRUE(all_close(back(yd.data()), yc.data(), agree(t), what + " hc"));
    yc.backward(dy);
    yd.backward(on_dev(dy));
    EXPECT_TRUE(all_close(back(gd.grad()), gc.grad(), agree(t), what + " dgates"));
    EXPECT_TRUE(all_close(back(cd.grad()), cc.grad(), agree(t), what + " dc"));
  }
}

// ---- S4's DPLR kernel ----
TEST(DeviceKernels, S4DplrKernelAndEveryGradient) {
  Generator g(43);
  for (int64_t Cc : {1, 2})
    for (int64_t Lk : {16, 37}) {  // an even and an odd length (no Nyquist bin)
      const std::string what = "s4_dplr_kernel Cc " + std::to_string(Cc) + " Lk " + std::to_string(Lk);
      const int64_t H = 3, N2 = 4;
      Tensor log_dt = add_scalar(mul_scalar(rand({H}, g), 2.0), -4.0), ar = mul_scalar(randn({H, N2}, g), 0.3);
      Tensor ai = mul_scalar(rand({H, N2}, g), 6.0), B = randn({H, N2, 2}, g), P = mul_scalar(randn({1, H, N2, 2}, g), 0.3);
      Tensor C = randn({Cc, H, N2, 2}, g);
      std::vector<Tensor> ps{log_dt, ar, ai, B, P, C};
      std::vector<Var> vc, vd;
      for (const Tensor& t : ps) vc.push_back(Var(t, true)), vd.push_back(Var(on_dev(t), true));
      Var kc = nn::s4_dplr_kernel(vc[0], vc[1], vc[2], vc[3], vc[4], vc[5], Lk);
      Var kd = nn::s4_dplr_kernel(vd[0], vd[1], vd[2], vd[3], vd[4], vd[5], Lk);
      EXPECT_TRUE(all_close(back(kd.data()), kc.data(), test::kAgreeF32, what));
      Tensor dK = randn(kc.shape(), g);
      kc.backward(dK);
      kd.backward(on_dev(dK));
      const char* names[] = {"log_dt", "inv_A_real", "A_imag", "B", "P", "C"};
      for (size_t i = 0; i < ps.size(); i++)
        EXPECT_TRUE(all_close(back(vd[i].grad()), vc[i].grad(), test::kAgreeF32, what + " d" + names[i]));
    }
}

// ---- the optimizer over many tensors ----
TEST(DeviceKernels, MultiTensorAdamWEqualsTheStepPerTensor) {
  Generator g(44);
  for (DType dt : {DType::f32, DType::f64}) {
    std::vector<Shape> shapes = {{5, 7}, {0}, {1}, {300}, {2, 3, 4}};  // an empty one is skipped in the table
    std::vector<Tensor> pc, gc, mc, vc, pd, gdv, md, vd;
    for (const Shape& s : shapes) {
      Tensor p = randn(s, g, dt), gr = randn(s, g, dt), m = mul_scalar(randn(s, g, dt), 0.1), v = abs(randn(s, g, dt));
      pc.push_back(p.clone()), gc.push_back(gr), mc.push_back(m.clone()), vc.push_back(v.clone());
      pd.push_back(on_dev(p)), gdv.push_back(on_dev(gr)), md.push_back(on_dev(m)), vd.push_back(on_dev(v));
    }
    for (bool decoupled : {true, false}) {
      AdamScalars s{0.9, 0.999, 1e-8, 0.1, 0.01 / (1 - 0.9 * 0.9), std::sqrt(1 - 0.999 * 0.999), 1 - 0.01 * 0.1, decoupled};
      for (size_t i = 0; i < shapes.size(); i++) adam_step_(s, pc[i], gc[i], mc[i], vc[i]);
      adam_steps_(s, pd, gdv, md, vd);
      for (size_t i = 0; i < shapes.size(); i++) {
        const std::string what = std::string(dtype_name(dt)) + (decoupled ? " AdamW" : " Adam") + " tensor " + std::to_string(i);
        EXPECT_TRUE(all_close(back(pd[i]), pc[i], agree(dt), what + " param"));
        EXPECT_TRUE(all_close(back(md[i]), mc[i], agree(dt), what + " exp_avg"));
        EXPECT_TRUE(all_close(back(vd[i]), vc[i], agree(dt), what + " exp_avg_sq"));
      }
    }
    double cpu = 0;
    for (const Tensor& t : gc) cpu += sum_of_squares(t);
    EXPECT_NEAR(sum_of_squares_all(gdv), cpu, 1e-9 * cpu) << dtype_name(dt);
  }
  // a NaN anywhere makes the sum NaN (the harness's non-finite check rests on it)
  Tensor bad = on_dev(from_vector(std::vector<float>{1.f, NAN, 2.f}, {3}));
  EXPECT_TRUE(std::isnan(sum_of_squares_all({on_dev(ones({4})), bad})));
}

// The optimiser batches a group's device parameters by step count: a parameter that skipped a step (no gradient) keeps
// its own count, and the result equals the CPU's parameter by parameter.
TEST(DeviceKernels, AdamWOverParametersOfDifferentStepCounts) {
  Generator g(45);
  Tensor a0 = randn({4, 3}, g), b0 = randn({6}, g), c0 = randn({2, 2}, g);
  Var ac(a0.clone(), true), bc(b0.clone(), true), cc(c0.clone(), true);
  Var ad(on_dev(a0), true), bd(on_dev(b0), true), cd(on_dev(c0), true);
  optim::AdamWOptions o;
  o.lr = 0.03, o.weight_decay = 0.05;
  optim::AdamW oc({ac, bc, cc}, o), od({ad, bd, cd}, o);
  for (int step = 0; step < 4; step++) {
    std::vector<Var*> cpu = {&ac, &bc, &cc}, dev = {&ad, &bd, &cd};
    for (size_t i = 0; i < 3; i++) {
      cpu[i]->zero_grad(), dev[i]->zero_grad();
      if (i == 1 && step == 1) continue;  // b has no gradient at step 1: its count falls behind the others'
      Tensor gr = randn(cpu[i]->shape(), g);
      cpu[i]->mutable_grad() = gr, dev[i]->mutable_grad() = on_dev(gr);
    }
    EXPECT_NEAR(optim::grad_norm({ad, bd, cd}, 2.0), optim::grad_norm({ac, bc, cc}, 2.0), 1e-9);
    oc.step(), od.step();
    for (size_t i = 0; i < 3; i++)
      EXPECT_TRUE(all_close(back(dev[i]->data()), cpu[i]->data(), agree(DType::f32),
                            "param " + std::to_string(i) + " step " + std::to_string(step)));
  }
}

// ---- index checks without a read back per op ----
using test::error_of;

// An index on the host is checked before it moves (at once); one on the device is clamped for the op and its count of
// bad entries is read at the next read back, which fails naming the op. In-range device indices give the CPU's result.
TEST(DeviceKernels, IndexChecksOnTheDeviceAreDeferredToTheNextReadBack) {
  Generator g(47);
  Tensor w = on_dev(randn({5, 3}, g));
  Tensor host_bad = from_vector(std::vector<int64_t>{1, 5}, {2});
  EXPECT_NE(error_of([&] { embedding(w, host_bad); }).find("embedding: index 5 out of range"), std::string::npos);
  Tensor dev_bad = on_dev(from_vector(std::vector<int64_t>{1, 7, -1, 2}, {4}));
  Tensor out;
  EXPECT_EQ(error_of([&] { out = embedding(w, dev_bad); }), "") << "no read back in the op";
  const std::string e = error_of([&] { out.to(Device::cpu); });
  EXPECT_NE(e.find("embedding: index out of range for dim 0 of size 5"), std::string::npos) << e;
  EXPECT_NE(e.find("2 indices on the device"), std::string::npos) << e;
  EXPECT_EQ(error_of([&] { out.to(Device::cpu); }), "") << "reported once";
  Tensor oh;
  EXPECT_EQ(error_of([&] { oh = one_hot(on_dev(from_vector(std::vector<int64_t>{0, 3}, {2})), 3); }), "");
  EXPECT_NE(error_of([] { flush_device_checks(); }).find("one_hot: index out of range"), std::string::npos);
  Tensor good = from_vector(std::vector<int64_t>{4, 0, 2, 2}, {4});
  EXPECT_TRUE(all_close(back(embedding(w, on_dev(good))), embedding(w.to(Device::cpu), good), kExact, "in range"));
  Tensor x = randn({3, 4}, g), gi = from_vector(std::vector<int64_t>{3, 0, 1, 2, 2, 2}, {3, 2});
  EXPECT_TRUE(all_close(back(gather(on_dev(x), 1, on_dev(gi))), gather(x, 1, gi), kExact, "gather, device index"));
  EXPECT_EQ(error_of([] { flush_device_checks(); }), "");
}

// ---- the FFTs' power-of-two batches ----
TEST(DeviceKernels, FftRowsGoInPowerOfTwoBatches) {
  for (int64_t rows : {1, 2, 3, 7, 100, 64, 65, 200000}) {
    std::vector<std::pair<int64_t, int64_t>> calls;
    cuda::in_fft_batches(rows, [&](int64_t first, int64_t count) { calls.push_back({first, count}); });
    int64_t next = 0;
    for (size_t i = 0; i < calls.size(); i++) {
      auto [first, count] = calls[i];
      EXPECT_EQ(first, next) << rows << " rows: batch " << i << " does not follow the previous one";
      EXPECT_EQ(count & (count - 1), 0) << rows << " rows: a batch of " << count;
      EXPECT_LE(count, cuda::kMaxFftBatch);
      if (i > 0) EXPECT_LE(count, calls[i - 1].second) << "largest first";
      next = first + count;
    }
    EXPECT_EQ(next, rows);
  }
  std::vector<int64_t> counts;
  cuda::in_fft_batches(100, [&](int64_t, int64_t c) { counts.push_back(c); });
  EXPECT_EQ(counts, (std::vector<int64_t>{64, 32, 4}));
}

// Odd row counts (batches at offsets) through rfft and irfft on the device, against the CPU.
TEST(DeviceKernels, RealFftsOfOddRowCountsEqualTheCpus) {
  Generator g(46);
  for (int64_t rows : {7, 100})
    for (int64_t n : {10, 33}) {
      Tensor x = randn({rows, n}, g, DType::f64);
      Tensor X = rfft(x, n), Xd = rfft(on_dev(x), n);
      EXPECT_TRUE(all_close(back(Xd), X, agree(DType::f64), "rfft rows " + std::to_string(rows)));
      EXPECT_TRUE(all_close(back(irfft(Xd, n)), irfft(X, n), agree(DType::f64), "irfft rows " + std::to_string(rows)));
    }
}

}  // namespace
}  // namespace dl
