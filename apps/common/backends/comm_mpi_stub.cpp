// apps/common/backends/comm_mpi_stub.cpp - a build without MPI: no MPI communicator (comm.h says why it is asked for).
#include <memory>

#include "apps/common/comm.h"

namespace dl::harness {

bool mpi_in_build() { return false; }
std::unique_ptr<Communicator> make_mpi_communicator() { return nullptr; }

}  // namespace dl::harness
