// cuda/gpu_attention.cu - CudaBackend<Gpu>'s attention primitive (cuda/backend_attention.cuh) compiled by nvcc.
#include "cuda/backend_attention.cuh"
#include "cuda/gpu.cuh"

namespace dl::cuda {
DL_CUDA_ATTENTION_FAMILY(Gpu)
}  // namespace dl::cuda
