// cuda/ops/warps.cuh - a kernel written for one warp at a time, run by a GPU and by the host twin alike.
//
// The Thrust functors of cuda/ops/ are one thread's work; a tensor-core product is a warp's (32 lanes hold one tile
// between them). A warp functor f(w, scratch, lanes) does warp w's work with `scratch`, the warp's own shared memory,
// and spreads loops over its lanes with `for (int i = lanes.first; i < n; i += lanes.step)`:
//   on a GPU    one block of 32 threads per warp, lanes {lane, 32}: each lane takes every 32nd index;
//   on the twin one warp after another on the host, lanes {0, 1}: one loop does what the 32 lanes do.
// warp_sync() separates a phase that writes scratch from one that reads it (__syncwarp on the GPU, nothing on the
// host, where a phase's loop has finished before the next starts). The warp-wide calls (the tensor-core loads, products
// and stores of cuda/ops/tf32x3.cuh) go outside the lane loops: every lane makes them. A warp never waits for another,
// so running the warps in turn on the host is the same computation.
#pragma once
#include <thrust/system/cpp/execution_policy.h>

#include <string>
#include <type_traits>
#include <vector>

#include "cuda/ops/common.cuh"
#if defined(__CUDACC__)
#include "cuda/check.cuh"
#endif

namespace dl::ops {

struct Lanes {
  int first, step;
};

DL_HD inline void warp_sync() {
#if defined(__CUDA_ARCH__)
  __syncwarp();
#endif
}

#if defined(__CUDACC__)
template <class S, class F> __global__ void warp_kernel(F f, int64_t n) {
  extern __shared__ __align__(128) unsigned char warp_scratch[];
  if ((int64_t)blockIdx.x < n) f((int64_t)blockIdx.x, reinterpret_cast<S*>(warp_scratch), Lanes{(int)threadIdx.x, 32});
}
#endif

template <class Exec> constexpr bool on_host_v = std::is_same_v<std::decay_t<Exec>, std::decay_t<decltype(thrust::cpp::par)>>;

// A block's dynamic shared memory without cudaFuncSetAttribute: a launch asking for more fails on the GPU.
constexpr int64_t kWarpScratchBytes = 48 * 1024;

// f(w, scratch, lanes) for every warp w in [0, n), each with `count` elements of type S as scratch (32-byte aligned)
template <class S = float, class Exec, class F> void for_warps(const Exec&, int64_t n, int64_t count, F f) {
  if (n <= 0) return;
  if (count < 0 || count * (int64_t)sizeof(S) > kWarpScratchBytes)  // checked on the twin too, where nothing would fail
    fail("for_warps: " + std::to_string(count * (int64_t)sizeof(S)) + " bytes of shared memory a warp, at most " +
         std::to_string(kWarpScratchBytes) + " (a block's dynamic shared memory by default)");
  if constexpr (on_host_v<Exec>) {
    std::vector<S> scratch(count + 32 / sizeof(S));
    S* s = scratch.data();
    while (reinterpret_cast<uintptr_t>(s) % 32) s++;
    for (int64_t w = 0; w < n; w++) f(w, s, Lanes{0, 1});
  } else {
#if defined(__CUDACC__)
    if (n > 0x7fffffff) fail("for_warps: " + std::to_string(n) + " warps is more than a grid holds");
    // on the legacy default stream, in order with the Thrust ops (par_nosync) and the library calls
    warp_kernel<S><<<(unsigned)n, 32, (size_t)count * sizeof(S)>>>(f, n);
    DL_CUDA_CHECK_LAUNCH();
#else
    fail("for_warps: a device policy outside nvcc");
#endif
  }
}

}  // namespace dl::ops
