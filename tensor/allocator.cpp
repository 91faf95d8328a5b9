// tensor/allocator.cpp - size-class bins over aligned_alloc; see allocator.h for why.
#include "tensor/allocator.h"

#include <sys/mman.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <vector>

namespace dl {
namespace {

constexpr size_t kHuge = 2u << 20;  // 2 MiB: the huge-page size

// Round a request up to its bin: multiples of 64 B below 4 KiB, then 8 steps per power of two
// (at most 12.5% waste), then whole 2 MiB pages for big blocks.
size_t bin_size(size_t n) {
  if (n == 0) n = 1;
  if (n <= 4096) return (n + 63) & ~size_t(63);
  if (n >= kHuge) return (n + kHuge - 1) & ~(kHuge - 1);
  size_t p = 4096;
  while (p * 2 <= n) p *= 2;
  size_t step = p / 8;
  return (n + step - 1) / step * step;
}

struct Cache {
  std::mutex mu;
  std::map<size_t, std::vector<void*>> bins;
  AllocatorStats stats;
};
Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: tensors may be freed during static destruction
  return *c;
}

}  // namespace

void* host_alloc(size_t nbytes) {
  size_t b = bin_size(nbytes);
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.bins.find(b);
    if (it != c.bins.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      c.stats.bytes_cached -= b;
      c.stats.bytes_in_use += b;
      c.stats.cache_hits++;
      if (c.stats.bytes_in_use > c.stats.peak_bytes_in_use) c.stats.peak_bytes_in_use = c.stats.bytes_in_use;
      return p;
    }
  }
  size_t align = b >= kHuge ? kHuge : 64;
  void* p = std::aligned_alloc(align, b);
  if (!p) {  // give the cache back to the OS and try once more before failing
    host_empty_cache();
    p = std::aligned_alloc(align, b);
    if (!p) throw std::bad_alloc();
  }
  if (b >= kHuge) madvise(p, b, MADV_HUGEPAGE);
  std::lock_guard<std::mutex> lock(c.mu);
  c.stats.os_allocs++;
  c.stats.bytes_in_use += b;
  if (c.stats.bytes_in_use > c.stats.peak_bytes_in_use) c.stats.peak_bytes_in_use = c.stats.bytes_in_use;
  return p;
}

void host_free(void* p, size_t nbytes) {
  if (!p) return;
  size_t b = bin_size(nbytes);
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.bins[b].push_back(p);
  c.stats.bytes_in_use -= b;
  c.stats.bytes_cached += b;
}

void host_empty_cache() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  for (auto& [size, v] : c.bins)
    for (void* p : v) std::free(p);
  c.bins.clear();
  c.stats.bytes_cached = 0;
}

AllocatorStats host_allocator_stats() {
  std::lock_guard<std::mutex> lock(cache().mu);
  return cache().stats;
}
void host_reset_peak() {
  std::lock_guard<std::mutex> lock(cache().mu);
  cache().stats.peak_bytes_in_use = cache().stats.bytes_in_use;
}

}  // namespace dl
