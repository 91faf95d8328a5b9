// cuda/gpu_nn.cu - CudaBackend<Gpu>'s row ops of nn (cuda/backend_nn.cuh) compiled by nvcc.
#include "cuda/backend_nn.cuh"
#include "cuda/gpu.cuh"

namespace dl::cuda {
DL_CUDA_NN_FAMILY(Gpu)
}  // namespace dl::cuda
