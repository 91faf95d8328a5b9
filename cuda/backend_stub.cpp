// cuda/backend_stub.cpp - linked instead of the CUDA backend when the build found no nvcc: this build has no GPU
// backend, so a CUDA tensor fails with "this build has no cuda backend (built without CUDA)" (tensor/tensor.cpp).
#include "tensor/backend.h"

namespace dl {
Backend* cuda_backend() { return nullptr; }
}  // namespace dl

// cuda/lazy_libs.h without CUDA: there are no libraries to open.
#include "cuda/lazy_libs.h"
#include "tensor/tensor.h"

namespace dl::cuda {
void* open_library(const LazyLibrary& lib) { fail(std::string(lib.what) + ": this build has no CUDA backend (built without CUDA)"); }
void* library_symbol(const LazyLibrary& lib, const char*) { return open_library(lib); }
const std::vector<LazyLibrary>& lazy_libraries() {
  static const std::vector<LazyLibrary> none;
  return none;
}
std::vector<std::string> library_report() { return {}; }
bool library_loaded(const LazyLibrary&) { return false; }
}  // namespace dl::cuda
