// cuda/ops_index.cu - embedding, gather / scatter_add / index_add / one_hot, dropout and the optimizer ops of
// cuda/ops/index.cuh, gather.cuh and optim.cuh on the GPU (see cuda/device_ops.h).
#include <thrust/system/cuda/execution_policy.h>

#include "cuda/device_ops.h"
#include "cuda/ops/gather.cuh"
#include "cuda/ops/index.cuh"
#include "cuda/ops/optim.cuh"

namespace dl::cuda {

void embedding(const Tensor& weight, const Tensor& idx, const Tensor& out) { ops::embedding(thrust::cuda::par, weight, idx, out); }
void embedding_backward(const Tensor& dy, const Tensor& idx, const Tensor& dw) {
  ops::embedding_backward(thrust::cuda::par, dy, idx, dw);
}
void gather(const Tensor& x, int64_t d, const Tensor& idx, const Tensor& out) { ops::gather(thrust::cuda::par, x, d, idx, out); }
void scatter_add(const Tensor& out, int64_t d, const Tensor& idx, const Tensor& src) {
  ops::scatter_add(thrust::cuda::par, out, d, idx, src);
}
void index_add(const Tensor& out, int64_t d, const Tensor& idx, const Tensor& src) {
  ops::index_add(thrust::cuda::par, out, d, idx, src);
}
void one_hot(const Tensor& idx, const Tensor& out) { ops::one_hot(thrust::cuda::par, idx, out); }
void dropout_mask(uint64_t base, double p, const Tensor& mask) { ops::dropout_mask(thrust::cuda::par, base, p, mask); }
void adam_step(const AdamScalars& s, const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v) {
  ops::adam_step(thrust::cuda::par, s, param, grad, m, v);
}
double sum_sq(const Tensor& g) { return ops::sum_sq(thrust::cuda::par, g); }

}  // namespace dl::cuda
