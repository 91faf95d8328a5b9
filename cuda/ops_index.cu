// cuda/ops_index.cu - embedding, dropout and the optimizer ops of cuda/ops/index.cuh and optim.cuh on the GPU
// (see cuda/device_ops.h).
#include <thrust/system/cuda/execution_policy.h>

#include "cuda/device_ops.h"
#include "cuda/ops/index.cuh"
#include "cuda/ops/optim.cuh"

namespace dl::cuda {

void embedding(const Tensor& weight, const Tensor& idx, const Tensor& out) { ops::embedding(thrust::cuda::par, weight, idx, out); }
void embedding_backward(const Tensor& dy, const Tensor& idx, const Tensor& dw) {
  ops::embedding_backward(thrust::cuda::par, dy, idx, dw);
}
void dropout_mask(uint64_t base, double p, const Tensor& mask) { ops::dropout_mask(thrust::cuda::par, base, p, mask); }
void adam_step(const AdamScalars& s, const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v) {
  ops::adam_step(thrust::cuda::par, s, param, grad, m, v);
}
double sum_sq(const Tensor& g) { return ops::sum_sq(thrust::cuda::par, g); }

}  // namespace dl::cuda
