// tests/cuda/test_lazy_libs.cpp - cuBLAS, cuFFT and NCCL are opened on first use (cuda/lazy_libs.h): CPU work does
// not map them, the first call opens them, a library that cannot be found is named. Needs no device: the libraries
// exist on this machine (the CUDA toolkit), only the GPU does not. In a build without CUDA there is nothing to open.
#include <gtest/gtest.h>

#include <cstdlib>

#include "cuda/lazy_libs.h"
#include "tensor/linalg.h"
#include "tensor/tensor.h"

namespace dl {
namespace {

bool any_loaded() {
  for (const auto& lib : cuda::lazy_libraries())
    if (cuda::library_loaded(lib)) return true;
  return false;
}

// In a fresh process (the threadsafe death-test style runs the test again in a new one): a CPU matmul, and none of
// the libraries is mapped.
TEST(LazyLibraries, CpuWorkMapsNone) {
  if (cuda::lazy_libraries().empty()) GTEST_SKIP() << "built without CUDA: no libraries to open";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto cpu_work = [] {
    Generator g(1);
    Tensor a = randn({64, 64}, g), b = randn({64, 64}, g);
    return matmul(a, b).numel() == 64 * 64;
  };
  EXPECT_EXIT(std::_Exit(cpu_work() && !any_loaded() ? 0 : 1), ::testing::ExitedWithCode(0), "");
}

TEST(LazyLibraries, FirstCallOpensAndReports) {
  if (cuda::lazy_libraries().empty()) GTEST_SKIP() << "built without CUDA: no libraries to open";
  const std::vector<std::string> lines = cuda::library_report();  // calls cublasGetProperty, ... through the stubs
  ASSERT_EQ(lines.size(), cuda::lazy_libraries().size());
  for (size_t i = 0; i < lines.size(); i++) {
    const auto& lib = cuda::lazy_libraries()[i];
    EXPECT_EQ(lines[i].rfind(std::string(lib.what) + " ", 0), 0u) << lines[i];
    EXPECT_NE(lines[i].find(lib.soname), std::string::npos) << lines[i];  // the file it came from
    EXPECT_EQ(lines[i].find(" 0.0.0 "), std::string::npos) << "no version read: " << lines[i];
    EXPECT_TRUE(cuda::library_loaded(lib)) << lib.what;
  }
}

TEST(LazyLibraries, MissingLibraryIsNamed) {
  if (cuda::lazy_libraries().empty()) GTEST_SKIP() << "built without CUDA: no libraries to open";
  const cuda::LazyLibrary lib{"cuNothing", "libdl_no_such_library.so.7", "/nonexistent/libdl_no_such_library.so.7"};
  try {
    cuda::library_symbol(lib, "cuNothingCreate");
    FAIL() << "opened a library that does not exist";
  } catch (const ShapeError& e) {
    const std::string m = e.what();
    for (const char* part : {"cuNothing", "libdl_no_such_library.so.7", "/nonexistent/", "LD_LIBRARY_PATH"})
      EXPECT_NE(m.find(part), std::string::npos) << m;
  }
  EXPECT_FALSE(cuda::library_loaded(lib));
}

}  // namespace
}  // namespace dl
