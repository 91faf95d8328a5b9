// apps/common/backends/comm_mpi.cpp - the MPI communicator (comm.h): MPI_COMM_WORLD, host buffers, float and double
// sums, non-blocking collectives driven by MPI_Test, and timeouts that name a rank left behind: collectives are
// numbered alike on every rank (they are called in the same order); a rank that has waited a second in collective
// #k tells rank 0 so, and rank 0, when its own wait in #k times out, names the ranks that never said they got there.
// MPI is initialised with MPI_THREAD_FUNNELED: only the main thread calls MPI (OpenMP threads compute in between).
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "apps/common/comm.h"

namespace dl::harness {

namespace {

constexpr int kHeartbeatTag = 7001;

class Mpi : public Communicator {
 public:
  Mpi() {
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
      owns_ = true;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);  // errors come back as codes: we name them
    // every rank's host name, once (a blocking all-gather at start-up), so an error names the machine as well as the rank
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    MPI_Get_processor_name(name, &len);
    std::vector<char> all((size_t)size_ * MPI_MAX_PROCESSOR_NAME, '\0');
    MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
    for (int r = 0; r < size_; r++) hosts_.push_back(std::string(all.data() + (size_t)r * MPI_MAX_PROCESSOR_NAME));
    if (rank_ == 0) {
      seen_.assign(size_, -1);
      recv_buf_.assign(size_, 0);
      recv_req_.assign(size_, MPI_REQUEST_NULL);
      for (int r = 1; r < size_; r++) post_heartbeat_recv(r);
    }
  }
  ~Mpi() override {
    for (auto& rq : recv_req_)
      if (rq != MPI_REQUEST_NULL) MPI_Cancel(&rq), MPI_Request_free(&rq);
    drain_sends(true);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns_ && !finalized) MPI_Finalize();
  }
  std::string name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void allreduce_sum(float* x, int64_t n) override {
    wait(iallreduce_sum(x, n), "all-reduce of " + std::to_string(n) + " floats");
  }
  void allreduce_sum(double* x, int64_t n) override {
    MPI_Request rq;
    check(MPI_Iallreduce(MPI_IN_PLACE, x, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &rq), "MPI_Iallreduce");
    wait(keep(rq), "all-reduce of " + std::to_string(n) + " doubles");
  }
  void broadcast(void* data, int64_t bytes, int root) override {
    MPI_Request rq;
    check(MPI_Ibcast(data, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD, &rq), "MPI_Ibcast");
    wait(keep(rq), "broadcast of " + std::to_string(bytes) + " bytes from rank " + std::to_string(root));
  }
  std::vector<std::string> allgather(const std::string& s) override {
    std::vector<int> lens(size_);
    int mine = (int)s.size();
    MPI_Request rq;
    check(MPI_Iallgather(&mine, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD, &rq), "MPI_Iallgather");
    wait(keep(rq), "all-gather of string lengths");
    std::vector<int> offs(size_, 0);
    for (int r = 1; r < size_; r++) offs[r] = offs[r - 1] + lens[r - 1];
    std::string all(offs.back() + lens.back(), '\0');
    check(MPI_Iallgatherv(s.data(), mine, MPI_CHAR, all.data(), lens.data(), offs.data(), MPI_CHAR, MPI_COMM_WORLD, &rq),
          "MPI_Iallgatherv");
    wait(keep(rq), "all-gather of strings");
    std::vector<std::string> out;
    for (int r = 0; r < size_; r++) out.push_back(all.substr(offs[r], lens[r]));
    return out;
  }
  void barrier() override {
    MPI_Request rq;
    check(MPI_Ibarrier(MPI_COMM_WORLD, &rq), "MPI_Ibarrier");
    wait(keep(rq), "barrier");
  }

  Handle iallreduce_sum(float* x, int64_t n) override {
    MPI_Request rq;
    check(MPI_Iallreduce(MPI_IN_PLACE, x, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &rq), "MPI_Iallreduce");
    return keep(rq);
  }
  Handle ibroadcast(float* x, int64_t n, int root) override {
    MPI_Request rq;
    check(MPI_Ibcast(x, (int)n, MPI_FLOAT, root, MPI_COMM_WORLD, &rq), "MPI_Ibcast");
    return keep(rq);
  }
  Handle ireduce_scatter_sum(const float* send, float* recv, int64_t n) override {
    MPI_Request rq;
    check(MPI_Ireduce_scatter_block(send, recv, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &rq), "MPI_Ireduce_scatter_block");
    return keep(rq);
  }
  Handle iallgather(const float* send, float* recv, int64_t n) override {
    MPI_Request rq;
    check(MPI_Iallgather(send, (int)n, MPI_FLOAT, recv, (int)n, MPI_FLOAT, MPI_COMM_WORLD, &rq), "MPI_Iallgather");
    return keep(rq);
  }
  bool test(Handle h) override {
    auto it = pending_.find(h);
    if (it == pending_.end()) return true;
    int done = 0;
    check(MPI_Test(&it->second, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) pending_.erase(it);
    poll_heartbeats();
    return done != 0;
  }
  void wait(Handle h, const std::string& what) override {
    auto t0 = std::chrono::steady_clock::now();
    for (int spins = 0; !test(h); spins++) {
      double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (rank_ != 0 && waited > 1.0 && reported_ < h) report_waiting(h);
      if (waited > timeout_s)
        abort(what + " (collective #" + std::to_string(h) + ", step " + std::to_string(step_) + ") did not complete within " +
              std::to_string((int)timeout_s) + " s" + behind(h));
      if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));  // long waits: do not burn the core
    }
  }

  void heartbeat(int64_t step) override { step_ = step; }

  [[noreturn]] void abort(const std::string& why) override {
    std::fprintf(stderr, "rank %d of %d (host %s): %s; ending the job\n", rank_, size_, hosts_[rank_].c_str(), why.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
    std::abort();  // not reached
  }

 private:
  Handle keep(MPI_Request rq) {
    pending_[++next_] = rq;
    return next_;
  }
  void check(int code, const char* call) {
    if (code == MPI_SUCCESS) return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(code, msg, &len);
    abort(std::string(call) + " failed: " + std::string(msg, len));
  }
  void post_heartbeat_recv(int r) { MPI_Irecv(&recv_buf_[r], 1, MPI_INT64_T, r, kHeartbeatTag, MPI_COMM_WORLD, &recv_req_[r]); }
  void poll_heartbeats() {
    if (rank_ != 0) return;
    for (int r = 1; r < size_; r++)
      for (int done = 1; done && recv_req_[r] != MPI_REQUEST_NULL;) {
        MPI_Test(&recv_req_[r], &done, MPI_STATUS_IGNORE);
        if (done) seen_[r] = recv_buf_[r], post_heartbeat_recv(r);
      }
  }
  void drain_sends(bool all) {
    for (auto it = sends_.begin(); it != sends_.end();) {
      int done = 0;
      MPI_Test(&it->second, &done, MPI_STATUS_IGNORE);
      if (!done && all) MPI_Cancel(&it->second), MPI_Request_free(&it->second), done = 1;
      it = done ? sends_.erase(it) : std::next(it);
    }
  }
  void report_waiting(Handle h) {
    drain_sends(false);
    reported_ = h;
    sends_.push_back({std::make_unique<int64_t>(h), MPI_REQUEST_NULL});
    MPI_Isend(sends_.back().first.get(), 1, MPI_INT64_T, 0, kHeartbeatTag, MPI_COMM_WORLD, &sends_.back().second);
  }
  // On rank 0: the ranks that never said they reached collective #h.
  std::string behind(Handle h) {
    if (rank_ != 0) return "; another rank is dead or hung (rank 0 names it)";
    poll_heartbeats();
    std::string who;
    for (int r = 1; r < size_; r++)
      if (seen_[r] < h) who += (who.empty() ? "" : ", ") + std::to_string(r) + " (host " + hosts_[r] + ")";
    return who.empty() ? "; another rank is dead or hung" : ": rank " + who + " did not reach it (dead or hung)";
  }

  int rank_ = 0, size_ = 1;
  std::vector<std::string> hosts_;  // by rank: MPI_Get_processor_name (the host name)
  bool owns_ = false;
  Handle next_ = 0;
  std::map<Handle, MPI_Request> pending_;
  int64_t step_ = -1;
  Handle reported_ = 0;                   // the last collective this rank told rank 0 it waits in
  std::vector<int64_t> seen_, recv_buf_;  // rank 0: per rank, the last collective it reported
  std::vector<MPI_Request> recv_req_;
  std::vector<std::pair<std::unique_ptr<int64_t>, MPI_Request>> sends_;
};

}  // namespace

bool mpi_in_build() { return true; }
std::unique_ptr<Communicator> make_mpi_communicator() { return std::make_unique<Mpi>(); }

}  // namespace dl::harness
