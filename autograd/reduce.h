// autograd/reduce.h - differentiable reductions (kernels and dims rules in tensor/reduce.h).
//
// Gradient formulas (n = number of elements reduced into each output; dy broadcast back over the
// reduced dims, i.e. dy viewed with keepdim=true):
//   sum        y = sum_i x_i                    dx = dy
//   mean       y = sum_i x_i / n                dx = dy / n
//   var        y = sum_i (x_i - m)^2 / (n - ddof)   dx = dy * 2 (x - m) / (n - ddof)
//              (the d m / d x term vanishes because sum_i (x_i - m) = 0)
//   max / min  y = x_k, k = argmax              dx_k = dy, every other dx_i = 0 (first index on ties)
//   logsumexp  y = log sum_i exp(x_i)           dx = dy * exp(x - y) = dy * softmax(x)
// argmax/argmin return indices and have no gradient.
#pragma once
#include "autograd/variable.h"
#include "tensor/reduce.h"

namespace dl {

Var sum(const Var& x, const Dims& dims, bool keepdim = false);
Var sum(const Var& x);  // every element -> shape []
Var mean(const Var& x, const Dims& dims, bool keepdim = false);
Var mean(const Var& x);
Var var(const Var& x, const Dims& dims, bool unbiased = true, bool keepdim = false);
Var logsumexp(const Var& x, const Dims& dims, bool keepdim = false);

struct VarIndices {
  Var values;
  Tensor indices;  // i64, same shape as values
};
VarIndices max(const Var& x, int64_t dim, bool keepdim = false);
VarIndices min(const Var& x, int64_t dim, bool keepdim = false);
Tensor argmax(const Var& x, int64_t dim, bool keepdim = false);
Tensor argmin(const Var& x, int64_t dim, bool keepdim = false);

}  // namespace dl
