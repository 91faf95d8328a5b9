// tests/cuda_logic/test_cuda_logic.cpp - the device ops of cuda/ops/ agree with tensor/'s CPU kernels,
// run on the CPU.
//
// cuda/ops/*.cuh are Thrust algorithms over __host__ __device__ functors. The CUDA backend runs them with
// thrust::cuda::par; here the same launch functions run with thrust::cpp::par on CPU tensors (raw host
// pointers), so their index arithmetic (strides, broadcasting, permuted reductions) and their formulas
// are checked on every machine, GPU or not. The reference is the CPU op of tensor/ on the same input;
// inputs are random views (permuted, narrowed, expanded) of random odd shapes. Tolerances: exact where
// the two do the same arithmetic (copies, add, comparisons, max), kAgreeF32/kAgreeF64 otherwise.
// What this does not test: the CUDA compiler, the launch, device memory. tests/cuda does that on a GPU.
#include <gtest/gtest.h>
#include <thrust/system/cpp/execution_policy.h>

#include <algorithm>
#include <array>
#include <memory>
#include <cmath>
#include <string>
#include <vector>

#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/index.cuh"
#include "cuda/ops/nn.cuh"
#include "cuda/ops/optim.cuh"
#include "cuda/ops/reduce.cuh"
#include "logic_util.h"
#include "optim/adam.h"
#include "optim/clip.h"
#include "op_harness.h"
#include "tensor/ops.h"
#include "tolerance.h"

namespace dl {
namespace {

// ---------------------------------------------------------------------------------------------
// Strided::offset, the index map of every strided op: the 32-bit path (index spaces below 2^31 elements) and the
// 64-bit one agree with the plain row-major sum over the dims, for merged layouts of up to 5 dims with transposed and
// broadcast (stride 0) operands; a space of 2^31 elements or more takes the 64-bit path.
TEST(CudaLogic, StridedOffsetIsTheRowMajorSumInBothWidths) {
  Generator g(11);
  for (int trial = 0; trial < 200; trial++) {
    const int rank = 1 + (int)(g.next_u64() % 5);
    Shape shape, strides;
    for (int d = 0; d < rank; d++) shape.push_back(2 + (int64_t)(g.next_u64() % 7));
    for (int d = 0; d < rank; d++) strides.push_back((int64_t)(g.next_u64() % 4) * (1 + (int64_t)(g.next_u64() % 50)));
    ops::Strided s = ops::merge_dims(shape, {strides}, "test")[0];
    ASSERT_TRUE(s.narrow);
    ops::Strided w = s;
    w.narrow = false;
    const int64_t n = shape_numel(shape);
    for (int64_t i = 0; i < n; i += 1 + (int64_t)(g.next_u64() % 3)) {
      int64_t want = 0, r = i;
      for (int d = rank - 1; d >= 0; d--) want += (r % shape[d]) * strides[d], r /= shape[d];
      ASSERT_EQ(s.offset(i), want) << "narrow, i " << i << " of " << shape_str(shape) << " strides " << shape_str(strides);
      ASSERT_EQ(w.offset(i), want) << "wide, i " << i << " of " << shape_str(shape) << " strides " << shape_str(strides);
    }
  }
  // 2^31 elements and more: 64-bit divisions, and offsets past 2^32
  const Shape big = {3, 1 << 20, 1024};
  ops::Strided b = ops::merge_dims(big, {Shape{1, 3 << 10, 3}}, "test")[0];  // dim 0 transposed; dims 1, 2 merge
  EXPECT_FALSE(b.narrow);
  const int64_t i = 3LL * (1 << 20) * 1024 - 5;  // the last row's 1020th element
  EXPECT_EQ(b.offset(i), 2LL + ((1LL << 20) - 1) * (3LL << 10) + 1019LL * 3);  // past 2^32
  EXPECT_TRUE(ops::merge_dims({1 << 30}, {Shape{1}}, "test")[0].narrow);
  EXPECT_FALSE(ops::merge_dims({1LL << 31}, {Shape{1}}, "test")[0].narrow);
}

// ---------------------------------------------------------------------------------------------
// Strided copy: contiguous() of any view, and a copy into a non-contiguous destination.
TEST(CudaLogic, CopyStridedEqualsContiguous) {
  Generator g(1);
  for (int trial = 0; trial < 60; trial++) {
    Shape s = random_shape(g);
    for (DType t : {DType::f32, DType::f64, DType::i64}) {
      Tensor src = random_view(s, g, t);
      Tensor out = Tensor::empty(s, t);
      ops::copy_strided(host_par, src, out);
      EXPECT_TRUE(all_close(out, src.contiguous(), kExact, "copy of view " + shape_str(s)));
      // into a view: the transpose of a fresh buffer
      if (s.size() >= 2) {
        Tensor buf = Tensor::empty(src.transpose(0, 1).shape(), t);
        Tensor dst = buf.transpose(0, 1);
        ops::copy_strided(host_par, src, dst);
        EXPECT_TRUE(all_close(dst, src, kExact, "copy into a transposed view " + shape_str(s)));
      }
    }
  }
  // broadcast source (stride 0): a row expanded to a matrix
  Tensor row = randn({1, 9}, g);
  Tensor out = Tensor::empty({5, 9});
  ops::copy_strided(host_par, row.expand({5, 9}), out);
  EXPECT_TRUE(all_close(out, row.expand({5, 9}).contiguous(), kExact, "expanded row"));
  // empty tensors are a no-op
  Tensor e = Tensor::empty({0, 3});
  ops::copy_strided(host_par, Tensor::empty({0, 3}), e);
}

// to(dtype) of views, every pair of dtypes (float to i64 truncates toward 0, as the CPU's cast).
TEST(CudaLogic, CastEveryDtypePair) {
  Generator g(12);
  for (DType from : {DType::f32, DType::f64, DType::i64})
    for (DType to : {DType::f32, DType::f64, DType::i64})
      for (Shape s : {Shape{}, Shape{3, 5, 4}, Shape{7, 1}}) {
        Tensor x = random_view(s, g, from);
        if (from != DType::i64) x = mul_scalar(x, 5.0);
        Tensor out = Tensor::empty(s, to);
        ops::cast(host_par, x, out);
        EXPECT_TRUE(all_close(out, x.to(to), kExact, std::string("cast ") + dtype_name(from) + " -> " + dtype_name(to) + " " + shape_str(s)));
      }
}

// where(cond, a, b) with all three broadcasting, cond of another dtype (0.5 is true for f32 a, false for i64 a).
TEST(CudaLogic, WhereBroadcastingAnyCondDtype) {
  Generator g(13);
  for (DType t : {DType::f32, DType::f64, DType::i64})
    for (DType ct : {DType::f32, DType::i64}) {
      Tensor cond = ct == DType::i64 ? randint(0, 2, {4, 1, 6}, g) : mul_scalar(randint(0, 3, {4, 1, 6}, g).to(DType::f32), 0.5);
      Tensor a = random_view({5, 6}, g, t), b = random_view({4, 5, 1}, g, t);
      Tensor want = where(cond, a, b);
      Shape s = want.shape();
      Tensor out = Tensor::empty(s, t);
      ops::where(host_par, cond.expand(s), a.expand(s), b.expand(s), out);
      EXPECT_TRUE(all_close(out, want, kExact, std::string("where ") + dtype_name(t) + " cond " + dtype_name(ct)));
    }
}

// ---------------------------------------------------------------------------------------------
const std::vector<UnaryOp> kUnaryOps = {UnaryOp::neg,     UnaryOp::exp,  UnaryOp::log,      UnaryOp::sqrt,     UnaryOp::rsqrt,
                                        UnaryOp::abs,     UnaryOp::tanh, UnaryOp::sigmoid,  UnaryOp::relu,     UnaryOp::gelu_erf,
                                        UnaryOp::gelu_tanh, UnaryOp::silu, UnaryOp::softplus};

bool needs_positive(UnaryOp op) { return op == UnaryOp::log || op == UnaryOp::sqrt || op == UnaryOp::rsqrt; }

// Inputs a unary op is defined on: (0.1, 3) for log/sqrt/rsqrt, else N(0, 9) with a few beyond softplus's 20.
Tensor unary_input(UnaryOp op, const Shape& s, Generator& g, DType t) {
  Tensor v = random_view(s, g, t);
  if (needs_positive(op)) return add_scalar(mul_scalar(abs(v), 0.9), 0.1);
  return mul_scalar(v, op == UnaryOp::softplus ? 9.0 : 3.0);
}

TEST(CudaLogic, UnaryEveryOpOnViews) {
  Generator g(2);
  for (UnaryOp op : kUnaryOps)
    for (DType t : {DType::f32, DType::f64})
      for (Shape s : {Shape{}, Shape{1}, Shape{7, 13, 5}, Shape{3, 1, 129}}) {
        Tensor x = unary_input(op, s, g, t);
        Tensor out = Tensor::empty(s, t);
        ops::unary(host_par, op, x, out);
        EXPECT_TRUE(all_close(out, unary(op, x), agree(t), "unary op " + std::to_string((int)op) + " " + dtype_name(t) + " " +
                                                               shape_str(s)));
      }
}

// dx = op'(x) dy against tensor/'s unary_backward, with dy broadcasting against x (and x against dy).
TEST(CudaLogic, UnaryBackwardEveryOp) {
  Generator g(3);
  for (UnaryOp op : kUnaryOps)
    for (DType t : {DType::f32, DType::f64})
      for (auto [sx, sg] : std::vector<std::pair<Shape, Shape>>{{{6, 5, 3}, {6, 5, 3}}, {{4, 1}, {4, 7}}, {{1, 7}, {3, 1}}}) {
        Tensor x = unary_input(op, sx, g, t), y = unary(op, x), dy = random_view(sg, g, t);
        Tensor expected = unary_backward(op, x, y, dy);
        const Tensor& xy = unary_backward_uses_y(op) ? y : x;
        Shape s = broadcast_shapes(xy.shape(), dy.shape(), "test");
        Tensor dx = Tensor::empty(s, t);
        ops::unary_backward(host_par, op, xy.expand(s), dy.expand(s), dx);
        EXPECT_TRUE(all_close(dx, expected, agree(t), "unary_backward op " + std::to_string((int)op) + " " + dtype_name(t) + " x " +
                                                          shape_str(sx) + " dy " + shape_str(sg)));
      }
}

// ---------------------------------------------------------------------------------------------
// Every binary op, broadcasting random shapes against each other, on views, in every dtype.
Tensor cpu_binary(ops::BinaryCode op, const Tensor& a, const Tensor& b) {
  switch (op) {
    case ops::BinaryCode::add: return add(a, b);
    case ops::BinaryCode::sub: return sub(a, b);
    case ops::BinaryCode::mul: return mul(a, b);
    case ops::BinaryCode::div: return div(a, b);
    case ops::BinaryCode::pow: return pow(a, b);
    case ops::BinaryCode::maximum: return maximum(a, b);
    case ops::BinaryCode::minimum: return minimum(a, b);
    case ops::BinaryCode::eq: return eq(a, b);
    case ops::BinaryCode::ne: return ne(a, b);
    case ops::BinaryCode::lt: return lt(a, b);
    case ops::BinaryCode::le: return le(a, b);
    case ops::BinaryCode::gt: return gt(a, b);
    case ops::BinaryCode::ge: return ge(a, b);
  }
  return Tensor();
}

// b with a's shape's suffix, some dims set to 1, so the pair broadcasts both ways.
Shape broadcast_partner(const Shape& a, Generator& g) {
  size_t keep = a.empty() ? 0 : g.next_u64() % (a.size() + 1);
  Shape b(a.end() - keep, a.end());
  for (auto& d : b)
    if (g.next_u64() % 3 == 0) d = 1;
  if (keep == a.size() && g.next_u64() % 2) b.insert(b.begin(), 1 + (int64_t)(g.next_u64() % 3));  // b may be the longer one
  return b;
}

TEST(CudaLogic, BinaryEveryOpBroadcastingViews) {
  Generator g(4);
  for (int code = 0; code <= (int)ops::BinaryCode::ge; code++) {
    auto op = (ops::BinaryCode)code;
    for (DType t : {DType::f32, DType::f64, DType::i64})
      for (int trial = 0; trial < 12; trial++) {
        Shape sa = random_shape(g, 3), sb = broadcast_partner(sa, g);
        if (trial % 2) std::swap(sa, sb);
        Tensor a = random_view(sa, g, t), b = random_view(sb, g, t);
        bool ints = t == DType::i64;
        if (op == ops::BinaryCode::pow && !ints) a = add_scalar(abs(a), 0.5);  // real powers
        if (op == ops::BinaryCode::pow && ints) a = randint(0, 6, sa, g), b = randint(0, 6, sb, g);
        if (op == ops::BinaryCode::div && ints) b = randint(1, 9, sb, g);      // no division by 0
        if (code >= (int)ops::BinaryCode::eq && trial % 3 == 0) b = a;                         // ties for the comparisons
        Tensor expected = cpu_binary(op, a, b);
        Shape s = expected.shape();
        Tensor out = Tensor::empty(s, t);
        ops::binary(host_par, op, a.expand(s), b.expand(s), out);
        Tol tol = op == ops::BinaryCode::pow ? agree(t) : kExact;
        EXPECT_TRUE(all_close(out, expected, tol, "binary code " + std::to_string(code) + " " + dtype_name(t) + " " + shape_str(sa) +
                                                      " with " + shape_str(sb)));
      }
  }
  EXPECT_EQ(ops::binary_code(ExtBinaryOp::ge), ops::BinaryCode::ge);
  EXPECT_EQ(ops::binary_code(BinaryOp::div), ops::BinaryCode::div);
}

// ---------------------------------------------------------------------------------------------
// Reductions: the glue of tensor/reduce.cpp's device_reduce (kept dims first), then ops::reduce.
ValuesIndices logic_reduce(ReduceOp op, const Tensor& x, const Dims& dims, bool keepdim) {
  std::vector<bool> red(x.dim(), dims.empty());
  for (int64_t d : dims) red[wrap_dim(d, x.dim(), "test")] = true;
  std::vector<int64_t> perm;
  Shape out_shape;
  for (int64_t d = 0; d < x.dim(); d++)
    if (!red[d]) perm.push_back(d);
  int64_t nkept = (int64_t)perm.size();
  for (int64_t d = 0; d < x.dim(); d++) {
    if (red[d]) perm.push_back(d);
    if (!red[d] || keepdim) out_shape.push_back(red[d] ? 1 : x.size(d));
  }
  ValuesIndices r{Tensor::empty(out_shape, x.dtype()), Tensor::empty(out_shape, DType::i64)};
  bool with_indices = op == ReduceOp::max || op == ReduceOp::min;
  ops::reduce(host_par, op, x.permute(perm), nkept, r.values, with_indices ? r.indices : Tensor());
  return r;
}

TEST(CudaLogic, ReductionsOverAnyDims) {
  Generator g(5);
  std::vector<Dims> dim_sets = {{}, {0}, {1}, {2}, {-1}, {0, 2}, {2, 0}, {0, 1, 2}, {1, 2}};
  for (DType t : {DType::f32, DType::f64})
    for (Shape s : {Shape{6, 7, 5}, Shape{1, 9, 1}, Shape{3, 1, 130}})
      for (const Dims& dims : dim_sets)
        for (bool keepdim : {false, true}) {
          Tensor x = random_view(s, g, t);
          std::string what = std::string(dtype_name(t)) + " " + shape_str(s) + " dims " + std::to_string(dims.size()) +
                             (dims.empty() ? "" : " first " + std::to_string(dims[0])) + (keepdim ? " keepdim" : "");
          EXPECT_TRUE(all_close(logic_reduce(ReduceOp::sum, x, dims, keepdim).values, sum(x, dims, keepdim), agree(t), "sum " + what));
          EXPECT_TRUE(all_close(logic_reduce(ReduceOp::mean, x, dims, keepdim).values, mean(x, dims, keepdim), agree(t), "mean " + what));
          EXPECT_TRUE(all_close(logic_reduce(ReduceOp::logsumexp, x, dims, keepdim).values, logsumexp(x, dims, keepdim), agree(t),
                                "logsumexp " + what));
          EXPECT_TRUE(all_close(logic_reduce(ReduceOp::max, x, dims, keepdim).values, amax(x, dims, keepdim), kExact, "amax " + what));
          if (dims.size() == 1) {  // max/min with indices over one dim
            for (bool is_max : {true, false}) {
              ValuesIndices got = logic_reduce(is_max ? ReduceOp::max : ReduceOp::min, x, dims, keepdim);
              ValuesIndices want = is_max ? max(x, dims[0], keepdim) : min(x, dims[0], keepdim);
              EXPECT_TRUE(all_close(got.values, want.values, kExact, (is_max ? "max " : "min ") + what));
              EXPECT_TRUE(all_close(got.indices, want.indices, kExact, (is_max ? "argmax " : "argmin ") + what));
            }
          }
        }
}

// Ties go to the first index, NaN wins, an all -inf row has logsumexp -inf, a 0-dim input is its own
// reduction, and an empty reduced dim sums to 0 but has no max.
TEST(CudaLogic, ReductionEdgeCases) {
  double inf = INFINITY, nan = NAN;
  Tensor x = from_vector(std::vector<double>{1, 3, 3, 2, nan, 5, -inf, -inf, -inf}, {3, 3});
  ValuesIndices m = logic_reduce(ReduceOp::max, x, {1}, false);
  ValuesIndices cpu = max(x, 1);
  EXPECT_EQ(m.indices.to_vector(), cpu.indices.to_vector());
  EXPECT_EQ(m.indices.to_vector(), (std::vector<float>{1, 1, 0}));
  EXPECT_TRUE(std::isnan(m.values.at({1})));
  Tensor lse = logic_reduce(ReduceOp::logsumexp, x, {1}, false).values;
  EXPECT_EQ(lse.at({2}), -inf);
  EXPECT_EQ(logsumexp(x, {1}).at({2}), -inf);
  EXPECT_TRUE(std::isnan(lse.at({1})));
  Tensor s = scalar_tensor(2.5, DType::f64);
  EXPECT_EQ(logic_reduce(ReduceOp::sum, s, {}, false).values.item(), 2.5);
  EXPECT_EQ(logic_reduce(ReduceOp::max, s, {}, false).indices.item(), 0);
  Tensor e = Tensor::empty({4, 0}, DType::f64);
  EXPECT_TRUE(all_close(logic_reduce(ReduceOp::sum, e, {1}, false).values, zeros({4}, DType::f64), kExact, "empty sum"));
  EXPECT_NE(test::error_of([&] { logic_reduce(ReduceOp::max, e, {1}, false); }).find("empty dim"), std::string::npos);
}

// sum_to: the dims tensor/elementwise.cpp's device branch picks, reduced with keepdim and reshaped.
TEST(CudaLogic, SumToIsTheBroadcastBackward) {
  Generator g(6);
  for (auto [gs, s] : std::vector<std::pair<Shape, Shape>>{
           {{4, 5, 6}, {5, 1}}, {{4, 5, 6}, {1, 6}}, {{4, 5, 6}, {}}, {{4, 5, 6}, {4, 1, 1}}, {{3, 1, 7}, {1, 7}}, {{1, 3}, {3}}})
    for (DType t : {DType::f32, DType::f64}) {
      Tensor grad = random_view(gs, g, t);
      int64_t lead = grad.dim() - (int64_t)s.size();
      Dims dims;
      for (int64_t d = 0; d < grad.dim(); d++)
        if (d < lead || (s[d - lead] == 1 && grad.size(d) != 1)) dims.push_back(d);
      Tensor got = dims.empty() ? grad.reshape(s) : logic_reduce(ReduceOp::sum, grad, dims, true).values.reshape(s);
      EXPECT_TRUE(all_close(got, sum_to(grad, s), agree(t), "sum_to " + shape_str(gs) + " -> " + shape_str(s)));
    }
}

// ---------------------------------------------------------------------------------------------
// softmax / log_softmax over every dim of a view, forward and backward.
TEST(CudaLogic, SoftmaxAnyDimForwardBackward) {
  Generator g(7);
  for (DType t : {DType::f32, DType::f64})
    for (Shape s : {Shape{5, 7, 3}, Shape{2, 1, 33}, Shape{9}, Shape{}})
      for (int64_t dim = 0; dim < std::max<int64_t>((int64_t)s.size(), 1); dim++)
        for (bool log : {false, true}) {
          Tensor x = mul_scalar(random_view(s, g, t), 4.0), dy = random_view(s, g, t);
          std::string what = std::string(log ? "log_softmax " : "softmax ") + dtype_name(t) + " " + shape_str(s) + " dim " +
                             std::to_string(dim);
          Tensor y = Tensor::empty(s, t);
          ops::softmax(host_par, x, dim, log, y);
          Tensor want = s.empty() ? (log ? log_softmax(x, 0) : softmax(x, 0)) : (log ? log_softmax(x, dim) : softmax(x, dim));
          EXPECT_TRUE(all_close(y, want, agree(t), what));
          Tensor yv = random_view(s, g, t);  // y as a view too
          copy_into(yv, want);
          Tensor dx = Tensor::empty(s, t);
          ops::softmax_backward(host_par, yv, dy, dim, log, dx);
          Tensor want_dx = log ? log_softmax_backward(want, dy, dim) : softmax_backward(want, dy, dim);
          EXPECT_TRUE(all_close(dx, want_dx, agree(t), what + " backward"));
        }
}

// layer_norm and rms_norm over the last dim of a view, with and without weight/bias; every gradient. Rows of 1 to 512
// (one warp a row: 130 and 512 give every lane several columns).
TEST(CudaLogic, LayerNormForwardBackward) {
  Generator g(8);
  for (DType t : {DType::f32, DType::f64})
    for (Shape s : {Shape{4, 3, 17}, Shape{1, 130}, Shape{6, 1}, Shape{3, 512}})
      for (bool center : {true, false})
        for (bool affine : {true, false}) {
          int64_t C = s.back();
          Tensor x = add_scalar(mul_scalar(random_view(s, g, t), 2.0), 0.5), dy = random_view(s, g, t);
          Tensor w = affine ? randn({C}, g, t) : Tensor(), b = affine && center ? randn({C}, g, t) : Tensor();
          NormOut want = center ? layer_norm(x, w, b, 1e-5) : rms_norm(x, w, 1e-5);
          Shape rs(s.begin(), s.end() - 1);
          NormOut got{Tensor::empty(s, t), center ? Tensor::empty(rs, t) : Tensor(), Tensor::empty(rs, t)};
          ops::layer_norm(host_par, x, w, b, 1e-5, got.y, got.mean, got.rstd);
          std::string what = std::string(center ? "layer_norm " : "rms_norm ") + dtype_name(t) + " " + shape_str(s) + (affine ? " affine" : "");
          EXPECT_TRUE(all_close(got.y, want.y, agree(t), what + " y"));
          EXPECT_TRUE(all_close(got.rstd, want.rstd, agree(t), what + " rstd"));
          if (center) {
            EXPECT_TRUE(all_close(got.mean, want.mean, agree(t), what + " mean"));
          }
          NormGrads wg = center ? layer_norm_backward(dy, x, want.mean, want.rstd, w, true, affine, affine)
                                : rms_norm_backward(dy, x, want.rstd, w, true, affine);
          NormGrads gg{Tensor::empty(s, t), affine ? Tensor::empty({C}, t) : Tensor(), affine && center ? Tensor::empty({C}, t) : Tensor()};
          ops::layer_norm_backward(host_par, dy, x, want.mean, want.rstd, w, gg.dx, gg.dweight, gg.dbias);
          EXPECT_TRUE(all_close(gg.dx, wg.dx, agree(t), what + " dx"));
          if (affine) {
            EXPECT_TRUE(all_close(gg.dweight, wg.dweight, agree(t), what + " dweight"));
          }
          if (affine && center) {
            EXPECT_TRUE(all_close(gg.dbias, wg.dbias, agree(t), what + " dbias"));
          }
        }
}

// cross-entropy with ignore_index and label smoothing, each reduction, forward and backward; the
// reduction glue is what tensor/nn_kernels_loss.cpp's device branch does with the per-row outputs.
TEST(CudaLogic, CrossEntropyForwardBackward) {
  Generator g(9);
  const int64_t kIgnore = -100;
  for (DType t : {DType::f32, DType::f64})
    for (Shape s : {Shape{5, 7, 11}, Shape{13, 3}, Shape{1, 257}})
      for (double ls : {0.0, 0.1})
        for (Reduction red : {Reduction::none, Reduction::mean, Reduction::sum}) {
          int64_t C = s.back();
          Shape rs(s.begin(), s.end() - 1);
          Tensor x = mul_scalar(random_view(s, g, t), 3.0);
          Tensor target = randint(0, C, rs, g);
          int64_t* pt = target.data<int64_t>();
          for (int64_t r = 0; r < target.numel(); r += 3) pt[r] = kIgnore;  // every third row ignored
          CrossEntropyOut want = cross_entropy(x, target, kIgnore, ls, red);
          Tensor rowloss = Tensor::empty(rs, t), lse = Tensor::empty(rs, t), valid = Tensor::empty(rs, t);
          ops::cross_entropy(host_par, x, target, kIgnore, ls, rowloss, lse, valid);
          int64_t count = (int64_t)sum(valid).item();
          Tensor loss = red == Reduction::none ? rowloss : red == Reduction::sum ? sum(rowloss) : mul_scalar(sum(rowloss), 1.0 / (double)count);
          std::string what = std::string("cross_entropy ") + dtype_name(t) + " " + shape_str(s) + " ls " + std::to_string(ls) + " " +
                             reduction_name(red);
          EXPECT_EQ(count, want.count) << what;
          EXPECT_TRUE(all_close(loss, want.loss, agree(t), what + " loss"));
          EXPECT_TRUE(all_close(lse, want.lse, agree(t), what + " lse"));
          Tensor dy = red == Reduction::none ? random_view(rs, g, t) : scalar_tensor(0.7, t);
          Tensor scale = red == Reduction::none ? dy : full({}, red == Reduction::mean ? 0.7 / (double)count : 0.7, t).expand(rs);
          Tensor dx = Tensor::empty(s, t);
          ops::cross_entropy_backward(host_par, x, target, lse, kIgnore, ls, scale, dx);
          Tensor want_dx = cross_entropy_backward(dy, x, target, want.lse, kIgnore, ls, red, want.count);
          EXPECT_TRUE(all_close(dx, want_dx, agree(t), what + " dx"));
        }
  // a target out of range marks its row NaN (the caller's error), and reads nothing outside the row
  Tensor x = randn({2, 4}, g), target = from_vector(std::vector<int64_t>{1, 4}, {2});
  Tensor rowloss = Tensor::empty({2}), lse = Tensor::empty({2}), valid = Tensor::empty({2});
  ops::cross_entropy(host_par, x, target, kIgnore, 0.0, rowloss, lse, valid);
  EXPECT_EQ(valid.at({0}), 1.0);
  EXPECT_TRUE(std::isnan(valid.at({1})));
}

// ---------------------------------------------------------------------------------------------
// Embedding lookup and its backward (sort + segmented sum), with repeated, missing and unsorted indices.
TEST(CudaLogic, EmbeddingAndBackward) {
  Generator g(10);
  for (DType t : {DType::f32, DType::f64})
    for (auto [V, D, N] : std::vector<std::array<int64_t, 3>>{{7, 5, 23}, {1, 3, 4}, {50, 1, 9}, {6, 4, 0}}) {
      Tensor w = randn({V, D}, g, t), idx = randint(0, V, {N}, g), dy = randn({N, D}, g, t);
      Tensor out = Tensor::empty({N, D}, t);
      ops::embedding(host_par, w, idx, out);
      std::string what = std::string(dtype_name(t)) + " V " + std::to_string(V) + " D " + std::to_string(D) + " N " + std::to_string(N);
      EXPECT_TRUE(all_close(out, embedding(w, idx), kExact, "embedding " + what));
      Tensor dw = Tensor::empty({V, D}, t);
      ops::embedding_backward(host_par, dy, idx, dw);
      // the same rows summed in the same (index) order as the CPU: equal to the last bit
      EXPECT_TRUE(all_close(dw, embedding_backward(dy, idx, V), kExact, "embedding_backward " + what));
    }
}

// Long segments (a frequent index) are summed in chunks of 128 rows, then the chunks in order: one index of exactly
// 128 rows (one chunk: the CPU's bits), one of 129 (two chunks), one of 3000 (24); agreement to rounding, and the same
// bits on a second run.
TEST(CudaLogic, EmbeddingBackwardOfLongSegments) {
  Generator g(12);
  for (DType t : {DType::f32, DType::f64}) {
    std::vector<int64_t> ids;
    for (auto [v, n] : std::vector<std::array<int64_t, 2>>{{0, 128}, {1, 129}, {3, 3000}}) ids.insert(ids.end(), n, v);
    for (size_t i = ids.size() - 1; i > 0; i--) std::swap(ids[i], ids[g.next_u64() % (i + 1)]);  // unsorted
    const int64_t N = (int64_t)ids.size(), V = 4, D = 6;
    Tensor idx = from_vector(ids, {N}), dy = add_scalar(randn({N, D}, g, t), 0.3);
    Tensor dw = Tensor::empty({V, D}, t), again = Tensor::empty({V, D}, t);
    ops::embedding_backward(host_par, dy, idx, dw);
    ops::embedding_backward(host_par, dy, idx, again);
    const Tensor want = embedding_backward(dy, idx, V);
    const std::string what = std::string("embedding_backward, long segments, ") + dtype_name(t);
    EXPECT_TRUE(all_close(dw, want, agree(t), what));
    EXPECT_TRUE(all_close(dw.narrow(0, 0, 1), want.narrow(0, 0, 1), kExact, what + ": 128 rows, one chunk"));
    EXPECT_TRUE(all_close(again, dw, kExact, what + ": the same bits twice"));
  }
}

// The device dropout mask is the CPU's mask bit for bit: same base draw, same counter-based draws, across
// the 4096-element rows of the draws.
TEST(CudaLogic, DropoutMaskEqualsCpu) {
  for (double p : {0.0, 0.1, 0.5, 1.0})
    for (int64_t n : {1, 4095, 4097, 10000}) {
      Generator g1(42), g2(42);
      Tensor want = dropout_mask({n}, p, g1);
      Tensor got = Tensor::empty({n});
      ops::dropout_mask(host_par, g2.next_u64(), p, got);
      EXPECT_TRUE(all_close(got, want, kExact, "dropout p " + std::to_string(p) + " n " + std::to_string(n)));
      EXPECT_EQ(g1.next_u64(), g2.next_u64()) << "both draw exactly one u64 from the generator";
    }
}

// Three fused AdamW (and Adam with L2 decay) steps equal optim/adam.cpp's loop; sum_sq is the squared
// global norm clipping uses.
TEST(CudaLogic, AdamStepEqualsOptimizer) {
  for (bool decoupled : {true, false})
    for (DType t : {DType::f32, DType::f64}) {
      Generator g(11);
      Tensor p0 = randn({5, 7}, g, t);
      Var param(p0.clone(), true);
      optim::AdamOptions o;
      o.lr = 0.01, o.weight_decay = 0.1;
      std::unique_ptr<optim::Optimizer> opt;
      if (decoupled) {
        optim::AdamWOptions ow;
        ow.lr = o.lr, ow.weight_decay = o.weight_decay;
        opt = std::make_unique<optim::AdamW>(std::vector<Var>{param}, ow);
      } else {
        opt = std::make_unique<optim::Adam>(std::vector<Var>{param}, o);
      }
      Tensor p = p0.clone(), m = zeros({5, 7}, t), v = zeros({5, 7}, t);
      for (int step = 1; step <= 3; step++) {
        Tensor grad = randn({5, 7}, g, t);
        param.mutable_grad() = grad.clone();
        opt->step();
        AdamScalars s{o.beta1, o.beta2, o.eps, o.weight_decay, o.lr / (1 - std::pow(o.beta1, step)),
                      std::sqrt(1 - std::pow(o.beta2, step)), 1 - o.lr * o.weight_decay, decoupled};
        ops::adam_step(host_par, s, p, grad, m, v);
      }
      // the same loop; agree(t), not exact: the compiler may contract a * b + c into an FMA in one and not the other
      EXPECT_TRUE(all_close(p, param.data(), agree(t), std::string(decoupled ? "AdamW " : "Adam ") + dtype_name(t)));
      param.mutable_grad() = p.clone();
      EXPECT_NEAR(ops::sum_sq(host_par, p), std::pow(optim::grad_norm({param}, 2.0), 2), 1e-9 * ops::sum_sq(host_par, p));
    }
}

}  // namespace
}  // namespace dl
