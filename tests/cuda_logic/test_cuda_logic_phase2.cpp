// tests/cuda_logic/test_cuda_logic_phase2.cpp - the device functors added for a training step on the device (issue 16
// phase 2) agree with tensor/'s CPU kernels, run on the CPU through thrust::cpp::par: sin / cos / sign / elu,
// var, cumsum, gather, scatter_add, index_add, one_hot. Inputs are random views (tests/cuda_logic/logic_util.h);
// exact where both sides do the same arithmetic in the same order (the adds, cumsum, sign, gather), kAgree* for
// libm differences (sin, cos, expm1 are the same calls here, so those are exact too on this side; the GPU's
// sinf / expm1f are not, which is why tests/cuda uses the tolerances).
#include <gtest/gtest.h>

#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/gather.cuh"
#include "cuda/ops/reduce.cuh"
#include "logic_util.h"

namespace dl {
namespace {

Tensor cpu_unary_ext(ExtUnaryOp op, double alpha, const Tensor& x) {
  switch (op) {
    case ExtUnaryOp::sin: return sin(x);
    case ExtUnaryOp::cos: return cos(x);
    case ExtUnaryOp::sign: return sign(x);
    case ExtUnaryOp::elu: return elu(x, alpha);
  }
  return Tensor();
}

TEST(CudaLogic, UnaryExtOnViews) {
  Generator g(21);
  for (ExtUnaryOp op : {ExtUnaryOp::sin, ExtUnaryOp::cos, ExtUnaryOp::sign, ExtUnaryOp::elu})
    for (DType t : {DType::f32, DType::f64, DType::i64}) {
      if (t == DType::i64 && op != ExtUnaryOp::sign) continue;
      for (Shape s : {Shape{}, Shape{7, 13, 5}, Shape{3, 1, 129}}) {
        Tensor x = random_view(s, g, t);
        if (t != DType::i64) x = mul_scalar(x, 3.0);
        Tensor out = Tensor::empty(s, t);
        ops::unary_ext(host_par, op, 0.7, x, out);
        EXPECT_TRUE(all_close(out, cpu_unary_ext(op, 0.7, x), agree(t),
                              "unary_ext " + std::to_string((int)op) + " " + dtype_name(t) + " " + shape_str(s)));
      }
    }
}

// var (both estimators) over the same dim sets as the other reductions, x a permuted view: the device ReduceF's
// two passes in f64 against tensor/reduce.cpp's.
TEST(CudaLogic, VarianceOverAnyDims) {
  Generator g(22);
  for (DType t : {DType::f32, DType::f64})
    for (Dims dims : {Dims{}, Dims{0}, Dims{2}, Dims{0, 2}, Dims{1, 3}})
      for (bool unbiased : {false, true}) {
        Tensor x = add_scalar(random_view({3, 4, 5, 6}, g, t), 10.0);  // an offset mean: cancellation would show
        std::vector<bool> red(4, dims.empty());
        for (int64_t d : dims) red[d] = true;
        std::vector<int64_t> perm;
        for (int64_t d = 0; d < 4; d++)
          if (!red[d]) perm.push_back(d);
        int64_t nkept = (int64_t)perm.size();
        for (int64_t d = 0; d < 4; d++)
          if (red[d]) perm.push_back(d);
        Tensor want = var(x, dims, unbiased, false);
        Tensor out = Tensor::empty(want.shape(), t);
        ops::reduce(host_par, unbiased ? ReduceOp::var_unbiased : ReduceOp::var, x.permute(perm), nkept, out, Tensor());
        EXPECT_TRUE(all_close(out, want, agree(t), std::string("var ") + dtype_name(t) + (unbiased ? " unbiased" : "")));
      }
}

TEST(CudaLogic, CumsumEveryDimBothWays) {
  Generator g(23);
  for (DType t : {DType::f32, DType::f64, DType::i64})
    for (int64_t d = 0; d < 3; d++)
      for (bool rev : {false, true}) {
        Tensor x = random_view({4, 5, 6}, g, t).contiguous();
        Tensor out = Tensor::empty(x.shape(), t);
        ops::cumsum(host_par, x, d, rev, out);
        EXPECT_TRUE(all_close(out, cumsum(x, d, rev), kExact,
                              std::string("cumsum ") + dtype_name(t) + " dim " + std::to_string(d) + (rev ? " reverse" : "")));
      }
}

// An index of shape is (fits in `of` except along d) with values in [0, bound).
Tensor random_index(const Shape& is, int64_t bound, Generator& g) { return randint(0, bound, is, g); }

TEST(CudaLogic, GatherAlongEveryDimFromViews) {
  Generator g(24);
  for (DType t : {DType::f32, DType::i64})
    for (int64_t d = 0; d < 3; d++) {
      Tensor x = random_view({5, 6, 7}, g, t);
      Shape is{4, 5, 3};
      is[d] = 9;  // longer than x along d: indices repeat
      Tensor idx = random_index(is, x.size(d), g);
      Tensor out = Tensor::empty(is, t);
      ops::gather(host_par, x, d, idx, out);
      EXPECT_TRUE(all_close(out, gather(x, d, idx), kExact, "gather dim " + std::to_string(d)));
    }
}

// Repeated indices add up in the CPU's order (one thread per (o, i), j in order), so the sums are exact.
TEST(CudaLogic, ScatterAddAlongEveryDimRepeatedIndices) {
  Generator g(25);
  for (DType t : {DType::f32, DType::f64, DType::i64})
    for (int64_t d = 0; d < 3; d++) {
      Tensor base = random_view({5, 6, 7}, g, t);
      Shape is{4, 5, 3};
      is[d] = 9;
      Tensor idx = random_index(is, base.size(d), g);
      Tensor src = random_view(is, g, t);  // a view: scatter_add reads src through its strides
      Tensor out = base.contiguous().clone();
      ops::scatter_add(host_par, out, d, idx, src);
      EXPECT_TRUE(all_close(out, scatter_add(base, d, idx, src), kExact, std::string("scatter_add ") + dtype_name(t) + " dim " +
                                                                              std::to_string(d)));
    }
}

TEST(CudaLogic, IndexAddAlongEveryDim) {
  Generator g(26);
  for (DType t : {DType::f32, DType::f64})
    for (int64_t d = 0; d < 3; d++) {
      Tensor out = random_view({5, 6, 7}, g, t).contiguous().clone();
      Tensor idx = random_index({11}, out.size(d), g);
      Shape ss = out.shape();
      ss[d] = 11;
      Tensor src = random_view(ss, g, t).contiguous();
      Tensor want = out.clone();
      index_add_(want, d, idx, src);
      ops::index_add(host_par, out, d, idx, src);
      EXPECT_TRUE(all_close(out, want, kExact, "index_add dim " + std::to_string(d)));
    }
}

TEST(CudaLogic, OneHotEveryDtype) {
  Generator g(27);
  for (DType t : {DType::f32, DType::f64, DType::i64}) {
    Tensor idx = random_index({3, 4}, 6, g);
    Tensor out = Tensor::empty({3, 4, 6}, t);
    ops::one_hot(host_par, idx, out);
    EXPECT_TRUE(all_close(out, one_hot(idx, 6, t), kExact, std::string("one_hot ") + dtype_name(t)));
  }
}

}  // namespace
}  // namespace dl
