// cuda/backend.cu - the CUDA device behind tensor/backend.h's seam: whether one is there, waiting for it, and
// device_backend(), the one function tensor/ calls. The class and the files of its op families: cuda/backend.cuh.
#include "cuda/backend.cuh"
#include "cuda/check.cuh"

namespace dl::cuda {

std::string CudaBackend::name() const { return "cuda"; }

// Asked on every device allocation, so it is computed once. No device or no driver is a plain "false".
bool CudaBackend::available() const {
  std::call_once(available_once_, [this] {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) cudaGetLastError();  // cudaErrorNoDevice, cudaErrorInsufficientDriver, ...
    available_ = e == cudaSuccess && n >= 1;
    if (e != cudaSuccess) reason_ = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
    else if (n < 1) reason_ = "cudaGetDeviceCount: 0 devices";
  });
  return available_;
}

std::string CudaBackend::unavailable_reason() const {
  available();
  return reason_;
}

void CudaBackend::synchronize() { DL_CUDA_CHECK(cudaDeviceSynchronize()); }

}  // namespace dl::cuda

namespace dl {

Backend* device_backend(Device d) {
  if (d != Device::cuda) return nullptr;
  // Never destroyed: tensors may be freed during static destruction, after the CUDA runtime itself.
  static cuda::CudaBackend* backend = new cuda::CudaBackend();
  return backend;
}

}  // namespace dl
