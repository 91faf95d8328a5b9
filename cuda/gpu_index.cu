// cuda/gpu_index.cu - CudaBackend<Gpu>'s indexing family (cuda/backend_index.cuh) compiled by nvcc.
#include "cuda/backend_index.cuh"
#include "cuda/gpu.cuh"

namespace dl::cuda {
DL_CUDA_INDEX_FAMILY(Gpu)
}  // namespace dl::cuda
