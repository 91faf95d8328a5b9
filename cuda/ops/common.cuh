// cuda/ops/common.cuh - what the Thrust-based device ops in cuda/ops/ share: the strided index map,
// the per-element launch, and float/double math that compiles for both the GPU and the CPU.
//
// The idea: every device op is a Thrust algorithm over a plain functor whose operator() is
// __host__ __device__. cuda/ops_*.cu instantiate the launch functions with the CUDA execution policy
// (thrust::cuda::par_nosync: kernels on the legacy default stream, in order with cudaMemcpy and cuBLAS);
// tests/cuda_logic/ instantiates the SAME functions with thrust::cpp::par, so the index arithmetic and
// the formulas run, and are tested against tensor/'s CPU kernels, on a machine without a GPU. The two
// instantiations have different template arguments, hence different symbols: both can live in one binary.
//
// Strided operands: an op runs over the index space of its output shape S (row-major, i = 0 .. numel-1).
// Each operand is described by its strides over S (0 on a broadcast dim), so transposed, narrowed and
// expanded views are read in place and never copied. joint_layout() drops size-1 dims and merges
// adjacent dims that are contiguous for every operand (as tensor/elementwise.cpp's make_loop does), so a
// contiguous operand costs one divmod-free step and a transposed one a few (32-bit divisions below 2^31 elements).
// What it is not: a tuned kernel library. One thread per output element (or per row for row ops),
// no shared-memory tiling; correctness first, measured speed later (scripts/gpu_check.sh).
#pragma once
#include <math.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "tensor/counter_hash.h"  // DL_HD: a function callable from host and device code (plain C++ off nvcc)
#include "tensor/tensor.h"

namespace dl::ops {

constexpr int kMaxDims = 8;  // after merging; a tensor of higher rank is an error naming the op

// One operand's strides over a (merged) index space.
// offset(i) peels the dims off i from the innermost; the outermost dim needs no divmod (i / (the inner dims' product)
// is already below its size), so a contiguous operand (rank 1 after merging) costs one multiply. When the index space
// has fewer than 2^31 elements (`narrow`, set by merge_dims) the divisions are 32-bit: a 64-bit division is a long
// software sequence on a GPU (tens of instructions), a 32-bit one a few, and these ops are one thread per element.
struct Strided {
  int rank = 0;
  bool narrow = false;  // every flat index fits 31 bits
  int64_t shape[kMaxDims] = {};
  int64_t stride[kMaxDims] = {};
  // Element offset of flat output index i (row-major over shape), 0 <= i < the product of shape.
  DL_HD int64_t offset(int64_t i) const {
    if (rank == 0) return 0;
    int64_t off = 0;
    if (narrow) {
      uint32_t u = (uint32_t)i;
      for (int d = rank - 1; d > 0; d--) {
        const uint32_t n = (uint32_t)shape[d], q = u / n;
        off += (int64_t)(u - q * n) * stride[d];
        u = q;
      }
      return off + (int64_t)u * stride[0];
    }
    for (int d = rank - 1; d > 0; d--) {
      const int64_t q = i / shape[d];
      off += (i - q * shape[d]) * stride[d];
      i = q;
    }
    return off + i * stride[0];
  }
};

// Strided descriptors for operands over one index space `shape`, one stride list per operand (0 on a
// broadcast dim); size-1 dims are dropped and adjacent dims merged where every operand allows it.
inline std::vector<Strided> merge_dims(const Shape& shape, const std::vector<Shape>& strides, const char* op) {
  std::vector<int64_t> msh;                           // merged shape
  std::vector<std::vector<int64_t>> mst(strides.size());  // merged strides per operand
  for (size_t d = 0; d < shape.size(); d++) {
    if (shape[d] == 1) continue;
    bool merge = !msh.empty();
    for (size_t o = 0; o < strides.size() && merge; o++) merge = mst[o].back() == strides[o][d] * shape[d];
    if (merge) {
      msh.back() *= shape[d];
      for (size_t o = 0; o < strides.size(); o++) mst[o].back() = strides[o][d];
      continue;
    }
    msh.push_back(shape[d]);
    for (size_t o = 0; o < strides.size(); o++) mst[o].push_back(strides[o][d]);
  }
  if ((int)msh.size() > kMaxDims)
    fail(std::string(op) + " (cuda): " + std::to_string(msh.size()) + " dims after merging, at most " +
         std::to_string(kMaxDims) + " are supported (shape " + shape_str(shape) + ")");
  int64_t numel = 1;
  for (int64_t n : msh) numel *= n;
  std::vector<Strided> out(strides.size());
  for (size_t o = 0; o < strides.size(); o++) {
    out[o].rank = (int)msh.size();
    out[o].narrow = numel < (int64_t(1) << 31);
    for (size_t d = 0; d < msh.size(); d++) out[o].shape[d] = msh[d], out[o].stride[d] = mst[o][d];
  }
  return out;
}

// The same for tensors that all have shape `shape` (expanded already).
inline std::vector<Strided> joint_layout(const Shape& shape, std::initializer_list<const Tensor*> operands, const char* op) {
  std::vector<Shape> strides;
  for (const Tensor* t : operands) strides.push_back(t->strides());
  return merge_dims(shape, strides, op);
}

// Dims [d0, d1) of t as their own index space.
inline Strided sub_layout(const Tensor& t, int64_t d0, int64_t d1, const char* op) {
  Shape shape(t.shape().begin() + d0, t.shape().begin() + d1), strides(t.strides().begin() + d0, t.strides().begin() + d1);
  return merge_dims(shape, {strides}, op)[0];
}

// The typed pointer of a tensor on either device. Tensor::data<T>() refuses a device tensor, so that a CPU kernel
// handed one (an op without a device branch) fails loudly; the device ops read their operands through this.
template <class T> T* dptr(const Tensor& t) {
  if (t.dtype() != dtype_of<T>())
    fail(std::string("dptr<T>: the tensor holds ") + dtype_name(t.dtype()) + ", asked for " + dtype_name(dtype_of<T>()));
  return (T*)t.raw_data();
}

// f(i) for i in [0, n), in parallel on the policy's system.
template <class Exec, class F> void for_n(const Exec& exec, int64_t n, F f) {
  if (n <= 0) return;
  thrust::for_each(exec, thrust::counting_iterator<int64_t>(0), thrust::counting_iterator<int64_t>(n), f);
}

// How many interleaved slices a sum of R terms per output is split into, for `outputs` outputs (the two-level
// reductions of reduce.cuh and nn.cuh): slice s of output o adds terms s, s + S, s + 2S, ... (consecutive threads read
// consecutive addresses), then one thread per output adds its S partials in slice order. Enough threads to fill a
// GPU (~64K) with at least 32 terms each; 1 (one thread walks each output's terms) when the outputs alone fill it or
// the rows are short. It depends only on the shape, so the order of the sums - and the result - is fixed.
inline int64_t sum_slices(int64_t outputs, int64_t R) {
  constexpr int64_t kThreads = 65536, kMinTerms = 32;
  if (outputs >= kThreads || R < 2 * kMinTerms) return 1;
  int64_t by_threads = kThreads / (outputs > 0 ? outputs : 1), by_terms = R / kMinTerms;
  return by_threads < by_terms ? by_threads : by_terms;
}

// ---- math with explicit float/double overloads (C's libm names exist on both sides) ----
DL_HD inline float m_exp(float x) { return expf(x); }
DL_HD inline double m_exp(double x) { return exp(x); }
DL_HD inline float m_log(float x) { return logf(x); }
DL_HD inline double m_log(double x) { return log(x); }
DL_HD inline float m_log1p(float x) { return log1pf(x); }
DL_HD inline double m_log1p(double x) { return log1p(x); }
DL_HD inline float m_sqrt(float x) { return sqrtf(x); }
DL_HD inline double m_sqrt(double x) { return sqrt(x); }
DL_HD inline float m_tanh(float x) { return tanhf(x); }
DL_HD inline double m_tanh(double x) { return tanh(x); }
DL_HD inline float m_erf(float x) { return erff(x); }
DL_HD inline double m_erf(double x) { return erf(x); }
DL_HD inline float m_abs(float x) { return fabsf(x); }
DL_HD inline double m_abs(double x) { return fabs(x); }
DL_HD inline float m_expm1(float x) { return expm1f(x); }
DL_HD inline double m_expm1(double x) { return expm1(x); }
DL_HD inline float m_sin(float x) { return sinf(x); }
DL_HD inline double m_sin(double x) { return sin(x); }
DL_HD inline float m_cos(float x) { return cosf(x); }
DL_HD inline double m_cos(double x) { return cos(x); }
DL_HD inline float m_pow(float x, float y) { return powf(x, y); }
DL_HD inline double m_pow(double x, double y) { return pow(x, y); }
DL_HD inline int64_t m_pow(int64_t x, int64_t y) { return (int64_t)pow((double)x, (double)y); }  // as the CPU's std::pow
template <class T> DL_HD inline bool m_isnan(T x) { return x != x; }
template <class T> DL_HD inline T m_sigmoid(T x) { return (T)1 / ((T)1 + m_exp(-x)); }

}  // namespace dl::ops
