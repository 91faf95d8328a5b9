// tests/cuda_logic/main.cpp - test_cuda_logic's main: in this binary Device::cuda is always the host twin of the CUDA
// backend (cuda/twin.h), registered before any test runs.
#include <gtest/gtest.h>

#include "cuda/twin.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  dl::set_device_backend(dl::Device::cuda, &dl::cuda::host_twin());
  return RUN_ALL_TESTS();
}
