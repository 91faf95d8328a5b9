// cuda/twin.h - the host twin of the CUDA backend: CudaBackend<Twin> (cuda/backend.h), the very class the GPU runs,
// compiled for a platform that keeps "device" memory in host memory and runs every op on the CPU (cuda/twin.cpp).
//
// A program makes it the device explicitly - set_device_backend(Device::cuda, &cuda::host_twin()) - and then every
// Device::cuda tensor lives on the twin: tensor/'s dispatch, the backend's argument checks and routing, the Thrust ops
// of cuda/ops/, the caching allocator, the cuBLAS argument mapping and the FFT convolution's padding and scaling all
// run, on a machine without a GPU, and are compared with the CPU (tests/cuda_logic, and every OpCase's
// AgreesOnDevice test with DL_TEST_DEVICE=twin: tests/common/test_main.cpp).
//
// The twin's memory sits behind a poisoned pointer (bit 62 flipped: not a valid x86-64 address), and the backend hands
// the Thrust ops host views of its operands (Twin::view). So a CPU kernel that is handed a device tensor - a missing
// device branch - faults at once (and a SIGSEGV handler says what that means) instead of silently computing on the
// twin's memory as a real GPU build never would.
// What it is not: a test of nvcc, the kernels' launch, device memory, cuBLAS or cuFFT (tests/cuda on a GPU).
#pragma once
#include <cstddef>
#include <cstdint>

#include "tensor/backend.h"

namespace dl::cuda {

Backend& host_twin();             // the one twin backend of this process
int64_t host_twin_allocations();  // device blocks handed out since the start (cached or not): did a run use the device?
int64_t host_twin_synchronizations();  // calls of the backend's synchronize() since the start (who waits for the device)
// Simulated device memory: with a limit, the twin's platform fails an allocation that would hold more than `bytes`
// (0: no limit), so the allocator's out-of-memory path runs (the retry after emptying the cache, the error).
void set_host_twin_memory_limit(size_t bytes);

}  // namespace dl::cuda
