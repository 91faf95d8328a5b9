// apps/common/comm.h - the one interface data-parallel training talks through, chosen at run time:
//   single  one process (every collective is the identity); what runs without mpirun
//   mpi     OpenMPI / MPICH collectives on host buffers (apps/common/backends/comm_mpi.cpp, built when CMake
//           finds MPI); chosen when the process was started by mpirun (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK)
// (NCCL for CUDA tensors would be a third implementation; the CUDA backend does not train yet, docs/cuda.md.)
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

namespace dl::harness {

struct CommError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual std::string name() const = 0;  // "single", "mpi"
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // ---- blocking, on host buffers ----
  virtual void allreduce_sum(float* x, int64_t n) = 0;
  virtual void allreduce_sum(double* x, int64_t n) = 0;
  virtual void broadcast(void* data, int64_t bytes, int root) = 0;
  virtual std::vector<std::string> allgather(const std::string& s) = 0;  // every rank's string, in rank order
  virtual void barrier() = 0;

  // ---- non-blocking: start, then wait (test() drives progress meanwhile) ----
  using Handle = int64_t;
  virtual Handle iallreduce_sum(float* x, int64_t n) = 0;         // in place, the sum over ranks on every rank
  virtual Handle ireduce_sum(float* x, int64_t n, int root) = 0;  // in place on root (others' x unspecified after)
  virtual Handle ibroadcast(float* x, int64_t n, int root) = 0;
  virtual bool test(Handle h) = 0;
  virtual void wait(Handle h, const std::string& what) = 0;  // CommError after timeout_s

  // Where this rank is (a phase step), for the messages of a timeout.
  virtual void heartbeat(int64_t step) {}
  // End every rank of the job now, with a message (MPI_Abort); the single communicator throws CommError.
  [[noreturn]] virtual void abort(const std::string& why) = 0;

  double timeout_s = 300;  // DL_COMM_TIMEOUT (seconds) overrides it
};

// The communicator of this process (made on first use, finalized at exit): "auto" picks mpi when launched by mpirun
// and built with MPI, else single; "single" and "mpi" ask for one (mpi without MPI in the build is a CommError).
Communicator& communicator(const std::string& kind = "auto");
// The one-process communicator (tests compare a data-parallel run with it).
Communicator& single_process();
bool built_with_mpi();
bool launched_by_mpirun();

// Every rank holds the same string (a config, a checksum), or a CommError names the first rank that differs.
void check_same_on_every_rank(Communicator& c, const std::string& value, const std::string& what);

}  // namespace dl::harness
