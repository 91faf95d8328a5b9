// cuda/backend_memory.cuh - the device and its memory (CudaBackend<P>, cuda/backend.h): whether a device is there, the
// caching allocator (bins of sizes, the platform's malloc only on a miss), copies between host and device, fill, the
// strided copy that makes any view contiguous, the dtype cast.
#pragma once
#include <string>

#include "cuda/backend.h"
#include "cuda/checks.h"
#include "cuda/ops/elementwise.cuh"

namespace dl::cuda {

// ---------------------------------------------------------------------------------------------
// The device

template <class P> bool CudaBackend<P>::available() const {
  std::string reason;
  return p_.probe(reason);
}

template <class P> std::string CudaBackend<P>::unavailable_reason() const {
  std::string reason;
  p_.probe(reason);
  return reason;
}

template <class P> void CudaBackend<P>::synchronize() { p_.synchronize(); }

// ---------------------------------------------------------------------------------------------
// Caching device allocator

// Round a request up to its bin: multiples of 512 B up to 1 MiB (cudaMalloc aligns to 256 B anyway),
// then 8 steps per power of two, so at most 12.5% of a block is unused.
inline size_t device_bin_size(size_t n) {
  constexpr size_t kSmall = 1u << 20;
  if (n <= kSmall) return (n + 511) & ~size_t(511);
  size_t p = kSmall;
  while (p * 2 <= n) p *= 2;
  size_t step = p / 8;
  return (n + step - 1) / step * step;
}

template <class P> void* DeviceAllocator<P>::alloc(size_t nbytes) {
  if (nbytes == 0) return nullptr;
  requests_.fetch_add(1, std::memory_order_relaxed);
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
  void* p = p_.malloc(b);
  if (!p) {  // out of memory: hand the cache back to the platform and try once more
    empty_cache();
    p = p_.malloc(b);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!p)
    fail("cuda alloc: out of device memory: " + std::to_string(nbytes) + " bytes asked for (a block of " + std::to_string(b) +
         "), " + std::to_string(in_use_) + " bytes held by tensors, the cache already handed back");
  in_use_ += b;
  return p;
}

template <class P> void DeviceAllocator<P>::free(void* p, size_t nbytes) {
  if (!p) return;
  size_t b = device_bin_size(nbytes);
  std::lock_guard<std::mutex> lock(mu_);
  bins_[b].push_back(p);
  in_use_ -= b;
  cached_ += b;
}

template <class P> void DeviceAllocator<P>::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [size, blocks] : bins_)
    for (void* p : blocks) p_.free(p);
  bins_.clear();
  cached_ = 0;
}

// ---------------------------------------------------------------------------------------------
// Memory, copies, fill, strided copy, cast

template <class P> void* CudaBackend<P>::alloc(size_t nbytes) { return allocator_.alloc(nbytes); }

template <class P> void CudaBackend<P>::free(void* p, size_t nbytes) { allocator_.free(p, nbytes); }

template <class P> void CudaBackend<P>::copy_to_host(void* dst, const void* src, size_t n) {
  if (n) p_.copy(dst, src, n, CopyKind::to_host);
}

template <class P> void CudaBackend<P>::copy_from_host(void* dst, const void* src, size_t n) {
  if (n) p_.copy(dst, src, n, CopyKind::from_host);
}

template <class P> void CudaBackend<P>::copy_on_device(void* dst, const void* src, size_t n) {
  if (n && dst != src) p_.copy(dst, src, n, CopyKind::on_device);
}

template <class P> void CudaBackend<P>::fill(const Tensor& out, double value) {
  require_cuda(out, "fill", "out");
  p_.fill(out.raw_data(), out.numel(), out.dtype(), value);
}

// Views in, contiguous out: the Thrust ops of cuda/ops/ read any strides.
template <class P> void CudaBackend<P>::copy_strided(const Tensor& src, const Tensor& dst) {
  require_on_cuda(dst, "copy_", "dst");
  require_input(src, dst, "copy_", "src");
  ops::copy_strided(p_.par(), p_.view(src), p_.view(dst));
}

template <class P> void CudaBackend<P>::cast(const Tensor& src, const Tensor& dst) {
  require_cuda(dst, "to(dtype)", "dst");
  require_on_cuda(src, "to(dtype)", "src");
  if (src.shape() != dst.shape())
    fail("to(dtype) (cuda): src " + shape_str(src.shape()) + " and dst " + shape_str(dst.shape()) + " differ in shape");
  ops::cast(p_.par(), p_.view(src), p_.view(dst));
}

}  // namespace dl::cuda

// The family's methods compiled for platform P, expanded inside namespace dl::cuda (cuda/gpu_elementwise.cu, cuda/twin.cpp).
#define DL_CUDA_MEMORY_FAMILY(P)                                            \
  template class DeviceAllocator<P>;                                        \
  template bool CudaBackend<P>::available() const;                          \
  template std::string CudaBackend<P>::unavailable_reason() const;          \
  template void CudaBackend<P>::synchronize();                              \
  template void* CudaBackend<P>::alloc(size_t);                             \
  template void CudaBackend<P>::free(void*, size_t);                        \
  template void CudaBackend<P>::copy_to_host(void*, const void*, size_t);   \
  template void CudaBackend<P>::copy_from_host(void*, const void*, size_t); \
  template void CudaBackend<P>::copy_on_device(void*, const void*, size_t); \
  template void CudaBackend<P>::fill(const Tensor&, double);                \
  template void CudaBackend<P>::copy_strided(const Tensor&, const Tensor&); \
  template void CudaBackend<P>::cast(const Tensor&, const Tensor&);
