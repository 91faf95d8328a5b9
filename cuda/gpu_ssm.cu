// cuda/gpu_ssm.cu - CudaBackend<Gpu>'s state-space kernels (cuda/backend_ssm.cuh) compiled by nvcc.
#include "cuda/backend_ssm.cuh"
#include "cuda/gpu.cuh"

namespace dl::cuda {
DL_CUDA_SSM_FAMILY(Gpu)
}  // namespace dl::cuda
