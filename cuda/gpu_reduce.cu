// cuda/gpu_reduce.cu - CudaBackend<Gpu>'s reductions and optimizer (cuda/backend_reduce.cuh) compiled by nvcc.
#include "cuda/backend_reduce.cuh"
#include "cuda/gpu.cuh"

namespace dl::cuda {
DL_CUDA_REDUCE_FAMILY(Gpu)
}  // namespace dl::cuda
