// cuda/ops_nn.cu - the row ops of cuda/ops/nn.cuh on the GPU (see cuda/device_ops.h).
#include <thrust/system/cuda/execution_policy.h>

#include "cuda/device_ops.h"
#include "cuda/ops/nn.cuh"

namespace dl::cuda {

void softmax(const Tensor& x, int64_t dim, bool log, const Tensor& y) { ops::softmax(thrust::cuda::par, x, dim, log, y); }
void softmax_backward(const Tensor& y, const Tensor& dy, int64_t dim, bool log, const Tensor& dx) {
  ops::softmax_backward(thrust::cuda::par, y, dy, dim, log, dx);
}
void layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, double eps, const Tensor& y, const Tensor& mean, const Tensor& rstd) {
  ops::layer_norm(thrust::cuda::par, x, w, b, eps, y, mean, rstd);
}
void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& w, const Tensor& dx,
                         const Tensor& dw, const Tensor& db) {
  ops::layer_norm_backward(thrust::cuda::par, dy, x, mean, rstd, w, dx, dw, db);
}
void cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index, double ls, const Tensor& rowloss,
                   const Tensor& lse, const Tensor& valid) {
  ops::cross_entropy(thrust::cuda::par, logits, target, ignore_index, ls, rowloss, lse, valid);
}
void cross_entropy_backward(const Tensor& logits, const Tensor& target, const Tensor& lse, int64_t ignore_index, double ls,
                            const Tensor& row_scale, const Tensor& dx) {
  ops::cross_entropy_backward(thrust::cuda::par, logits, target, lse, ignore_index, ls, row_scale, dx);
}

}  // namespace dl::cuda
