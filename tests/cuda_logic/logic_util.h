// tests/cuda_logic/logic_util.h - what the CPU runs of the device functors share: the execution policy that stands in
// for the GPU, the tolerances, and random views of random shapes as inputs.
#pragma once
#include <gtest/gtest.h>
#include <thrust/system/cpp/execution_policy.h>

#include <vector>

#include "op_harness.h"
#include "tensor/ops.h"
#include "tolerance.h"

namespace dl {

using test::all_close;
using test::Tol;

inline const auto& host_par = thrust::cpp::par;  // the execution policy that stands in for the GPU

inline Tol agree(DType t) { return t == DType::f64 ? test::kAgreeF64 : test::kAgreeF32; }
inline const Tol kExact{0, 0};

// A random shape of rank 0..4 with sizes 1..7 (odd sizes, size-1 dims that broadcast).
inline Shape random_shape(Generator& g, int max_rank = 4) {
  int rank = (int)(g.next_u64() % (max_rank + 1));
  Shape s(rank);
  for (auto& d : s) d = 1 + (int64_t)(g.next_u64() % 7);
  return s;
}

// A non-contiguous view with shape s holding random values: a permuted, narrowed slice of a larger buffer.
inline Tensor random_view(const Shape& s, Generator& g, DType t) {
  int64_t r = (int64_t)s.size();
  std::vector<int64_t> perm(r);
  for (int64_t i = 0; i < r; i++) perm[i] = r - 1 - i;  // reversed dims
  Shape big(r);
  for (int64_t i = 0; i < r; i++) big[i] = s[perm[i]] + 2;  // two extra per dim, narrowed away below
  Tensor base = t == DType::i64 ? randint(-9, 10, big, g) : randn(big, g, t);
  Tensor v = base.permute(perm);
  for (int64_t i = 0; i < r; i++) v = v.narrow(i, 1, s[i]);
  return v;
}

// The device branches' tests: Device::cuda is the host twin in this binary; a result is read back after checking that
// it stayed on the device.
inline const Device kDev = Device::cuda;
inline Tensor on_dev(const Tensor& t) { return t.to(kDev); }
inline Tensor back(const Tensor& t) {
  EXPECT_EQ(t.device(), kDev) << "the result should stay on the device";
  return t.to(Device::cpu);
}

}  // namespace dl
