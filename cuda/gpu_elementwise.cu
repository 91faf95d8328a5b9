// cuda/gpu_elementwise.cu - CudaBackend<Gpu>'s memory and elementwise families (cuda/backend_memory.cuh,
// backend_elementwise.cuh) compiled by nvcc: their Thrust ops become kernels.
#include "cuda/backend_elementwise.cuh"
#include "cuda/backend_memory.cuh"
#include "cuda/gpu.cuh"

namespace dl::cuda {
DL_CUDA_MEMORY_FAMILY(Gpu)
DL_CUDA_ELEMENTWISE_FAMILY(Gpu)
}  // namespace dl::cuda
