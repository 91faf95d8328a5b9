// tests/autograd/test_indexing.cpp - gather/scatter_add/index_select/embedding: finite differences and
// PyTorch fixtures, embedding backward vs a serial scatter, one_hot, and out-of-range messages.
#include "op_harness.h"

using namespace dl;
using namespace dl::test;

// clang-format off
static std::vector<OpCase> indexing_cases() {
  return {
      {"gather_dim1", {randn_input({3, 5}), randint_input({3, 4}, 0, 5)}, [](auto& x) { return gather(x[0], 1, x[1].data()); }},
      {"gather_dim0", {randn_input({4, 3}), randint_input({2, 3}, 0, 4)}, [](auto& x) { return gather(x[0], 0, x[1].data()); }},
      {"gather_3d", {randn_input({2, 3, 4}), randint_input({2, 2, 4}, 0, 3)}, [](auto& x) { return gather(x[0], 1, x[1].data()); }},
      {"scatter_add", {randn_input({3, 5}), randint_input({3, 4}, 0, 5), randn_input({3, 4})},
       [](auto& x) { return scatter_add(x[0], 1, x[1].data(), x[2]); }},
      {"index_select_dim0", {randn_input({5, 3}), randint_input({4}, 0, 5)},
       [](auto& x) { return index_select(x[0], 0, x[1].data()); }},
      {"index_select_dim1", {randn_input({3, 5}), randint_input({6}, 0, 5)},
       [](auto& x) { return index_select(x[0], 1, x[1].data()); }},
      {"embedding", {randn_input({7, 4}), randint_input({2, 5}, 0, 7)}, [](auto& x) { return embedding(x[0], x[1].data()); }},
  };
}
// clang-format on

DL_OP_TESTS(Indexing, indexing_cases());

TEST(IndexingAgree, EmbeddingBackwardEqualsSerialScatter) {
  // large enough for the multithreaded path (each thread owns a range of rows of dW)
  Generator g(11);
  const int64_t V = 97, D = 64;
  Tensor idx = randint(0, V, {8, 300}, g);
  Tensor dy = randn({8, 300, D}, g);
  Tensor dw = embedding_backward(dy, idx, V);
  Tensor ref = zeros({V, D});
  const int64_t* pi = idx.data<int64_t>();
  const float* pg = dy.data<float>();
  float* pr = ref.data<float>();
  for (int64_t n = 0; n < idx.numel(); n++)
    for (int64_t k = 0; k < D; k++) pr[pi[n] * D + k] += pg[n * D + k];
  // same summation order per row (index order) as the serial loop: identical bits
  EXPECT_TRUE(all_close(dw, ref, Tol{0, 0}, "embedding dW"));
}

TEST(IndexingAgree, ScatterAddAndIndexAddLargeMatchSerial) {
  Generator g(12);
  Tensor x = randn({4, 40, 600}, g, DType::f64);
  Tensor idx = randint(0, 40, {4, 90, 600}, g);
  Tensor src = randn({4, 90, 600}, g, DType::f64);
  Tensor out = scatter_add(x, 1, idx, src), ref = x.clone();
  const int64_t* pi = idx.data<int64_t>();
  for (int64_t o = 0; o < 4; o++)
    for (int64_t j = 0; j < 90; j++)
      for (int64_t i = 0; i < 600; i++)
        ref.data<double>()[(o * 40 + pi[(o * 90 + j) * 600 + i]) * 600 + i] += src.data<double>()[(o * 90 + j) * 600 + i];
  EXPECT_TRUE(all_close(out, ref, kAgreeF64, "scatter_add"));
  // gather is its adjoint: <gather(x), s> == <x, scatter_add(0, s)>
  Tensor gx = gather(x, 1, idx), sc = scatter_add(zeros(x.shape(), DType::f64), 1, idx, src);
  double l = 0, r = 0;
  for (int64_t i = 0; i < gx.numel(); i++) l += gx.data<double>()[i] * src.data<double>()[i];
  for (int64_t i = 0; i < x.numel(); i++) r += x.data<double>()[i] * sc.data<double>()[i];
  EXPECT_NEAR(l, r, 1e-8 * std::abs(l) + 1e-8);
  // index_add with repeated indices
  Tensor ii = randint(0, 40, {100}, g);
  Tensor s2 = randn({4, 100, 600}, g, DType::f64), o2 = zeros({4, 40, 600}, DType::f64);
  index_add_(o2, 1, ii, s2);
  Tensor r2 = zeros({4, 40, 600}, DType::f64);
  for (int64_t j = 0; j < 100; j++) add_(r2.select(1, ii.data<int64_t>()[j]), s2.select(1, j));
  EXPECT_TRUE(all_close(o2, r2, kAgreeF64, "index_add"));
}

TEST(Indexing, OneHot) {
  Tensor idx = from_vector(std::vector<int64_t>{2, 0, 1}, {3});
  EXPECT_EQ(one_hot(idx, 3).to_vector(), (std::vector<float>{0, 0, 1, 1, 0, 0, 0, 1, 0}));
}

TEST(IndexingErrors, GatherOutOfRangeNamesValueAndBound) {
  Tensor x = ones({2, 5});
  Tensor idx = from_vector(std::vector<int64_t>{0, 7, 1, 2}, {2, 2});
  try {
    (void)gather(x, 1, idx);
    FAIL() << "expected an error";
  } catch (const ShapeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("gather"), std::string::npos) << m;
    EXPECT_NE(m.find("7"), std::string::npos) << m;
    EXPECT_NE(m.find("size 5"), std::string::npos) << m;
  }
  EXPECT_THROW(embedding(ones({4, 2}), from_vector(std::vector<int64_t>{4}, {1})), ShapeError);
  EXPECT_THROW(index_select(ones({4, 2}), 0, from_vector(std::vector<int64_t>{-1}, {1})), ShapeError);
  EXPECT_THROW(gather(x, 1, ones({2, 2})), ShapeError);  // float index
}
