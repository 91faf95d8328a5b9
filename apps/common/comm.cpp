// apps/common/comm.cpp - the single-process communicator and the choice among them (see comm.h).
#include "apps/common/comm.h"

#include <cstdlib>
#include <cstring>
#include <functional>

namespace dl::harness {

// Defined by backends/comm_mpi.cpp, or by backends/comm_mpi_stub.cpp in a build without MPI (false, null).
bool mpi_in_build();
std::unique_ptr<Communicator> make_mpi_communicator();
// Defined by backends/comm_nccl.cpp, or by backends/comm_nccl_stub.cpp in a build without NCCL (false, null). The
// NCCL communicator bootstraps over `host` (the mpi communicator) and hands it every call on host buffers.
bool nccl_in_build();
std::unique_ptr<Communicator> make_nccl_communicator(Communicator& host);

namespace {

class SingleProcess : public Communicator {
 public:
  std::string name() const override { return "single"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void allreduce_sum(float*, int64_t) override {}
  void allreduce_sum(double*, int64_t) override {}
  void broadcast(void*, int64_t, int) override {}
  std::vector<std::string> allgather(const std::string& s) override { return {s}; }
  void barrier() override {}
  Handle iallreduce_sum(float*, int64_t) override { return 0; }
  Handle ibroadcast(float*, int64_t, int) override { return 0; }
  Handle ireduce_scatter_sum(const float* send, float* recv, int64_t n) override { return copy(send, recv, n); }
  Handle iallgather(const float* send, float* recv, int64_t n) override { return copy(send, recv, n); }
  bool test(Handle) override { return true; }
  void wait(Handle, const std::string&) override {}
  [[noreturn]] void abort(const std::string& why) override { throw CommError(why); }

 private:
  static Handle copy(const float* send, float* recv, int64_t n) {  // one rank: its own segment, unchanged
    if (n > 0) std::memcpy(recv, send, (size_t)n * sizeof(float));
    return 0;
  }
};

}  // namespace

Communicator& single_process() {
  static SingleProcess s;
  return s;
}

bool launched_by_mpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(v)) return true;
  return false;
}

bool built_with_mpi() { return mpi_in_build(); }
bool built_with_nccl() { return nccl_in_build(); }

std::string choose_communicator(const std::string& kind, Device tensors, bool launched, bool with_mpi, bool with_nccl) {
  if (kind != "auto" && kind != "single" && kind != "mpi" && kind != "nccl")
    throw CommError("--comm '" + kind + "': expected auto, single, mpi or nccl");
  if (kind == "single" || (kind == "auto" && !launched)) return "single";
  const std::string asked = kind == "auto" ? "launched by mpirun" : "--comm " + kind;
  if (!with_mpi) throw CommError(asked + ", but this build has no MPI (install libopenmpi-dev and rebuild)");
  if (kind == "mpi" || (kind == "auto" && (tensors != Device::cuda || !with_nccl))) return "mpi";
  if (!with_nccl)
    throw CommError("--comm nccl: this build has no NCCL (CMake looks for nccl.h and libnccl.so or libnccl.so.2 in the "
                    "CUDA toolkit, DL_NCCL_ROOT and the pip wheel nvidia-nccl-cu13; it needs "
                    "the CUDA backend and MPI, and -DDL_NCCL=ON; docs/distributed.md)");
  if (tensors != Device::cuda)
    throw CommError(std::string("--comm nccl reduces CUDA tensors, but the model is on the ") + device_name(tensors) +
                    " (--device " + device_name(tensors) + "): train with --device cuda, or use --comm mpi");
  return "nccl";
}

int gpu_for_rank(int local_rank, int devices) {
  if (devices < 1) throw CommError("--comm nccl: no CUDA device on this machine (cudaGetDeviceCount found none)");
  if (local_rank < 0) throw CommError("--comm nccl: local rank " + std::to_string(local_rank) + " is negative");
  return local_rank % devices;
}

void check_one_gpu_per_rank(const std::vector<std::string>& gpu_of_rank) {
  for (size_t b = 1; b < gpu_of_rank.size(); b++)
    for (size_t a = 0; a < b; a++)
      if (gpu_of_rank[a] == gpu_of_rank[b])
        throw CommError("--comm nccl: ranks " + std::to_string(a) + " and " + std::to_string(b) + " both use GPU " +
                        gpu_of_rank[b] + "; NCCL needs one GPU per rank (start at most as many ranks per machine as it "
                        "has GPUs)");
}

Communicator& communicator(const std::string& kind, Device tensors) {
  // one declaration: nccl is made after mpi and so destroyed before it (it holds a reference to mpi)
  static std::unique_ptr<Communicator> mpi, nccl;
  const std::string k = choose_communicator(kind, tensors, launched_by_mpirun(), mpi_in_build(), nccl_in_build());
  if (k == "single") return single_process();
  const char* timeout = std::getenv("DL_COMM_TIMEOUT");
  if (!mpi) {
    mpi = make_mpi_communicator();
    if (timeout) mpi->timeout_s = std::atof(timeout);
  }
  if (k == "mpi") return *mpi;
  if (!nccl) {
    nccl = make_nccl_communicator(*mpi);
    if (timeout) nccl->timeout_s = std::atof(timeout);
  }
  return *nccl;
}

void check_same_on_every_rank(Communicator& c, const std::string& value, const std::string& what) {
  std::vector<std::string> all = c.allgather(std::to_string(std::hash<std::string>{}(value)));
  for (size_t r = 1; r < all.size(); r++)
    if (all[r] != all[0])
      throw CommError(what + " differs between ranks: rank " + std::to_string(r) + " has another than rank 0 (hash " + all[r] +
                      " vs " + all[0] + "); every rank must run the same command");
}

}  // namespace dl::harness
