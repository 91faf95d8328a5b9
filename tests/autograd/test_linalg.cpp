// tests/autograd/test_linalg.cpp - matmul and linear: finite differences, PyTorch fixtures, a naive triple
// loop on odd sizes and transposed / broadcast operands, and the error messages.
#include "op_harness.h"

using namespace dl;
using namespace dl::test;

// clang-format off
static std::vector<OpCase> linalg_cases() {
  auto mm = [](auto& x) { return matmul(x[0], x[1]); };
  return {
      {"matmul_2d", {randn_input({3, 4}), randn_input({4, 5})}, mm},
      {"matmul_vec_mat", {randn_input({4}), randn_input({4, 3})}, mm},
      {"matmul_mat_vec", {randn_input({3, 4}), randn_input({4})}, mm},
      {"matmul_vec_vec", {randn_input({4}), randn_input({4})}, mm},
      {"matmul_batched", {randn_input({2, 3, 4}), randn_input({2, 4, 5})}, mm},
      {"matmul_shared_b", {randn_input({2, 3, 4}), randn_input({4, 5})}, mm},  // batch folded into M
      {"matmul_shared_a", {randn_input({3, 4}), randn_input({2, 4, 5})}, mm},  // da summed over the batch
      {"matmul_broadcast_batch", {randn_input({2, 1, 3, 4}), randn_input({3, 4, 2})}, mm},
      {"matmul_vec_batched", {randn_input({4}), randn_input({2, 4, 3})}, mm},
      {"matmul_batched_vec", {randn_input({2, 3, 4}), randn_input({4})}, mm},
      {"matmul_transposed", {randn_input({2, 4, 3}), randn_input({5, 4})},
       [](auto& x) { return matmul(transpose(x[0], -1, -2), transpose(x[1], -1, -2)); }},
      {"linear", {randn_input({2, 3, 4}), randn_input({5, 4}), randn_input({5})}, [](auto& x) { return linear(x[0], x[1], x[2]); }},
      {"linear_nobias", {randn_input({3, 4}), randn_input({5, 4})}, [](auto& x) { return linear(x[0], x[1]); }},
      {"linear_1d", {randn_input({4}), randn_input({5, 4}), randn_input({5})}, [](auto& x) { return linear(x[0], x[1], x[2]); }},
  };
}
// clang-format on

DL_OP_TESTS(Linalg, linalg_cases());

// ---- two algorithms agree: sgemm paths vs a naive triple loop ----
// Reference: out[batch, i, j] = sum_k a[batch, i, k] b[batch, k, j] with broadcasting, in double.
static Tensor naive_matmul(const Tensor& a, const Tensor& b) {
  Shape full =
      broadcast_shapes(Shape(a.shape().begin(), a.shape().end() - 2), Shape(b.shape().begin(), b.shape().end() - 2), "naive");
  int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1), nb = shape_numel(full);
  Shape fa = full, fb = full, fo = full;
  fa.insert(fa.end(), {M, K});
  fb.insert(fb.end(), {K, N});
  fo.insert(fo.end(), {M, N});
  Tensor ea = a.expand(fa).to(DType::f64).contiguous(), eb = b.expand(fb).to(DType::f64).contiguous();
  Tensor out = zeros(fo, DType::f64);
  const double *pa = ea.data<double>(), *pb = eb.data<double>();
  double* po = out.data<double>();
  for (int64_t z = 0; z < nb; z++)
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double s = 0;
        for (int64_t k = 0; k < K; k++) s += pa[(z * M + i) * K + k] * pb[(z * K + k) * N + j];
        po[(z * M + i) * N + j] = s;
      }
  return out;
}

// float32 sums over K = 29..61 terms of O(1) products: a few ulp of sqrt(K) * |terms|
static constexpr Tol kMatmulF32{1e-4, 1e-4};

TEST(LinalgAgree, MatmulMatchesNaiveOnOddSizesAndLayouts) {
  Generator g(7);
  for (DType dt : {DType::f32, DType::f64}) {
    Tol tol = dt == DType::f32 ? kMatmulF32 : kAgreeF64;
    struct Case {
      Tensor a, b;
      const char* what;
    };
    std::vector<Case> cases = {
        {randn({37, 29}, g, dt), randn({29, 41}, g, dt), "2-D"},
        {randn({29, 37}, g, dt).transpose(0, 1), randn({29, 41}, g, dt), "a transposed"},
        {randn({37, 29}, g, dt), randn({41, 29}, g, dt).transpose(0, 1), "b transposed"},
        {randn({29, 37}, g, dt).transpose(0, 1), randn({41, 29}, g, dt).transpose(0, 1), "both transposed"},
        {randn({3, 5, 37, 29}, g, dt), randn({29, 41}, g, dt), "shared b (fold into M)"},
        {randn({3, 5, 29, 37}, g, dt).transpose(-1, -2), randn({29, 41}, g, dt), "shared b, a transposed"},
        {randn({37, 29}, g, dt), randn({3, 29, 41}, g, dt), "shared a"},
        {randn({2, 1, 7, 13}, g, dt), randn({3, 13, 5}, g, dt), "broadcast batch"},
        {randn({2, 1, 13, 7}, g, dt).transpose(-1, -2), randn({3, 5, 13}, g, dt).transpose(-1, -2),
         "broadcast batch, transposed"},
        {randn({4, 61, 3}, g, dt).narrow(1, 3, 31).transpose(-1, -2), randn({4, 31, 9}, g, dt), "narrowed, strided rows"},
        {randn({1, 13}, g, dt).expand({7, 13}), randn({13, 5}, g, dt), "expanded (stride-0) a"},
    };
    for (auto& c : cases) EXPECT_TRUE(all_close(matmul(c.a, c.b), naive_matmul(c.a, c.b), tol, c.what)) << dtype_name(dt);
  }
}

TEST(LinalgAgree, MatmulBackwardFoldedMatchesNaive) {
  // (B, T, C) @ (C, D): da via the fold-into-M path, db via the fold-into-K path (one sgemm each).
  Generator g(8);
  Tensor a = randn({3, 17, 11}, g, DType::f64), b = randn({11, 13}, g, DType::f64), dy = randn({3, 17, 13}, g, DType::f64);
  MatmulGrads gr = matmul_backward(a, b, dy, true, true);
  EXPECT_TRUE(all_close(gr.da, naive_matmul(dy, b.transpose(0, 1)), kAgreeF64, "da"));
  // db = sum_b a_b^T dy_b
  Tensor db = zeros({11, 13}, DType::f64);
  for (int64_t z = 0; z < 3; z++) add_(db, naive_matmul(a.select(0, z).transpose(0, 1), dy.select(0, z)));
  EXPECT_TRUE(all_close(gr.db, db, kAgreeF64, "db"));
  // linear's dw is the same fold
  LinearGrads lg = linear_backward(a, b.transpose(0, 1), dy, true, true, true);
  EXPECT_TRUE(all_close(lg.dw, db.transpose(0, 1), kAgreeF64, "linear dw"));
  EXPECT_TRUE(all_close(lg.dx, gr.da, kAgreeF64, "linear dx"));
}

TEST(LinalgAgree, LinearEqualsMatmulPlusBias) {
  Generator g(9);
  Tensor x = randn({4, 6, 10}, g), w = randn({7, 10}, g), b = randn({7}, g);
  EXPECT_TRUE(all_close(linear(x, w, b), add(matmul(x, w.transpose(0, 1)), b), kAgreeF32, "linear"));
}

// ---- errors ----
TEST(LinalgErrors, InnerDimMismatchNamesBothShapes) {
  try {
    (void)matmul(ones({2, 3, 4}), ones({5, 6}));
    FAIL() << "expected an error";
  } catch (const ShapeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("matmul"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, 3, 4]"), std::string::npos) << m;
    EXPECT_NE(m.find("[5, 6]"), std::string::npos) << m;
  }
}

TEST(LinalgErrors, BatchMismatchAndLinearShapes) {
  EXPECT_THROW(matmul(ones({2, 3, 4}), ones({3, 4, 5})), ShapeError);
  try {
    (void)linear(ones({2, 4}), ones({5, 3}), Tensor());
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[5, 3]"), std::string::npos) << e.what();
  }
}
