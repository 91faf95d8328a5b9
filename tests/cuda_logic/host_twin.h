// tests/cuda_logic/host_twin.h - what the host twin of the CUDA backend (host_twin_backend.cpp) tells a test
// beyond being the device: how many device allocations it has served, so a test can see that a run used the device.
#pragma once
#include <cstdint>

namespace dl {

int64_t host_twin_allocations();  // every Backend::alloc since the process started

}  // namespace dl
