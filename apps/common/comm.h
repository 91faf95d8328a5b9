// apps/common/comm.h - the one interface data-parallel training talks through, chosen at run time:
//   single  one process (every collective is the identity); what runs without mpirun
//   mpi     OpenMPI / MPICH collectives on host buffers (apps/common/backends/comm_mpi.cpp, built when CMake
//           finds MPI); chosen when the process was started by mpirun (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK)
//   nccl    NCCL collectives on device buffers, one GPU per rank (apps/common/backends/comm_nccl.cpp, built when CMake
//           finds NCCL - nccl.h and libnccl.so or libnccl.so.2 - beside the CUDA backend and MPI); bootstrapped over the mpi communicator, to which it also hands
//           every call on host buffers; chosen under mpirun when the model is on the device (--device cuda)
//
// Buffers: the blocking calls always take host memory; the non-blocking ones (the gradient buckets, ZeRO-1's
// reduce-scatters and all-gathers) take memory where buffer_device() says - the host for single and mpi, this rank's
// GPU for nccl.
//
// Every rank must call the collectives in the same order. A collective that does not complete within timeout_s
// (a rank died or hangs) ends the job: the rank that sees it names what it waited for and, on rank 0, which ranks
// had not reached the step (heartbeats), then aborts the whole job, so nothing hangs silently.
#pragma once
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace dl::harness {

struct CommError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual std::string name() const = 0;  // "single", "mpi", "nccl"
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // ---- blocking, on host buffers ----
  virtual void allreduce_sum(float* x, int64_t n) = 0;
  virtual void allreduce_sum(double* x, int64_t n) = 0;
  virtual void broadcast(void* data, int64_t bytes, int root) = 0;
  virtual std::vector<std::string> allgather(const std::string& s) = 0;  // every rank's string, in rank order
  virtual void barrier() = 0;

  // ---- non-blocking, on buffers where buffer_device() says: start, then wait (test() drives progress meanwhile) ----
  virtual Device buffer_device() const { return Device::cpu; }
  using Handle = int64_t;
  virtual Handle iallreduce_sum(float* x, int64_t n) = 0;  // in place, the sum over ranks on every rank
  virtual Handle ibroadcast(float* x, int64_t n, int root) = 0;
  // ZeRO-1's two collectives (send and recv must not overlap):
  //   reduce-scatter  send holds size() segments of n floats; recv (n floats) gets the sum over ranks of segment rank()
  //   all-gather      send holds n floats; recv (size() segments of n) gets every rank's send, in rank order
  virtual Handle ireduce_scatter_sum(const float* send, float* recv, int64_t n) = 0;
  virtual Handle iallgather(const float* send, float* recv, int64_t n) = 0;
  virtual bool test(Handle h) = 0;
  virtual void wait(Handle h, const std::string& what) = 0;  // CommError after timeout_s

  // Where this rank is (a phase step), for the messages of a timeout.
  virtual void heartbeat(int64_t step) {}
  // End every rank of the job now, with a message (MPI_Abort); the single communicator throws CommError.
  [[noreturn]] virtual void abort(const std::string& why) = 0;

  double timeout_s = 300;  // DL_COMM_TIMEOUT (seconds) overrides it
};

// The communicator of this process (made on first use, finalized at exit) for a model whose parameters live on
// `tensors` (--comm and --device): see choose_communicator. The mpi communicator is made once and shared: nccl uses it.
Communicator& communicator(const std::string& kind = "auto", Device tensors = Device::cpu);
// The one-process communicator (tests compare a data-parallel run with it).
Communicator& single_process();
bool built_with_mpi();
bool built_with_nccl();
bool launched_by_mpirun();

// Which communicator `communicator(kind, tensors)` makes: "single", "mpi" or "nccl", or a CommError saying why the
// asked-for one cannot be had. "auto": single without mpirun; under mpirun nccl for CUDA tensors when NCCL is in the
// build, else mpi (CUDA tensors then go through host copies). "single", "mpi" and "nccl" ask for one; nccl needs NCCL
// in the build and CUDA tensors; mpi and nccl without mpirun run as a one-rank MPI job.
std::string choose_communicator(const std::string& kind, Device tensors, bool launched, bool with_mpi, bool with_nccl);

// The GPU of a rank: its rank among the ranks of its machine (OMPI_COMM_WORLD_LOCAL_RANK) modulo the devices it sees
// (a scheduler that gives each rank one visible device makes that 0); a CommError without a device.
int gpu_for_rank(int local_rank, int devices);
// NCCL needs one GPU per rank: given every rank's "host GPU-bus-id" (rank order), a CommError naming the first two
// ranks that share one (too many ranks started on a machine).
void check_one_gpu_per_rank(const std::vector<std::string>& gpu_of_rank);

// Every rank holds the same string (a config, a checksum), or a CommError names the first rank that differs.
void check_same_on_every_rank(Communicator& c, const std::string& value, const std::string& what);

}  // namespace dl::harness
