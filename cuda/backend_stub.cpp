// cuda/backend_stub.cpp - linked instead of the CUDA backend when the build found no nvcc: this build has no GPU
// backend, so a CUDA tensor fails with "this build has no cuda backend (built without CUDA)" (tensor/tensor.cpp).
#include "tensor/backend.h"

namespace dl {
Backend* cuda_backend() { return nullptr; }
}  // namespace dl
