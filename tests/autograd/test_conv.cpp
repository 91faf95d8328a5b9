// tests/autograd/test_conv.cpp - conv1d (plain, causal dilated, strided with asymmetric padding, depthwise with
// and without a channel multiplier, grouped, no bias): finite differences, PyTorch fixtures, a naive loop for
// forward and both gradients, and the channel-mismatch message.
#include "op_harness.h"

using namespace dl;
using namespace dl::test;

static OpFn conv_fn(Conv1dParams p, bool bias = true) {
  return [p, bias](const std::vector<Var>& x) { return conv1d(x[0], x[1], bias ? x[2] : Var(), p); };
}

// clang-format off
static std::vector<OpCase> conv_cases() {
  return {
      {"conv1d_basic", {randn_input({2, 3, 10}), randn_input({4, 3, 3}), randn_input({4})}, conv_fn({})},
      {"conv1d_causal_dilated", {randn_input({2, 3, 12}), randn_input({4, 3, 3}), randn_input({4})},
       conv_fn({.pad_left = 4, .dilation = 2})},
      {"conv1d_stride_pad", {randn_input({2, 3, 11}), randn_input({4, 3, 3}), randn_input({4})},
       conv_fn({.stride = 2, .pad_left = 1, .pad_right = 2})},
      {"conv1d_depthwise", {randn_input({2, 4, 10}), randn_input({4, 1, 3}), randn_input({4})},
       conv_fn({.pad_left = 2, .groups = 4})},
      {"conv1d_depthwise_mult", {randn_input({2, 3, 9}), randn_input({6, 1, 2}), randn_input({6})},
       conv_fn({.pad_left = 3, .dilation = 3, .groups = 3})},
      {"conv1d_groups2", {randn_input({2, 4, 9}), randn_input({6, 2, 3}), randn_input({6})},
       conv_fn({.pad_left = 1, .pad_right = 1, .groups = 2})},
      {"conv1d_nobias", {randn_input({1, 2, 7}), randn_input({3, 2, 4})}, conv_fn({.stride = 3}, false)},
  };
}
// clang-format on

DL_OP_TESTS(Conv, conv_cases());

// The definition, as loops in double: y[b,o,t] = bias[o] + sum_{c,k} w[o,c,k] xpad[b, g(o)*Cig + c, t*s + k*d]
// and its adjoint for a given dy.
struct NaiveConv {
  Tensor y, dx, dw, db;
};
static NaiveConv naive_conv(const Tensor& x_, const Tensor& w_, const Tensor& b_, const Tensor& dy_, Conv1dParams p) {
  Tensor x = x_.to(DType::f64).contiguous(), w = w_.to(DType::f64).contiguous(), b = b_.to(DType::f64).contiguous();
  int64_t B = x.size(0), Cin = x.size(1), L = x.size(2), Cout = w.size(0), Cig = w.size(1), K = w.size(2);
  int64_t Cog = Cout / p.groups, Lout = conv1d_out_length(L, K, p);
  Tensor dy = dy_.to(DType::f64).contiguous();
  NaiveConv r{zeros({B, Cout, Lout}, DType::f64), zeros(x.shape(), DType::f64), zeros(w.shape(), DType::f64),
              zeros({Cout}, DType::f64)};
  const double *px = x.data<double>(), *pw = w.data<double>(), *pb = b.data<double>(), *pg = dy.data<double>();
  double *py = r.y.data<double>(), *pdx = r.dx.data<double>(), *pdw = r.dw.data<double>(), *pdb = r.db.data<double>();
  for (int64_t bb = 0; bb < B; bb++)
    for (int64_t o = 0; o < Cout; o++)
      for (int64_t t = 0; t < Lout; t++) {
        double s = pb[o], gy = pg[(bb * Cout + o) * Lout + t];
        pdb[o] += gy;
        for (int64_t c = 0; c < Cig; c++)
          for (int64_t k = 0; k < K; k++) {
            int64_t pos = t * p.stride + k * p.dilation - p.pad_left, ci = (o / Cog) * Cig + c;
            if (pos < 0 || pos >= L) continue;
            s += pw[(o * Cig + c) * K + k] * px[(bb * Cin + ci) * L + pos];
            pdx[(bb * Cin + ci) * L + pos] += pw[(o * Cig + c) * K + k] * gy;
            pdw[(o * Cig + c) * K + k] += px[(bb * Cin + ci) * L + pos] * gy;
          }
        py[(bb * Cout + o) * Lout + t] = s;
      }
  return r;
}

TEST(ConvAgree, Conv1dMatchesNaiveLoop) {
  Generator g(31);
  struct Case {
    Shape x, w;
    Conv1dParams p;
  };
  std::vector<Case> cases = {
      {{3, 5, 40}, {7, 5, 3}, {}},
      {{2, 6, 33}, {4, 6, 4}, {.pad_left = 9, .dilation = 3}},                             // causal dilated
      {{2, 6, 31}, {8, 3, 5}, {.stride = 2, .pad_left = 2, .pad_right = 3, .groups = 2}},  // grouped, strided
      {{3, 8, 50}, {8, 1, 4}, {.pad_left = 6, .dilation = 2, .groups = 8}},                // depthwise causal
      {{2, 4, 29}, {8, 1, 3}, {.stride = 3, .pad_left = 1, .pad_right = 1, .groups = 4}},  // depthwise, multiplier 2
      {{10, 64, 4096}, {2, 64, 8}, {.pad_left = 7}},  // cols (512 x 4096 per batch) split into batch chunks
  };
  for (auto& c : cases) {
    for (DType dt : {DType::f64, DType::f32}) {
      Tensor x = randn(c.x, g, dt), w = randn(c.w, g, dt), b = randn({c.w[0]}, g, dt);
      Tensor y = conv1d(x, w, b, c.p);
      Tensor dy = randn(y.shape(), g, dt);
      Conv1dGrads gr = conv1d_backward(x, w, dy, c.p, true, true, true);
      NaiveConv ref = naive_conv(x, w, b, dy, c.p);
      // float32: sums over Cin*K up to 512 terms and over B*Lout up to 41K terms for dw
      Tol tol = dt == DType::f64 ? kAgreeF64 : Tol{1e-3, 1e-3};
      std::string what = shape_str(c.x) + " * " + shape_str(c.w) + " " + dtype_name(dt);
      EXPECT_TRUE(all_close(y, ref.y, tol, "y " + what));
      EXPECT_TRUE(all_close(gr.dx, ref.dx, tol, "dx " + what));
      EXPECT_TRUE(all_close(gr.dw, ref.dw, dt == DType::f64 ? kAgreeF64 : Tol{1e-3, 2e-2}, "dw " + what));
      EXPECT_TRUE(all_close(gr.db, ref.db, dt == DType::f64 ? kAgreeF64 : Tol{1e-3, 2e-2}, "db " + what));
    }
  }
}

TEST(ConvErrors, ChannelMismatchNamesShapes) {
  try {
    (void)conv1d(ones({2, 4, 10}), ones({8, 3, 3}), Tensor());
    FAIL() << "expected an error";
  } catch (const ShapeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("conv1d"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, 4, 10]"), std::string::npos) << m;
    EXPECT_NE(m.find("[8, 3, 3]"), std::string::npos) << m;
  }
  EXPECT_THROW(conv1d(ones({1, 4, 10}), ones({6, 2, 3}), Tensor(), {.groups = 3}), ShapeError);  // 3 does not divide 4
  EXPECT_THROW(conv1d(ones({1, 2, 3}), ones({2, 2, 5}), Tensor()), ShapeError);                  // too short
}
