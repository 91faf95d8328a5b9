// tests/cuda/cuda_test_util.h - what the CUDA test files share: whether a device is there, and the skip without one.
#pragma once
#include <gtest/gtest.h>

#include "tensor/backend.h"

namespace dl::test {

// A CUDA backend is built in and a device is present (false on every machine without a GPU, never an abort).
inline bool cuda_ready() {
  Backend* b = device_backend(Device::cuda);
  return b != nullptr && b->available();
}

}  // namespace dl::test

#define SKIP_WITHOUT_CUDA() \
  if (!dl::test::cuda_ready()) GTEST_SKIP() << "no CUDA device"
