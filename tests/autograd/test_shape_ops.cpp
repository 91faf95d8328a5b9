// tests/autograd/test_shape_ops.cpp - cat/stack/split/pad/flip/roll/cumsum/repeat_interleave: finite
// differences and PyTorch fixtures, plus views, masks and error messages.
#include "op_harness.h"

using namespace dl;
using namespace dl::test;

// clang-format off
static std::vector<OpCase> shape_cases() {
  return {
      {"cat_dim0", {randn_input({2, 3}), randn_input({4, 3})}, [](auto& x) { return cat({x[0], x[1]}, 0); }},
      {"cat_dim1", {randn_input({3, 2}), randn_input({3, 4}), randn_input({3, 1})}, [](auto& x) { return cat({x[0], x[1], x[2]}, 1); }},
      {"stack_dim1", {randn_input({3, 4}), randn_input({3, 4})}, [](auto& x) { return stack({x[0], x[1]}, 1); }},
      {"stack_last", {randn_input({3, 4}), randn_input({3, 4})}, [](auto& x) { return stack({x[0], x[1]}, -1); }},
      {"split_sizes", {randn_input({5, 4})},
       [](auto& x) {
         auto s = split(x[0], std::vector<int64_t>{2, 3}, 0);
         return cat({s[1] * 3.0, s[0] * 2.0}, 0);
       }},
      {"split_chunk", {randn_input({3, 7})},
       [](auto& x) {
         auto s = split(x[0], 3, 1);  // 3, 3, 1
         return cat({s[2], s[0] * 2.0, s[1]}, 1);
       }},
      {"pad_last", {randn_input({3, 4})}, [](auto& x) { return pad(x[0], {2, 1}, 0.5); }},
      {"pad_two_dims", {randn_input({2, 3, 4})}, [](auto& x) { return pad(x[0], {1, 2, 0, 1}); }},
      {"pad_negative", {randn_input({3, 5})}, [](auto& x) { return pad(x[0], {-1, 2}); }},
      {"flip", {randn_input({2, 3, 4})}, [](auto& x) { return flip(x[0], {0, 2}); }},
      {"roll", {randn_input({3, 5})}, [](auto& x) { return roll(x[0], 2, 1); }},
      {"roll_negative", {randn_input({4, 3})}, [](auto& x) { return roll(x[0], -1, 0); }},
      {"cumsum", {randn_input({3, 4})}, [](auto& x) { return cumsum(x[0], 1); }},
      {"cumsum_dim0", {randn_input({4, 3})}, [](auto& x) { return cumsum(x[0], 0); }},
      {"repeat_interleave", {randn_input({3, 2})}, [](auto& x) { return repeat_interleave(x[0], 2, 0); }},
  };
}
// clang-format on

DL_OP_TESTS(Shape, shape_cases());

TEST(ShapeOps, SplitReturnsViews) {
  Tensor x = arange(0.0, 12.0, 1.0).reshape({3, 4});
  auto parts = split(x, 3, 1);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[1].shape(), (Shape{3, 1}));
  EXPECT_TRUE(parts[0].shares_storage_with(x));
  EXPECT_EQ(parts[1].at({2, 0}), 11.0);
}

TEST(ShapeOps, TrilTriuMasks) {
  Tensor l = tril_mask(3, 4), u = triu_mask(3, 4, 1);
  EXPECT_EQ(l.to_vector(), (std::vector<float>{1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0}));
  EXPECT_EQ(u.to_vector(), (std::vector<float>{0, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1}));
}

TEST(ShapeOps, CumsumLargeMatchesSerial) {  // the multithreaded path (outer x inner chunks) vs a plain loop
  Generator g(3);
  Tensor x = randn({3, 50, 700}, g, DType::f64);
  for (int64_t dim : {0, 1, 2}) {
    for (bool rev : {false, true}) {
      Tensor y = cumsum(x, dim, rev), ref = zeros(x.shape(), DType::f64);
      int64_t n = x.size(dim);
      // reference by slices: ref.select(dim, j) = ref.select(dim, j -/+ 1) + x.select(dim, j)
      for (int64_t jj = 0; jj < n; jj++) {
        int64_t j = rev ? n - 1 - jj : jj;
        Tensor r = ref.select(dim, j);
        copy_into(r, x.select(dim, j));
        if (jj > 0) add_(r, ref.select(dim, rev ? j + 1 : j - 1));
      }
      EXPECT_TRUE(all_close(y, ref, kAgreeF64, "cumsum dim " + std::to_string(dim) + (rev ? " reverse" : "")));
    }
  }
}

TEST(ShapeErrors, CatMismatchedDimsNamesShapes) {
  try {
    (void)cat({ones({2, 3}), ones({2, 4})}, 0);
    FAIL() << "expected an error";
  } catch (const ShapeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("cat"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, 3]"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, 4]"), std::string::npos) << m;
  }
  EXPECT_THROW(split(ones({5}), std::vector<int64_t>{2, 2}, 0), ShapeError);
  EXPECT_THROW(pad(ones({3}), {-2, -2}), ShapeError);
}
