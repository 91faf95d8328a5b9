// cuda/backend_reduce.cuh - reductions and the optimizer of CudaBackend<P> (cuda/backend.h): sum / mean / max / min
// (+ index) / logsumexp / var over any dims (cuda/ops/reduce.cuh; contiguous row sums go to the block-per-row kernel),
// cumsum along one dim; one fused Adam/AdamW update per parameter buffer and the f64 sum of squares the global
// gradient norm is made of (cuda/ops/optim.cuh).
#pragma once
#include "cuda/backend.h"
#include "cuda/checks.h"
#include "cuda/ops/optim.cuh"
#include "cuda/ops/reduce.cuh"

namespace dl::cuda {

template <class P>
void CudaBackend<P>::reduce(ReduceOp op, const Tensor& x, int64_t nkept, const Tensor& values, const Tensor& indices) {
  require_on_cuda(x, "reduce", "x");
  require_cuda(values, "reduce", "values");
  require_float(x, "reduce");
  int64_t kept = 1;
  for (int64_t d = 0; d < nkept; d++) kept *= x.size(d);
  if (nkept < 0 || nkept > x.dim() || values.numel() != kept || values.dtype() != x.dtype())
    fail("reduce (cuda): x " + shape_str(x.shape()) + " keeping " + std::to_string(nkept) + " dims needs values of " +
         std::to_string(kept) + " elements of " + dtype_name(x.dtype()) + ", got " + shape_str(values.shape()));
  if (indices.defined()) {
    require_cuda(indices, "reduce", "indices");
    if (indices.numel() != kept || indices.dtype() != DType::i64)
      fail("reduce (cuda): indices must be i64 with " + std::to_string(kept) + " elements");
  }
  if (op == ReduceOp::sum && nkept == x.dim() - 1 && x.is_contiguous() && x.size(-1) > 0)  // rows: the block-per-row kernel
    return p_.sum_last(x.raw_data(), values.raw_data(), kept, x.size(-1), x.dtype());
  ops::reduce(p_.par(), op, p_.view(x), nkept, p_.view(values), p_.view(indices));
}

template <class P> void CudaBackend<P>::sum_last(const Tensor& x, const Tensor& out) {
  require_cuda(x, "sum_last", "x");
  require_cuda(out, "sum_last", "out");
  require_float(x, "sum_last");
  int64_t C = x.dim() == 0 ? 1 : x.size(-1), R = C == 0 ? out.numel() : x.numel() / C;
  if (out.numel() != R || out.dtype() != x.dtype())
    fail("sum_last (cuda): x " + shape_str(x.shape()) + " needs out of " + std::to_string(R) + " elements of " +
         dtype_name(x.dtype()) + ", got " + shape_str(out.shape()) + " " + dtype_name(out.dtype()));
  p_.sum_last(x.raw_data(), out.raw_data(), R, C, x.dtype());
}

template <class P> void CudaBackend<P>::cumsum(const Tensor& x, int64_t d, bool reverse, const Tensor& out) {
  require_cuda(x, "cumsum", "x");
  require_cuda(out, "cumsum", "out");
  require_same(x, out, "cumsum", "x", "out");
  if (x.dim() > 0 && (d < 0 || d >= x.dim())) fail("cumsum (cuda): dim " + std::to_string(d) + " out of range");
  ops::cumsum(p_.par(), p_.view(x), d, reverse, p_.view(out));
}

template <class P>
void CudaBackend<P>::adam_step(const AdamScalars& s, const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v) {
  const char* op = "adam_step";
  require_cuda(param, op, "param");
  require_cuda(grad, op, "grad");
  require_cuda(m, op, "exp_avg");
  require_cuda(v, op, "exp_avg_sq");
  require_float(param, op);
  require_same(param, grad, op, "param", "grad");
  require_same(param, m, op, "param", "exp_avg");
  require_same(param, v, op, "param", "exp_avg_sq");
  ops::adam_step(p_.par(), s, p_.view(param), p_.view(grad), p_.view(m), p_.view(v));
}

template <class P> double CudaBackend<P>::sum_sq(const Tensor& g) {
  require_cuda(g, "sum_sq", "g");
  require_float(g, "sum_sq");
  return ops::sum_sq(p_.par(), p_.view(g));
}

}  // namespace dl::cuda

// The family's methods compiled for platform P, expanded inside namespace dl::cuda (cuda/gpu_reduce.cu, cuda/twin.cpp).
#define DL_CUDA_REDUCE_FAMILY(P)                                                                                           \
  template void CudaBackend<P>::reduce(ReduceOp, const Tensor&, int64_t, const Tensor&, const Tensor&);                    \
  template void CudaBackend<P>::sum_last(const Tensor&, const Tensor&);                                                    \
  template void CudaBackend<P>::cumsum(const Tensor&, int64_t, bool, const Tensor&);                                       \
  template void CudaBackend<P>::adam_step(const AdamScalars&, const Tensor&, const Tensor&, const Tensor&, const Tensor&); \
  template double CudaBackend<P>::sum_sq(const Tensor&);
