// cuda/backend_memory.cu - device memory and moving bytes: the caching allocator (bins of sizes, cudaMalloc only on a
// miss), copies between host and device, fill, the strided copy that makes any view contiguous, the dtype cast.
#include <stdexcept>

#include "cuda/backend.cuh"
#include "cuda/check.cuh"
#include "cuda/checks.cuh"
#include "cuda/device_ops.h"
#include "cuda/kernels.cuh"

namespace dl::cuda {

// ---------------------------------------------------------------------------------------------
// Caching device allocator

// Round a request up to its bin: multiples of 512 B up to 1 MiB (cudaMalloc aligns to 256 B anyway),
// then 8 steps per power of two, so at most 12.5% of a block is unused.
static size_t device_bin_size(size_t n) {
  constexpr size_t kSmall = 1u << 20;
  if (n <= kSmall) return (n + 511) & ~size_t(511);
  size_t p = kSmall;
  while (p * 2 <= n) p *= 2;
  size_t step = p / 8;
  return (n + step - 1) / step * step;
}

void* DeviceAllocator::alloc(size_t nbytes) {
  if (nbytes == 0) return nullptr;
  size_t b = device_bin_size(nbytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = bins_.find(b);
    if (it != bins_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      cached_ -= b;
      in_use_ += b;
      return p;
    }
  }
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, b);
  if (e == cudaErrorMemoryAllocation) {  // hand the cache back to the driver and try once more
    cudaGetLastError();
    empty_cache();
    e = cudaMalloc(&p, b);
  }
  if (e != cudaSuccess) {
    cudaGetLastError();
    std::lock_guard<std::mutex> lock(mu_);
    throw std::runtime_error("cuda alloc: cudaMalloc of " + std::to_string(b) + " bytes failed: " + cudaGetErrorString(e) + " (" +
                             std::to_string(in_use_) + " bytes in use by tensors)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  in_use_ += b;
  return p;
}

void DeviceAllocator::free(void* p, size_t nbytes) {
  if (!p) return;
  size_t b = device_bin_size(nbytes);
  std::lock_guard<std::mutex> lock(mu_);
  bins_[b].push_back(p);
  in_use_ -= b;
  cached_ += b;
}

void DeviceAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [size, blocks] : bins_)
    for (void* p : blocks) cudaFree(p);  // errors ignored: we are already recovering from one
  bins_.clear();
  cached_ = 0;
}

// ---------------------------------------------------------------------------------------------
// CudaBackend: memory, copies, fill, strided copy, cast

void* CudaBackend::alloc(size_t nbytes) { return allocator_.alloc(nbytes); }

void CudaBackend::free(void* p, size_t nbytes) { allocator_.free(p, nbytes); }

void CudaBackend::copy_to_host(void* dst, const void* src, size_t n) {
  if (n) DL_CUDA_CHECK(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost));
}

void CudaBackend::copy_from_host(void* dst, const void* src, size_t n) {
  if (n) DL_CUDA_CHECK(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice));
}

void CudaBackend::copy_on_device(void* dst, const void* src, size_t n) {
  if (n && dst != src) DL_CUDA_CHECK(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToDevice));
}

void CudaBackend::fill(const Tensor& out, double value) {
  require_cuda(out, "fill", "out");
  cuda::launch_fill(out.raw_data(), out.numel(), out.dtype(), value);
}

// Views in, contiguous out: the Thrust ops of cuda/ops/ read any strides (cuda/device_ops.h).
void CudaBackend::copy_strided(const Tensor& src, const Tensor& dst) {
  require_on_cuda(dst, "copy_", "dst");
  require_input(src, dst, "copy_", "src");
  cuda::copy_strided(src, dst);
}

void CudaBackend::cast(const Tensor& src, const Tensor& dst) {
  require_cuda(dst, "to(dtype)", "dst");
  require_on_cuda(src, "to(dtype)", "src");
  if (src.shape() != dst.shape())
    fail("to(dtype) (cuda): src " + shape_str(src.shape()) + " and dst " + shape_str(dst.shape()) + " differ in shape");
  cuda::cast(src, dst);
}

}  // namespace dl::cuda
