// tests/autograd/test_nn_ops.cpp - softmax, norms, dropout, losses: finite differences and PyTorch (one
// OpCase each), fused == composed ("two algorithms agree"), dropout's mask properties, errors.
#include <omp.h>

#include <cmath>

#include "op_harness.h"
#include "tensor/counter_hash.h"

using namespace dl;
using namespace dl::test;

namespace {

Tensor ignore_target() {  // the same constant as IGN in tests/fixtures/ops_nn.py
  return from_vector(std::vector<int64_t>{3, -100, 0, 4, -100, 2}, {6});
}
Tensor col_mask() { return from_vector(std::vector<int64_t>{1, 0, 1}, {3, 1}); }

// clang-format off
std::vector<OpCase> nn_cases() {
  auto ce = [](double ls, Reduction r) {
    return [ls, r](const std::vector<Var>& x) { return cross_entropy(x[0], x[1].data(), -100, ls, r); };
  };
  std::vector<OpCase> c = {
      {"softmax_last", {randn_input({2, 3, 5})}, [](auto& x) { return softmax(x[0], -1); }},
      {"softmax_dim1", {randn_input({2, 3, 5})}, [](auto& x) { return softmax(x[0], 1); }},
      {"softmax_dim0", {randn_input({4, 3})}, [](auto& x) { return softmax(x[0], 0); }},
      {"log_softmax_last", {randn_input({2, 3, 5})}, [](auto& x) { return log_softmax(x[0], -1); }},
      {"log_softmax_dim1", {randn_input({2, 3, 5})}, [](auto& x) { return log_softmax(x[0], 1); }},
      {"layer_norm_affine", {randn_input({2, 3, 8}), randn_input({8}), randn_input({8})},
       [](auto& x) { return layer_norm(x[0], x[1], x[2], 1e-5); }},
      {"layer_norm_plain", {randn_input({4, 6})}, [](auto& x) { return layer_norm(x[0], Var(), Var(), 1e-5); }},
      {"layer_norm_weight_only", {randn_input({4, 6}), randn_input({6})},
       [](auto& x) { return layer_norm(x[0], x[1], Var(), 1e-5); }},
      {"rms_norm", {randn_input({2, 3, 8}), randn_input({8})}, [](auto& x) { return rms_norm(x[0], x[1], 1e-6); }},
      {"rms_norm_plain", {randn_input({4, 6})}, [](auto& x) { return rms_norm(x[0], Var(), 1e-6); }},
      {"batch_norm_2d", {randn_input({6, 4}), randn_input({4}), randn_input({4})},
       [](auto& x) { return batch_norm_train(x[0], x[1], x[2], 1e-5).y; }},
      {"batch_norm_3d", {randn_input({3, 4, 5}), randn_input({4}), randn_input({4})},
       [](auto& x) { return batch_norm_train(x[0], x[1], x[2], 1e-5).y; }},
      {"cross_entropy", {randn_input({5, 7}), randint_input({5}, 0, 7)}, ce(0.0, Reduction::mean)},
      {"cross_entropy_3d", {randn_input({2, 3, 7}), randint_input({2, 3}, 0, 7)}, ce(0.0, Reduction::mean)},
      {"cross_entropy_ignore", {randn_input({6, 5}), const_input(ignore_target())}, ce(0.0, Reduction::mean)},
      {"cross_entropy_smooth", {randn_input({6, 5}), const_input(ignore_target())}, ce(0.1, Reduction::mean)},
      {"cross_entropy_sum", {randn_input({5, 7}), randint_input({5}, 0, 7)}, ce(0.0, Reduction::sum)},
      {"cross_entropy_none", {randn_input({6, 5}), const_input(ignore_target())}, ce(0.0, Reduction::none)},
      {"nll_loss", {randn_input({5, 7}), randint_input({5}, 0, 7)}, [](auto& x) { return nll_loss(x[0], x[1].data()); }},
      {"nll_loss_ignore", {randn_input({6, 5}), const_input(ignore_target())},
       [](auto& x) { return nll_loss(x[0], x[1].data()); }},
      {"mse_mean", {randn_input({3, 4}), randn_input({3, 4})}, [](auto& x) { return mse_loss(x[0], x[1]); }},
      {"mse_sum", {randn_input({3, 4}), randn_input({3, 4})}, [](auto& x) { return mse_loss(x[0], x[1], Reduction::sum); }},
      {"mse_masked", {randn_input({3, 4}), randn_input({3, 4}), randint_input({3, 4}, 0, 2)},
       [](auto& x) { return mse_loss(x[0], x[1], Reduction::mean, x[2].data()); }},
      // a (3, 1) mask broadcast over the columns
      {"mse_masked_broadcast", {randn_input({3, 4}), randn_input({3, 4}), const_input(col_mask())},
       [](auto& x) { return mse_loss(x[0], x[1], Reduction::mean, x[2].data()); }},
      {"l1_mean", {randn_input({3, 4}), randn_input({3, 4})}, [](auto& x) { return l1_loss(x[0], x[1]); }},
      {"l1_sum", {randn_input({3, 4}), randn_input({3, 4})}, [](auto& x) { return l1_loss(x[0], x[1], Reduction::sum); }},
      {"l1_masked", {randn_input({3, 4}), randn_input({3, 4}), randint_input({3, 4}, 0, 2)},
       [](auto& x) { return l1_loss(x[0], x[1], Reduction::mean, x[2].data()); }},
      {"bce_logits", {randn_input({3, 4}, 3.0), uniform_input({3, 4}, 0.0, 1.0)},
       [](auto& x) { return binary_cross_entropy_with_logits(x[0], x[1]); }},
      {"bce_logits_masked", {randn_input({3, 4}, 3.0), uniform_input({3, 4}, 0.0, 1.0), randint_input({3, 4}, 0, 2)},
       [](auto& x) { return binary_cross_entropy_with_logits(x[0], x[1], Reduction::mean, x[2].data()); }},
  };
  // dropout: a fresh Generator(42) per call, so every evaluation (analytic and finite differences) uses
  // the same mask. No fixture: PyTorch's mask comes from its own generator; see the Dropout tests below.
  OpCase d{"dropout", {randn_input({4, 6})}, [](auto& x) {
             Generator g(42);
             return dropout(x[0], 0.4, true, g);
           }};
  d.has_fixture = false;
  c.push_back(d);
  return c;
}
// clang-format on

Tensor rand_f32(const Shape& s, uint64_t seed, double scale = 1.0) {
  Generator g(seed);
  return mul_scalar(randn(s, g), scale);
}

// Run the fused and the composed version on the same inputs with the same dy; compare y and every grad.
void expect_agree(const std::string& what, const std::vector<Tensor>& ins,
                  const std::function<Var(const std::vector<Var>&)>& fused,
                  const std::function<Var(const std::vector<Var>&)>& composed) {
  std::vector<Var> a, b;
  for (auto& t : ins) a.push_back(Var(t, t.dtype() != DType::i64)), b.push_back(Var(t, t.dtype() != DType::i64));
  Var ya = fused(a), yb = composed(b);
  ASSERT_TRUE(all_close(ya.data(), yb.data(), kAgreeF32, what + " forward"));
  Tensor dy = rand_f32(ya.shape(), 99);
  ya.backward(dy);
  yb.backward(dy);
  for (size_t k = 0; k < ins.size(); k++) {
    if (ins[k].dtype() == DType::i64) continue;
    EXPECT_TRUE(all_close(a[k].grad(), b[k].grad(), kAgreeF32, what + " grad" + std::to_string(k)));
  }
}

}  // namespace

DL_OP_TESTS(NnOps, nn_cases());

// ---- fused kernels agree with their composition from primitives (float32, larger inputs) ----
TEST(NnOpsAgree, SoftmaxEqualsExpOfXMinusLogsumexp) {
  for (int64_t dim : {-1, 0, 1}) {
    expect_agree(
        "softmax dim " + std::to_string(dim), {rand_f32({37, 300, 3}, 1, 3.0)}, [dim](auto& x) { return softmax(x[0], dim); },
        [dim](auto& x) { return exp(x[0] - logsumexp(x[0], {dim}, true)); });
    expect_agree(
        "log_softmax dim " + std::to_string(dim), {rand_f32({37, 300, 3}, 2, 3.0)},
        [dim](auto& x) { return log_softmax(x[0], dim); }, [dim](auto& x) { return x[0] - logsumexp(x[0], {dim}, true); });
  }
  expect_agree(
      "softmax last, long rows", {rand_f32({64, 2048}, 3, 5.0)}, [](auto& x) { return softmax(x[0], -1); },
      [](auto& x) { return exp(x[0] - logsumexp(x[0], {-1}, true)); });
}

TEST(NnOpsAgree, LayerNormEqualsMeanVarFormula) {
  expect_agree(
      "layer_norm", {rand_f32({8, 50, 256}, 4, 2.0), rand_f32({256}, 5), rand_f32({256}, 6)},
      [](auto& x) { return layer_norm(x[0], x[1], x[2], 1e-5); },
      [](auto& x) {
        Var mu = mean(x[0], {-1}, true), v = var(x[0], {-1}, false, true);
        return (x[0] - mu) * rsqrt(v + 1e-5) * x[1] + x[2];
      });
  expect_agree(
      "rms_norm", {rand_f32({8, 50, 256}, 7, 2.0), rand_f32({256}, 8)}, [](auto& x) { return rms_norm(x[0], x[1], 1e-6); },
      [](auto& x) { return x[0] * rsqrt(mean(x[0] * x[0], {-1}, true) + 1e-6) * x[1]; });
  expect_agree(
      "batch_norm", {rand_f32({16, 24, 40}, 9, 2.0), rand_f32({24}, 10), rand_f32({24}, 11)},
      [](auto& x) { return batch_norm_train(x[0], x[1], x[2], 1e-5).y; },
      [](auto& x) {
        Var mu = mean(x[0], {0, 2}, true), v = var(x[0], {0, 2}, false, true);
        return (x[0] - mu) * rsqrt(v + 1e-5) * reshape(x[1], {24, 1}) + reshape(x[2], {24, 1});
      });
}

TEST(NnOpsAgree, CrossEntropyEqualsSmoothedNllOfLogSoftmax) {
  const int64_t N = 500, C = 97;
  Generator g(12);
  Tensor t = randint(0, C, {N}, g);
  for (int64_t i = 0; i < N; i += 7) t.data<int64_t>()[i] = -100;
  for (double ls : {0.0, 0.2}) {
    // q = (1 - s) onehot + s / C on kept rows, 0 on ignored ones; loss = -sum(q log_softmax(x)) / count
    Tensor q = zeros({N, C});
    int64_t count = 0;
    for (int64_t i = 0; i < N; i++) {
      int64_t ti = t.data<int64_t>()[i];
      if (ti == -100) continue;
      count++;
      for (int64_t c = 0; c < C; c++) q.data<float>()[i * C + c] = (float)(ls / C + (c == ti ? 1.0 - ls : 0.0));
    }
    expect_agree(
        "cross_entropy ls=" + std::to_string(ls), {rand_f32({N, C}, 13, 4.0), t},
        [ls](auto& x) { return cross_entropy(x[0], x[1].data(), -100, ls); },
        [q, count](auto& x) { return sum(log_softmax(x[0], -1) * Var(q)) * (-1.0 / (double)count); });
  }
}

// ---- dropout ----
TEST(Dropout, ForwardAndBackwardUseTheSameMask) {
  const double p = 0.3;
  Var x(rand_f32({50, 40}, 20), true);
  Generator g1(7), g2(7);
  Var y = dropout(x, p, true, g1);
  Tensor m = dropout_mask(x.shape(), p, g2);
  EXPECT_TRUE(all_close(y.data(), mul(x.data(), m), Tol{0, 0}, "y == x * mask"));
  Tensor dy = rand_f32(x.shape(), 21);
  y.backward(dy);
  EXPECT_TRUE(all_close(x.grad(), mul(dy, m), Tol{0, 0}, "dx == dy * mask"));
  for (float v : m.to_vector()) EXPECT_TRUE(v == 0.0f || v == (float)(1.0 / (1.0 - p))) << v;
  EXPECT_EQ(g1.state_string(), g2.state_string());  // both advanced by exactly one draw
}

// The node keeps its mask as bits (1/32 of the memory); it must be dropout_mask's mask, element for element, also
// for a transposed (non-contiguous) f64 input of odd size spanning several 4096-element chunks.
TEST(Dropout, BitMaskIsTheFloatMask) {
  const double p = 0.4;
  Var x(rand_f32({37, 301}, 23).to(DType::f64).transpose(0, 1), true);  // (301, 37), 11137 elements
  Generator g1(11), g2(11), g3(11);
  Var y = dropout(x, p, true, g1);
  Tensor m = dropout_mask(x.shape(), p, g2, DType::f64);
  EXPECT_TRUE(all_close(y.data(), mul(x.data(), m), Tol{0, 0}, "y == x * mask"));
  Tensor dy = rand_f32(x.shape(), 24).to(DType::f64);
  y.backward(dy);
  EXPECT_TRUE(all_close(x.grad(), mul(dy, m), Tol{0, 0}, "dx == dy * mask"));
  std::vector<uint64_t> bits = dropout_keep_bits(x.numel(), p, g3);
  std::vector<float> mv = m.to_vector();
  for (int64_t i = 0; i < x.numel(); i++) ASSERT_EQ((bits[i / 64] >> (i % 64)) & 1, mv[i] != 0.f ? 1u : 0u) << i;
}

// The op's one-pass fast path against the plain draw-then-apply: the same bits and the same y, bit for bit, for
// f32 and f64, for sizes that end inside a word, inside a 4096-element row and on a row's edge, on 1 and 2 threads;
// a dropped NaN stays NaN as x * 0 would leave it.
TEST(Dropout, OnePassIsDrawThenApply) {
  const int prev = omp_get_max_threads();
  for (int threads : {1, 2})
    for (DType dt : {DType::f32, DType::f64})
      for (int64_t n : {int64_t(1), int64_t(63), int64_t(4096), int64_t(3 * 4096 + 37), int64_t(100001)})
        for (double p : {0.1, 0.5, 1.0}) {
          omp_set_num_threads(threads);
          Tensor x = rand_f32({n}, 31).to(dt);
          Generator g1(17), g2(17);
          DropoutOut o = dropout_one_pass(x, p, g1);
          std::vector<uint64_t> bits = dropout_keep_bits(n, p, g2);
          Tensor y = apply_dropout_bits(x, bits, p);
          const std::string what = std::string(dtype_name(dt)) + " n=" + std::to_string(n) + " p=" + std::to_string(p) +
                                   " threads=" + std::to_string(threads);
          ASSERT_EQ(o.bits, bits) << what;
          ASSERT_TRUE(all_close(o.y, y, Tol{0, 0}, what.c_str())) << what;
          EXPECT_EQ(g1.next_u64(), g2.next_u64()) << "both draw one u64: " << what;
        }
  omp_set_num_threads(prev);
  Tensor x = full({64}, std::nan(""));
  Generator g(3);
  DropoutOut o = dropout_one_pass(x, 0.5, g);
  for (float v : o.y.to_vector()) EXPECT_TRUE(std::isnan(v));
}

// The keep bits against their definition, written out with the 64-bit compare: element i of 4096-element row k is
// kept iff row_draw(row_key(base, k), i mod 4096) >= round(p 2^32). p = 1 - 1e-11 rounds to 2^32 (nothing kept),
// p = 0 keeps everything.
TEST(Dropout, KeepBitsAreTheCounterHashDefinition) {
  const int64_t n = 2 * 4096 + 45;
  for (double p : {0.0, 0.1, 0.5, 0.9, 1.0 - 1e-11, 1.0}) {
    Generator g(23), gb(23);
    const uint64_t base = gb.next_u64(), thr = (uint64_t)std::llround(p * 4294967296.0);
    const std::vector<uint64_t> bits = dropout_keep_bits(n, p, g);
    for (int64_t i = 0; i < n; i++) {
      const bool want = (uint64_t)row_draw(row_key(base, (uint64_t)(i / 4096)), (uint32_t)(i % 4096)) >= thr;
      ASSERT_EQ((bits[i / 64] >> (i % 64)) & 1, want ? 1u : 0u) << "p = " << p << ", element " << i;
    }
    for (int64_t i = n; i < (int64_t)bits.size() * 64; i++) ASSERT_EQ((bits[i / 64] >> (i % 64)) & 1, 0u) << "past n: " << i;
  }
  // The 32-bit form of the test: at thr = 2^32 the clipped threshold admits a draw of 0xFFFFFFFF, the scale is what drops it
  EXPECT_EQ(keep_threshold32(1ull << 32), 0xFFFFFFFFu);
  EXPECT_EQ(keep_scale(1ull << 32, 2.f), 0.f);
  EXPECT_EQ(keep_scale(0xFFFFFFFFull, 2.f), 2.f);
}

TEST(Dropout, KeptFractionIsOneMinusP) {
  Generator g(8);
  for (double p : {0.1, 0.5, 0.9}) {
    Tensor m = dropout_mask({1000, 1000}, p, g);
    double kept = sum(ne(m, zeros({}))).item() / 1e6;
    EXPECT_NEAR(kept, 1.0 - p, 0.003) << "p = " << p;  // 6 standard deviations of a binomial mean
    EXPECT_NEAR(mean(m).item(), 1.0, 0.01) << "E[mask] = 1 keeps the expected activation";
  }
  EXPECT_EQ(sum(dropout_mask({100}, 1.0, g)).item(), 0.0);
}

TEST(Dropout, MaskDoesNotDependOnThreadCount) {
  int prev = omp_get_max_threads();
  Generator g1(9), g2(9);
  omp_set_num_threads(1);
  Tensor m1 = dropout_mask({777, 1333}, 0.25, g1);
  omp_set_num_threads(2);
  Tensor m2 = dropout_mask({777, 1333}, 0.25, g2);
  omp_set_num_threads(prev);
  EXPECT_EQ(m1.to_vector(), m2.to_vector());
}

TEST(Dropout, EvalModeAndPZeroAreIdentity) {
  Var x(rand_f32({4, 5}, 22), true);
  Generator g(3);
  std::string before = g.state_string();
  EXPECT_EQ(dropout(x, 0.5, false, g).impl(), x.impl());
  EXPECT_EQ(dropout(x, 0.0, true, g).impl(), x.impl());
  EXPECT_EQ(g.state_string(), before);  // no random numbers drawn
  EXPECT_THROW(dropout(x, 1.5, true, g), ShapeError);
}

// Cross-row sums (dweight, dbias) are fixed-order: bitwise equal on 1 and 2 threads.
TEST(NnOps, NormGradientsDoNotDependOnThreadCount) {
  Tensor x = rand_f32({4096, 64}, 30), w = rand_f32({64}, 31), b = rand_f32({64}, 32), dy = rand_f32({4096, 64}, 33);
  int prev = omp_get_max_threads();
  std::vector<std::vector<float>> r[2];
  for (int nt : {1, 2}) {
    omp_set_num_threads(nt);
    NormOut o = layer_norm(x, w, b, 1e-5);
    NormGrads gr = layer_norm_backward(dy, x, o.mean, o.rstd, w, true, true, true);
    Var l = cross_entropy(Var(x, true), argmax(x, 1));
    r[nt - 1] = {o.y.to_vector(), gr.dx.to_vector(), gr.dweight.to_vector(), gr.dbias.to_vector(), l.data().to_vector()};
  }
  omp_set_num_threads(prev);
  for (size_t k = 0; k < r[0].size(); k++) EXPECT_EQ(r[0][k], r[1][k]) << "output " << k;
}

TEST(NnOps, SoftmaxRowsSumToOneAndSurviveLargeInputs) {
  Tensor x = from_vector(std::vector<float>{1000, 0, -1000, 88, 89, 90}, {2, 3});
  Tensor y = softmax(x, -1), ly = log_softmax(x, -1);
  for (float v : y.to_vector()) EXPECT_TRUE(std::isfinite(v));
  for (float v : ly.to_vector()) EXPECT_TRUE(std::isfinite(v));
  EXPECT_NEAR(sum(y, {1}).at({1}), 1.0, 1e-6);
  EXPECT_FLOAT_EQ(y.at({0, 0}), 1.0f);
}

TEST(NnOps, BatchNormReturnsBatchStatistics) {
  Tensor x = from_vector(std::vector<float>{1, 10, 3, 20, 5, 30}, {3, 2});
  BatchNormResult r = batch_norm_train(Var(x), Var(), Var(), 1e-5);
  EXPECT_EQ(r.mean.to_vector(), (std::vector<float>{3, 20}));
  EXPECT_NEAR(r.var.at({0}), 8.0 / 3.0, 1e-5);
  EXPECT_NEAR(r.var_unbiased.at({0}), 4.0, 1e-5);
}

TEST(NnOps, MaskedLossIgnoresUnmaskedPositions) {
  Var p(from_vector(std::vector<float>{1, 2, 3, 4}, {4}), true), t(zeros({4}));
  Tensor m = from_vector(std::vector<int64_t>{1, 0, 0, 1}, {4});
  Var l = l1_loss(p, t, Reduction::mean, m);
  EXPECT_FLOAT_EQ(l.item(), 2.5f);  // (1 + 4) / 2
  l.backward();
  EXPECT_EQ(p.grad().to_vector(), (std::vector<float>{0.5f, 0, 0, 0.5f}));
}

// ---- errors name the op, the expected and the actual shapes (and the bad value) ----
// Only a ShapeError counts: anything else escapes and fails the test.
static std::string shape_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ShapeError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(NnOpsErrors, CrossEntropyTargetShapeMismatch) {
  std::string m = shape_error_of([] { (void)cross_entropy(Var(zeros({4, 5})), zeros({3}, DType::i64)); });
  EXPECT_NE(m.find("cross_entropy"), std::string::npos) << m;
  EXPECT_NE(m.find("[3]"), std::string::npos) << m;
  EXPECT_NE(m.find("[4]"), std::string::npos) << m;
  EXPECT_NE(m.find("[4, 5]"), std::string::npos) << m;
}

TEST(NnOpsErrors, CrossEntropyClassIndexOutOfRange) {
  std::string m = shape_error_of([] { (void)cross_entropy(Var(zeros({2, 5})), from_vector(std::vector<int64_t>{1, 5}, {2})); });
  EXPECT_NE(m.find("cross_entropy"), std::string::npos) << m;
  EXPECT_NE(m.find("target value 5"), std::string::npos) << m;
  EXPECT_NE(m.find("5 classes"), std::string::npos) << m;
  EXPECT_NE(shape_error_of([] {
              (void)cross_entropy(Var(zeros({2, 5})), from_vector(std::vector<int64_t>{-1, 0}, {2}));
            }).find("target value -1"),
            std::string::npos);
  EXPECT_NE(shape_error_of([] {
              (void)cross_entropy(Var(zeros({2, 5})), zeros({2}, DType::i64), -100, 1.0);
            }).find("label_smoothing"),
            std::string::npos);
}

TEST(NnOpsErrors, LayerNormWeightShapeMismatch) {
  std::string m = shape_error_of([] { (void)layer_norm(Var(zeros({2, 8})), Var(ones({6})), Var(), 1e-5); });
  EXPECT_NE(m.find("layer_norm"), std::string::npos) << m;
  EXPECT_NE(m.find("weight"), std::string::npos) << m;
  EXPECT_NE(m.find("[6]"), std::string::npos) << m;
  EXPECT_NE(m.find("[8]"), std::string::npos) << m;
  EXPECT_NE(shape_error_of([] {
              (void)layer_norm(Var(zeros({2, 8})), Var(), Var(ones({2, 8})), 1e-5);
            }).find("bias"),
            std::string::npos);
}

TEST(NnOpsErrors, LossShapeAndMaskMismatch) {
  std::string m = shape_error_of([] { (void)mse_loss(Var(zeros({3, 4})), Var(zeros({4, 3}))); });
  EXPECT_NE(m.find("mse_loss"), std::string::npos) << m;
  EXPECT_NE(m.find("[4, 3]"), std::string::npos) << m;
  m = shape_error_of([] { (void)l1_loss(Var(zeros({3, 4})), Var(zeros({3, 4})), Reduction::mean, ones({2, 4})); });
  EXPECT_NE(m.find("l1_loss"), std::string::npos) << m;
  EXPECT_NE(m.find("[2, 4]"), std::string::npos) << m;
}
