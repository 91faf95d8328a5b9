// tests/cuda/smoke/smoke_nccl.cpp - NCCL with one rank, no MPI: ncclGetUniqueId + ncclCommInitRank on device 0, then
// an all-reduce, a reduce-scatter and an all-gather of float32 device buffers on a stream of their own. With one rank
// each collective is the identity (the sum over one rank, the one segment, the one rank's buffer), so the reference is
// the input itself and the check is exact. This is the library path the nccl communicator
// (apps/common/backends/comm_nccl.cpp) stands on, without its MPI bootstrap; test_nccl runs the communicator itself.
#include <nccl.h>

#include <memory>
#include <random>

#include "tests/cuda/smoke/smoke.h"

namespace dl::smoke {
namespace {

void nccl_check(ncclResult_t r, const char* call) {
  if (r != ncclSuccess) throw std::runtime_error(std::string(call) + ": " + ncclGetErrorString(r));
}

// One rank's communicator and stream, made once for the items below (and destroyed at the end of the family).
struct OneRank {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  OneRank() {
    ncclUniqueId id;
    nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    cuda_check(cudaSetDevice(0), "cudaSetDevice");
    nccl_check(ncclCommInitRank(&comm, 1, id, 0), "ncclCommInitRank (1 rank)");
    cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  }
  ~OneRank() {
    if (stream) cudaStreamDestroy(stream);
    if (comm) ncclCommDestroy(comm);
  }
};

std::vector<float> values(size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-4, 4);
  std::vector<float> v(n);
  for (auto& x : v) x = u(g);
  return v;
}

// Runs `call` (send, recv) on n floats and compares recv with the input: max |recv - send|.
template <class F> Outcome collective(OneRank& c, const char* what, size_t n, F&& call) {
  std::vector<float> x = values(n, 21);
  DeviceBuffer send(n * sizeof(float)), recv(n * sizeof(float));
  send.put(x);
  cuda_check(cudaMemset(recv.get(), 0xff, n * sizeof(float)), "cudaMemset");  // NaNs: a recv never written fails
  nccl_check(call((const float*)send.get(), (float*)recv.get(), n), what);
  cuda_check(cudaStreamSynchronize(c.stream), what);
  Outcome o;
  o.max_err = scaled_err(as_double(recv.get_as<float>(n)), as_double(x));
  o.detail = std::to_string(n) + " floats, 1 rank";
  return o;
}

}  // namespace

void run_nccl_items(Report& r, const std::string& skip) {
  std::unique_ptr<OneRank> c;
  std::string init_error;
  r.run("nccl.init", [&] {
    int version = 0;
    nccl_check(ncclGetVersion(&version), "ncclGetVersion");
    c = std::make_unique<OneRank>();
    Outcome o;
    o.detail = "ncclGetUniqueId + ncclCommInitRank, NCCL " + std::to_string(version);
    return o;
  }, skip);
  const std::string after = !skip.empty() ? skip : c ? "" : "skipped: the NCCL init failed (nccl.init)";
  const size_t n = 1 << 20;
  r.run("nccl.all_reduce", [&] {
    return collective(*c, "ncclAllReduce", n, [&](const float* s, float* d, size_t k) {
      return ncclAllReduce(s, d, k, ncclFloat32, ncclSum, c->comm, c->stream);
    });
  }, after);
  r.run("nccl.reduce_scatter", [&] {
    return collective(*c, "ncclReduceScatter", n, [&](const float* s, float* d, size_t k) {
      return ncclReduceScatter(s, d, k, ncclFloat32, ncclSum, c->comm, c->stream);  // recvcount k per rank
    });
  }, after);
  r.run("nccl.all_gather", [&] {
    return collective(*c, "ncclAllGather", n, [&](const float* s, float* d, size_t k) {
      return ncclAllGather(s, d, k, ncclFloat32, c->comm, c->stream);  // sendcount k per rank
    });
  }, after);
}

}  // namespace dl::smoke
