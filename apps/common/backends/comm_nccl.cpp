// apps/common/backends/comm_nccl.cpp - the NCCL communicator (comm.h): collectives on device buffers, one GPU per
// rank, bootstrapped over the MPI communicator `host` the way llm.c does it (rank 0 makes the ncclUniqueId, MPI
// broadcasts it, every rank joins with ncclCommInitRankConfig).
//
//   device   the rank's index among the ranks of its machine (OMPI_COMM_WORLD_LOCAL_RANK; MPICH's MPI_LOCALRANKID,
//            SLURM_LOCALID; else 0) modulo the devices it sees, made current (cudaSetDevice) in the constructor. The
//            CUDA backend allocates on the current device, so the communicator must be made before the first device
//            tensor: a buffer found on another GPU is refused, naming both GPUs. Every rank's host and GPU bus id are
//            all-gathered, and two ranks on one GPU are named.
//   streams  the backend runs all its work on the legacy default stream; the collectives run on a stream of their
//            own, created non-blocking so that it never synchronises with the default stream implicitly (that would
//            serialise the backward and the reduction again). A collective first makes its stream wait for an event
//            recorded on the default stream (the gradients copied into the bucket before the call are complete),
//            then records an event of its own after the NCCL call; the Handle it returns names that event.
//   calls    all-reduce (the gradient buckets), broadcast (the start), and ZeRO-1's reduce-scatter and all-gather,
//            each one NCCL call on float32 device buffers (a host buffer is refused by name).
//   wait     polls the event and ncclCommGetAsyncError. After timeout_s (DL_COMM_TIMEOUT) or on an asynchronous NCCL
//            error it aborts the NCCL communicator (ncclCommAbort stops kernels that wait for a dead peer) and throws
//            a CommError naming what was waited for; the harness then ends the job through MPI (abort()).
//   host     allreduce_sum, broadcast, allgather and barrier on host buffers (config hashes, evaluation counts, the
//            loss, the stop flag, checkpoints' optimizer state) and heartbeats go to the MPI communicator unchanged.
// The NCCL communicator is non-blocking (ncclConfig_t::blocking = 0), so that the initialisation and the first
// collective (which connects the ranks) obey the timeout too, instead of hanging in NCCL: a call that returns
// ncclInProgress is polled with ncclCommGetAsyncError until it settles, and only then is its event recorded (the
// kernel is on the stream by then). At exit (an atexit handler registered after CUDA started, so it runs before the
// runtime's own teardown) or in the destructor, the communicator is finalized, or aborted if collectives are pending.
// What it is not: grouped calls (one NCCL call per bucket), or several GPUs per process. Where NCCL comes from at build
// time (the toolkit, libnccl-dev or the pip wheel's libnccl.so.2) is CMakeLists.txt's business; at run time the
// loader finds libnccl.so.2 (scripts/gpu_check.sh puts the folder it was found in on LD_LIBRARY_PATH).
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <thread>

#include "apps/common/comm.h"

namespace dl::harness {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string cuda_error(cudaError_t e) { return std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")"; }

int local_rank_from_env() {
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char* s = std::getenv(v)) return std::atoi(s);
  return 0;  // a one-rank job started without mpirun
}

class Nccl : public Communicator {
 public:
  explicit Nccl(Communicator& host) : host_(host) {
    timeout_s = host.timeout_s;
    // 1. this rank's GPU; a failure on any rank becomes the same CommError on every rank (no rank is left waiting)
    std::string mine;
    try {
      int devices = 0;
      cudaError_t e = cudaGetDeviceCount(&devices);
      if (e != cudaSuccess) throw CommError("--comm nccl: no CUDA device (cudaGetDeviceCount: " + cuda_error(e) + ")");
      device_ = gpu_for_rank(local_rank_from_env(), devices);
      cuda(cudaSetDevice(device_), "cudaSetDevice");
      char bus[64] = {0}, name[256] = {0};
      cuda(cudaDeviceGetPCIBusId(bus, sizeof bus - 1, device_), "cudaDeviceGetPCIBusId");
      gethostname(name, sizeof name - 1);
      mine = std::string(name) + " " + bus;
    } catch (const CommError& e) {
      mine = std::string("!") + e.what();
    }
    std::vector<std::string> all = host_.allgather(mine);
    for (size_t r = 0; r < all.size(); r++)
      if (!all[r].empty() && all[r][0] == '!') throw CommError("rank " + std::to_string(r) + ": " + all[r].substr(1));
    check_one_gpu_per_rank(all);

    // 2. the unique id from rank 0, over MPI (with whether rank 0 could make one)
    struct {
      int ok;
      ncclUniqueId id;
    } boot{};
    ncclResult_t made = ncclSuccess;
    if (rank() == 0) made = ncclGetUniqueId(&boot.id), boot.ok = made == ncclSuccess;
    host_.broadcast(&boot, sizeof boot, 0);
    if (!boot.ok)
      throw CommError("rank 0: ncclGetUniqueId failed" + (rank() == 0 ? std::string(": ") + ncclGetErrorString(made) : ""));

    // 3. the stream, and the communicator (non-blocking: polled under the timeout)
    cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    cuda(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    settle(ncclCommInitRankConfig(&comm_, size(), boot.id, rank(), &config),
           "ncclCommInitRankConfig (" + std::to_string(size()) + " ranks joining)");
    live_ = this;
    std::atexit(release_at_exit);  // registered after CUDA started, so it runs before CUDA's own teardown
  }
  ~Nccl() override {
    release();
    if (live_ == this) live_ = nullptr;
  }

  std::string name() const override { return "nccl"; }
  int rank() const override { return host_.rank(); }
  int size() const override { return host_.size(); }
  Device buffer_device() const override { return Device::cuda; }

  // ---- host buffers: MPI ----
  void allreduce_sum(float* x, int64_t n) override { host_.allreduce_sum(x, n); }
  void allreduce_sum(double* x, int64_t n) override { host_.allreduce_sum(x, n); }
  void broadcast(void* data, int64_t bytes, int root) override { host_.broadcast(data, bytes, root); }
  std::vector<std::string> allgather(const std::string& s) override { return host_.allgather(s); }
  void barrier() override { host_.barrier(); }
  void heartbeat(int64_t step) override { step_ = step, host_.heartbeat(step); }

  // ---- device buffers: NCCL on its stream ----
  Handle iallreduce_sum(float* x, int64_t n) override {
    return enqueue("all-reduce of " + std::to_string(n) + " floats", x, n,
                   [&] { return ncclAllReduce(x, x, (size_t)n, ncclFloat32, ncclSum, comm_, stream_); });
  }
  Handle ibroadcast(float* x, int64_t n, int root) override {
    return enqueue("broadcast of " + std::to_string(n) + " floats from rank " + std::to_string(root), x, n,
                   [&] { return ncclBroadcast(x, x, (size_t)n, ncclFloat32, root, comm_, stream_); });
  }
  Handle ireduce_scatter_sum(const float* send, float* recv, int64_t n) override {
    if (n > 0) check_device_buffer(send, "reduce-scatter's send buffer");
    return enqueue("reduce-scatter of " + std::to_string(n) + " floats per rank", recv, n,
                   [&] { return ncclReduceScatter(send, recv, (size_t)n, ncclFloat32, ncclSum, comm_, stream_); });
  }
  Handle iallgather(const float* send, float* recv, int64_t n) override {
    if (n > 0) check_device_buffer(send, "all-gather's send buffer");
    return enqueue("all-gather of " + std::to_string(n) + " floats per rank", recv, n,
                   [&] { return ncclAllGather(send, recv, (size_t)n, ncclFloat32, comm_, stream_); });
  }
  bool test(Handle h) override {
    auto it = pending_.find(h);
    if (it == pending_.end()) return true;
    check_async(it->second.what);
    cudaError_t e = cudaEventQuery(it->second.event);
    if (e == cudaErrorNotReady) return false;
    if (e != cudaSuccess) fail(it->second.what + ": cudaEventQuery: " + cuda_error(e));
    spare_.push_back(it->second.event);
    pending_.erase(it);
    return true;
  }
  void wait(Handle h, const std::string& what) override {  // the rule of the MPI communicator: poll, sleep when long
    auto t0 = Clock::now();
    for (int spins = 0; !test(h); spins++) {
      if (seconds_since(t0) > timeout_s)
        fail(what + " (NCCL collective #" + std::to_string(h) + ", step " + std::to_string(step_) + ") did not complete within " +
             std::to_string((int)timeout_s) + " s; another rank is dead or hung, or its GPU is stuck (ncclCommAbort called)");
      if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  [[noreturn]] void abort(const std::string& why) override {
    abort_nccl();
    host_.abort(why);
  }

 private:
  struct Pending {
    cudaEvent_t event;
    std::string what;
  };

  Handle enqueue(const std::string& what, float* x, int64_t n, const std::function<ncclResult_t()>& call) {
    if (aborted_) throw CommError(what + ": the NCCL communicator was aborted after an earlier error");
    if (n == 0) return 0;  // nothing to move; test(0) is true
    check_device_buffer(x, what);
    cuda(cudaEventRecord(ready_, cudaStreamLegacy), "cudaEventRecord");  // the backend's work so far ...
    cuda(cudaStreamWaitEvent(stream_, ready_, 0), "cudaStreamWaitEvent");  // ... comes before the collective
    settle(call(), what);
    cudaEvent_t done = nullptr;
    if (!spare_.empty()) done = spare_.back(), spare_.pop_back();
    else cuda(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    cuda(cudaEventRecord(done, stream_), "cudaEventRecord");
    pending_[++next_] = {done, what};
    return next_;
  }

  // A non-blocking NCCL call returns ncclInProgress while it is still being set up (joining, connecting): poll.
  void settle(ncclResult_t r, const std::string& what) {
    auto t0 = Clock::now();
    while (r == ncclInProgress) {
      if (seconds_since(t0) > timeout_s)
        fail(what + " did not complete within " + std::to_string((int)timeout_s) + " s; another rank is dead or hung");
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      if (ncclCommGetAsyncError(comm_, &r) != ncclSuccess) break;  // r keeps the error it was given
    }
    if (r != ncclSuccess) fail(what + " failed: " + ncclGetErrorString(r) + last_error());
  }
  void check_async(const std::string& what) {
    ncclResult_t r = ncclSuccess;
    if (comm_ && !aborted_ && ncclCommGetAsyncError(comm_, &r) == ncclSuccess && r != ncclSuccess && r != ncclInProgress)
      fail(what + ": NCCL reported " + ncclGetErrorString(r) + last_error());
  }
  std::string last_error() const {
    const char* s = ncclGetLastError(comm_);
    return s && *s ? std::string(" (") + s + ")" : std::string();
  }
  void check_device_buffer(const void* x, const std::string& what) {
    cudaPointerAttributes a{};
    cudaError_t e = cudaPointerGetAttributes(&a, x);
    if (e != cudaSuccess) cudaGetLastError();  // not sticky; clear it
    if (e != cudaSuccess || a.type != cudaMemoryTypeDevice)
      throw CommError(what + ": the buffer is not device memory (the nccl communicator's non-blocking calls take "
                      "device buffers; host buffers go through the blocking calls)");
    if (a.device != device_)
      throw CommError(what + ": the buffer is on GPU " + std::to_string(a.device) + ", but this rank's NCCL communicator is on GPU " +
                      std::to_string(device_) + " (was a device tensor made before the communicator?)");
  }
  void cuda(cudaError_t e, const char* call) {
    if (e != cudaSuccess) throw CommError(std::string("--comm nccl: ") + call + " failed: " + cuda_error(e));
  }
  [[noreturn]] void fail(const std::string& msg) {
    abort_nccl();
    throw CommError("rank " + std::to_string(rank()) + " of " + std::to_string(size()) + ": " + msg);
  }
  void abort_nccl() {
    if (comm_ && !aborted_) ncclCommAbort(comm_);
    aborted_ = true;
  }

  // Frees the NCCL communicator, the stream and the events. At exit (before CUDA tears itself down) or from the
  // destructor, whichever comes first; errors are ignored here: the process is ending.
  void release() {
    if (released_) return;
    released_ = true;
    if (comm_ && !aborted_) {
      if (!pending_.empty()) {
        ncclCommAbort(comm_);  // collectives nobody waited for: do not block on them
      } else {
        ncclResult_t r = ncclCommFinalize(comm_);  // flushes; non-blocking: poll, bounded by the timeout
        auto t0 = Clock::now();
        while (r == ncclInProgress && seconds_since(t0) < timeout_s) {
          std::this_thread::sleep_for(std::chrono::microseconds(100));
          if (ncclCommGetAsyncError(comm_, &r) != ncclSuccess) break;
        }
        if (r == ncclSuccess) ncclCommDestroy(comm_);
        else ncclCommAbort(comm_);
      }
    }
    for (auto& [h, p] : pending_) cudaEventDestroy(p.event);
    for (cudaEvent_t e : spare_) cudaEventDestroy(e);
    if (ready_) cudaEventDestroy(ready_);
    if (stream_) cudaStreamDestroy(stream_);
    pending_.clear(), spare_.clear();
  }
  static void release_at_exit() {
    if (live_) live_->release();
  }

  Communicator& host_;
  int device_ = 0;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr;
  Handle next_ = 0;
  std::map<Handle, Pending> pending_;
  std::vector<cudaEvent_t> spare_;  // completed events, reused
  int64_t step_ = -1;
  bool aborted_ = false, released_ = false;
  static inline Nccl* live_ = nullptr;
};

}  // namespace

bool nccl_in_build() { return true; }
std::unique_ptr<Communicator> make_nccl_communicator(Communicator& host) { return std::make_unique<Nccl>(host); }

}  // namespace dl::harness
