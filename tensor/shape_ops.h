// tensor/shape_ops.h - ops that move elements without arithmetic (except cumsum), no autograd.
//
// Results are fresh contiguous tensors, except split(), which returns views (narrow) sharing x's storage.
//   cat(xs, dim)            all xs equal in every dim but `dim`, same dtype
//   stack(xs, dim)          all xs the same shape; a new dim of size xs.size() at `dim`
//   split(x, sizes, dim)    views of consecutive lengths `sizes` (they must sum to x.size(dim))
//   split(x, chunk, dim)    views of length `chunk` (the last may be shorter), as torch.split
//   pad(x, pads, value)     torch.nn.functional.pad, constant mode: pads = {left, right} for the last dim,
//                           then {left, right} for the one before, ...; a negative pad crops
//   flip(x, dims)           reverse the order along each of dims
//   roll(x, shift, dim)     y[i] = x[(i - shift) mod n] along dim, as torch.roll
//   cumsum(x, dim, reverse) y[i] = sum_{j<=i} x[j]  (reverse: sum_{j>=i} x[j], the adjoint of cumsum)
//   tril_mask/triu_mask     (R, C) 0/1 masks: tril keeps j <= i + diagonal, triu keeps j >= i + diagonal
//   repeat_interleave       each element along dim repeated `repeats` times (torch.repeat_interleave)
#pragma once
#include <vector>

#include "tensor/tensor.h"

namespace dl {

Tensor cat(const std::vector<Tensor>& xs, int64_t dim);
Tensor stack(const std::vector<Tensor>& xs, int64_t dim);
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim);
std::vector<Tensor> split(const Tensor& x, int64_t chunk, int64_t dim);
Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, double value = 0.0);
Tensor flip(const Tensor& x, const std::vector<int64_t>& dims);
Tensor roll(const Tensor& x, int64_t shift, int64_t dim);
Tensor cumsum(const Tensor& x, int64_t dim, bool reverse = false);
Tensor tril_mask(int64_t rows, int64_t cols, int64_t diagonal = 0, DType dtype = DType::f32);
Tensor triu_mask(int64_t rows, int64_t cols, int64_t diagonal = 0, DType dtype = DType::f32);
Tensor repeat_interleave(const Tensor& x, int64_t repeats, int64_t dim);

// The sizes split(x, chunk, dim) uses (shared with the autograd version).
std::vector<int64_t> chunk_sizes(int64_t n, int64_t chunk, const char* op);

}  // namespace dl
