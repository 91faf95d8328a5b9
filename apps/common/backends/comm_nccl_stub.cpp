// apps/common/backends/comm_nccl_stub.cpp - a build without NCCL (no CUDA backend, no MPI, no nccl.h / libnccl found:
// CMakeLists.txt looks in the toolkit, DL_NCCL_ROOT and the pip wheel's folder; or -DDL_NCCL=OFF): no NCCL communicator (comm.cpp's choose_communicator says why one is asked for).
#include <memory>

#include "apps/common/comm.h"

namespace dl::harness {

bool nccl_in_build() { return false; }
std::unique_ptr<Communicator> make_nccl_communicator(Communicator&) { return nullptr; }

}  // namespace dl::harness
