// autograd/indexing.h - differentiable gather/scatter/index_select/embedding (kernels: tensor/indexing.h).
// Index tensors are plain i64 Tensors: they are never differentiated.
//
// Gradient formulas (each forward reads or adds elements at indexed places; the backward goes the other way):
//   gather        y[..i..] = x[..index[..i..]..]       dx = scatter_add(zeros(x), d, index, dy)
//   scatter_add   y = x; y[..index[..i..]..] += src    dx = dy     dsrc = gather(dy, d, index)
//   index_select  y = x.index(d, idx)                   dx = index_add(zeros(x), d, idx, dy)
//   embedding     y[n] = W[idx[n]]                      dW[v] = sum_{n: idx[n] = v} dy[n]
// Repeated indices add up in every backward (the forward read the same element several times).
#pragma once
#include "autograd/variable.h"
#include "tensor/indexing.h"

namespace dl {

Var gather(const Var& x, int64_t dim, const Tensor& index);
Var scatter_add(const Var& x, int64_t dim, const Tensor& index, const Var& src);
Var index_select(const Var& x, int64_t dim, const Tensor& idx);
Var embedding(const Var& weight, const Tensor& idx);

}  // namespace dl
