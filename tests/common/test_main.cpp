// tests/common/test_main.cpp - the main of the framework's test executables: GoogleTest's, plus the choice of what
// Device::cuda is while the tests run.
//
//   DL_TEST_DEVICE unset    the build's own backend: the GPU where there is one (tests that need it skip otherwise)
//   DL_TEST_DEVICE=twin     the host twin of the CUDA backend (cuda/twin.h): every device test - each OpCase's
//                           AgreesOnDevice above all - runs on this machine's CPU through the real backend class
// ctest runs test_autograd once more with DL_TEST_DEVICE=twin and --gtest_filter='*AgreesOnDevice*' (every OpCase).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cuda/twin.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (const char* d = std::getenv("DL_TEST_DEVICE"); d && *d) {
    if (std::string(d) != "twin") {
      std::fprintf(stderr, "DL_TEST_DEVICE=%s: expected 'twin' (or unset for the build's own device)\n", d);
      return 2;
    }
    dl::set_device_backend(dl::Device::cuda, &dl::cuda::host_twin());
  }
  return RUN_ALL_TESTS();
}
