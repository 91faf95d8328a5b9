// tensor/allocator.h - a caching host allocator.
//
// Why: on these machines the first write to a fresh 4 KiB page costs ~15 us, and glibc hands every block
// over 32 MiB back to the OS, so a training step that frees and re-allocates its activations pays millions
// of page faults. This allocator keeps freed blocks in size-class bins and hands them out again; large
// blocks are 2 MiB aligned and madvise(MADV_HUGEPAGE)d. Steady-state steps then touch no fresh pages.
// What it is not: a device allocator (cuda/ has its own) or a garbage collector; memory is kept until
// empty_cache().
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace dl {

void* host_alloc(size_t nbytes);         // 64-byte aligned; never returns nullptr (throws bad_alloc)
void host_free(void* p, size_t nbytes);  // nbytes must be the size asked for
void host_empty_cache();                 // return every cached block to the OS

struct AllocatorStats {
  size_t bytes_in_use = 0;  // handed out and not freed
  size_t bytes_cached = 0;  // freed, kept for reuse
  size_t peak_bytes_in_use = 0;
  uint64_t os_allocs = 0;  // calls that had to ask the OS
  uint64_t cache_hits = 0;
};
AllocatorStats host_allocator_stats();
void host_reset_peak();

// n elements of T (at least one) from the cache for as long as it lives: the scratch of a packing or of a copied
// operand (tensor/bf16_gemm.cpp, tensor/fast_sgemm.cpp), which then touches no fresh pages. Thread-safe, as
// host_alloc is.
template <class T> struct HostScratch {
  size_t bytes;
  T* p;
  explicit HostScratch(size_t n) : bytes(std::max<size_t>(n, 1) * sizeof(T)), p((T*)host_alloc(bytes)) {}
  ~HostScratch() { host_free(p, bytes); }
  HostScratch(const HostScratch&) = delete;
  HostScratch& operator=(const HostScratch&) = delete;
};

}  // namespace dl
