// apps/common/comm.cpp - the single-process communicator and the choice among them (see comm.h).
#include "apps/common/comm.h"

#include <cstdlib>
#include <functional>

namespace dl::harness {

// Defined by backends/comm_mpi.cpp, or by backends/comm_mpi_stub.cpp in a build without MPI (false, null).
bool mpi_in_build();
std::unique_ptr<Communicator> make_mpi_communicator();

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
  Handle ireduce_sum(float*, int64_t, int) override { return 0; }
  Handle ibroadcast(float*, int64_t, int) override { return 0; }
  bool test(Handle) override { return true; }
  void wait(Handle, const std::string&) override {}
  [[noreturn]] void abort(const std::string& why) override { throw CommError(why); }
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

Communicator& communicator(const std::string& kind) {
  static std::unique_ptr<Communicator> mpi;
  if (kind == "single" || (kind == "auto" && !launched_by_mpirun())) return single_process();
  if (kind != "auto" && kind != "mpi") throw CommError("communicator '" + kind + "': expected auto, single or mpi");
  if (!mpi) mpi = make_mpi_communicator();
  if (!mpi) throw CommError("launched by mpirun, but this build has no MPI (install libopenmpi-dev and rebuild)");
  if (const char* t = std::getenv("DL_COMM_TIMEOUT")) mpi->timeout_s = std::atof(t);
  return *mpi;
}

void check_same_on_every_rank(Communicator& c, const std::string& value, const std::string& what) {
  std::vector<std::string> all = c.allgather(std::to_string(std::hash<std::string>{}(value)));
  for (size_t r = 1; r < all.size(); r++)
    if (all[r] != all[0])
      throw CommError(what + " differs between ranks: rank " + std::to_string(r) + " has another than rank 0 (hash " + all[r] +
                      " vs " + all[0] + "); every rank must run the same command");
}

}  // namespace dl::harness
