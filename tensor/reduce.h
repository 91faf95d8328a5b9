// tensor/reduce.h - reductions over dims on Tensors (no autograd): sum, mean, var, max/min (+ indices),
// argmax/argmin, logsumexp, and the backward kernels that need more than elementwise ops.
//
// Dims: a list of dims (negative counts from the end, duplicates are an error); an EMPTY list means every
// dim, like torch.sum(x). keepdim=true leaves each reduced dim with size 1, so the result broadcasts
// against the input. Results are fresh contiguous tensors; inputs may be any view. Float dtypes only.
//
// Precision and determinism: float32 inputs accumulate in float64; every output element is summed in a
// fixed order (long rows are cut into fixed-size chunks whose partials are added in chunk order), so the
// result does not depend on the number of threads. Both cores are used above ~32K elements of work.
//
// What it is not: a general "reduce with a user lambda" API, or integer reductions.
#pragma once
#include <vector>

#include "tensor/tensor.h"

namespace dl {

using Dims = std::vector<int64_t>;

Tensor sum(const Tensor& x, const Dims& dims, bool keepdim = false);
Tensor sum(const Tensor& x);  // every element -> shape []
Tensor mean(const Tensor& x, const Dims& dims, bool keepdim = false);
Tensor mean(const Tensor& x);  // every element -> shape []
// Variance over dims with the two-pass formula sum((x - mean)^2) / (n - ddof), ddof = unbiased ? 1 : 0.
// PyTorch's default is unbiased=true; n - ddof <= 0 gives NaN/inf as in PyTorch.
Tensor var(const Tensor& x, const Dims& dims, bool unbiased = true, bool keepdim = false);
// log(sum(exp(x))) over dims, stable: m + log(sum(exp(x - m))) with m = max over the same dims
// (m = 0 when the max is +-inf, so an all -inf slice gives -inf and not NaN).
Tensor logsumexp(const Tensor& x, const Dims& dims, bool keepdim = false);

// max/min over ONE dim: values and the index of the first extreme element (i64). NaN wins, as in PyTorch.
struct ValuesIndices {
  Tensor values, indices;
};
ValuesIndices max(const Tensor& x, int64_t dim, bool keepdim = false);
ValuesIndices min(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor amax(const Tensor& x, const Dims& dims, bool keepdim = false);  // max values over several dims

// ---- helpers the autograd layer uses ----
// The shape of the result with keepdim=true (reduced dims set to 1); validates dims, naming `op`.
Shape reduced_shape_keepdim(const Shape& in, const Dims& dims, const char* op);
// Broadcast a reduction's gradient dy (shape with or without keepdim) back to `in_shape`, times `scale`.
Tensor reduce_grad_broadcast(const Tensor& dy, const Shape& in_shape, const Dims& dims, double scale = 1.0);
// The backward of max/min over one dim: dx = zeros(in_shape); dx[..., idx, ...] = dy along `dim`.
Tensor index_reduce_backward(const Tensor& dy, const Tensor& indices, int64_t dim, const Shape& in_shape, bool keepdim);

}  // namespace dl
