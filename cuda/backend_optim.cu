// cuda/backend_optim.cu - the optimizer on the device: one fused Adam/AdamW update per parameter buffer, and the
// f64 sum of squares the global gradient norm is made of (cuda/ops/optim.cuh).
#include "cuda/backend.cuh"
#include "cuda/checks.cuh"
#include "cuda/device_ops.h"

namespace dl::cuda {

void CudaBackend::adam_step(const AdamScalars& s, const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v) {
  const char* op = "adam_step";
  require_cuda(param, op, "param");
  require_cuda(grad, op, "grad");
  require_cuda(m, op, "exp_avg");
  require_cuda(v, op, "exp_avg_sq");
  require_float(param, op);
  require_same(param, grad, op, "param", "grad");
  require_same(param, m, op, "param", "exp_avg");
  require_same(param, v, op, "param", "exp_avg_sq");
  cuda::adam_step(s, param, grad, m, v);
}

double CudaBackend::sum_sq(const Tensor& g) {
  require_cuda(g, "sum_sq", "g");
  require_float(g, "sum_sq");
  return cuda::sum_sq(g);
}

}  // namespace dl::cuda
