// tensor/indexing.h - gather/scatter along a dim, index_select/index_add, embedding lookup, one_hot.
// No autograd. Index tensors are i64, any layout; every index is checked before any kernel runs and an
// out-of-range one is reported with its value and the bound. Results are fresh contiguous tensors.
//
// Shape letters: V rows of an embedding table, D its width; "outer"/"inner" = the dims before/after `dim`.
//   gather(x, d, index)             out[..i..] = x[..index[..i..]..]  (index replaces coordinate d); out has
//                                   index's shape; index.size(k) <= x.size(k) for k != d   (torch.gather)
//   scatter_add(x, d, index, src)   out = x; out[..index[..i..]..] += src[..i..] over index's shape (torch.scatter_add)
//   index_select(x, d, idx)         idx 1-D (n): out = x with dim d replaced by x's slices idx[0..n)
//   index_add_(out, d, idx, src)    out.select(d, idx[j]) += src.select(d, j) for every j (duplicates add up)
//   embedding(weight, idx)          weight (V, D), idx any shape -> (idx.shape..., D), row lookup
//   embedding_backward(dy, idx, V)  dW (V, D): dW[idx[n]] += dy[n] -- each thread owns a range of rows of
//                                   dW and scans all indices, so there are no races and the sum order is fixed
//   one_hot(idx, C)                 (idx.shape..., C) with 1 at idx
// Race-freedom of scatter_add_ / index_add_: two updates can only collide when they share every coordinate
// except d, so the work is split over those coordinates (outer x inner) and each thread walks all of d.
#pragma once
#include "tensor/tensor.h"

namespace dl {

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
void scatter_add_(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src);  // out contiguous
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& idx);
void index_add_(const Tensor& out, int64_t dim, const Tensor& idx, const Tensor& src);  // out contiguous
Tensor embedding(const Tensor& weight, const Tensor& idx);
Tensor embedding_backward(const Tensor& dy, const Tensor& idx, int64_t num_embeddings);
Tensor one_hot(const Tensor& idx, int64_t num_classes, DType dtype = DType::f32);

}  // namespace dl
