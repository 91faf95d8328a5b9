// cuda/twin_stub.cpp - linked instead of cuda/twin.cpp when the build found no CUDA toolkit headers (Thrust): there is
// no host twin, and asking for it says so.
#include "cuda/twin.h"

namespace dl::cuda {

Backend& host_twin() {
  fail("host twin: this build has no host twin of the CUDA backend (no CUDA toolkit headers: cccl/thrust)");
}
int64_t host_twin_allocations() { return 0; }
int64_t host_twin_synchronizations() { return 0; }
void set_host_twin_memory_limit(size_t) {}

}  // namespace dl::cuda
