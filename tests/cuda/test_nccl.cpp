// tests/cuda/test_nccl.cpp - the NCCL communicator (apps/common/backends/comm_nccl.cpp) and data-parallel training
// on the device (apps/common/data_parallel.h). Its own executable with its own main: NCCL makes this rank's GPU
// current, which must happen before any test puts a tensor on a device.
//
// Everywhere (CI, machines without a GPU): which communicator --comm and --device choose and the errors that name
// why one cannot be had; a GPU per rank from the local rank; two ranks on one GPU named; the bucket layout (the
// slices that flatten and unflatten the gradients); in a build with NCCL and no device, the error of asking for it.
// On a GPU (skipped with "no CUDA device" / "built without NCCL"), as `mpirun -np 1 test_nccl` (NCCL works with one
// rank) and `mpirun -np 2 test_nccl` on two GPUs (scripts/gpu_check.sh runs both):
//   - all-reduce, reduce-scatter, all-gather and broadcast on device buffers give the exact sums (small integers and quarters: every
//     order of float32 addition is exact), two collectives in flight at once, a host buffer refused by name
//   - one data-parallel AdamW step (clip 0.5) of a tiny Transformer and a tiny S4D, the 3-row batch split over the
//     ranks, equals the one-process step on the whole batch: to 1e-7 relative with one rank (the sum over one rank
//     is exact; only the clip norm's order of terms differs), within float32 reduction tolerance (1e-5) with more; the same with ZeRO-1 (reduce-scatter + all-gather) and with mpi and device parameters (the host
//     round trip); every rank holds the same parameters after it
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "apps/common/comm.h"
#include "apps/common/data_parallel.h"
#include "cuda_test_util.h"
#include "train_step.h"

namespace dl {
namespace {

using harness::CommError;
using harness::Communicator;

Communicator* g_nccl = nullptr;  // made by main() when NCCL is built and a device is present

// What a CommError says, or "" when none was thrown.
template <class F>
std::string comm_error_of(F&& f) {
  try {
    f();
  } catch (const CommError& e) {
    return e.what();
  }
  return "";
}

#define SKIP_WITHOUT_NCCL()                                                                  \
  SKIP_WITHOUT_CUDA();                                                                       \
  if (!harness::built_with_nccl()) GTEST_SKIP() << "built without NCCL (docs/distributed.md)"; \
  ASSERT_NE(g_nccl, nullptr)

// ---- everywhere ----

TEST(NcclChoice, AutoPicksByLaunchDeviceAndBuild) {
  using harness::choose_communicator;
  const Device cpu = Device::cpu, cuda = Device::cuda;
  //                                 kind    tensors launched mpi   nccl
  EXPECT_EQ(choose_communicator("auto", cpu, false, true, true), "single");  // no mpirun: one process, as always
  EXPECT_EQ(choose_communicator("auto", cuda, false, true, true), "single");
  EXPECT_EQ(choose_communicator("auto", cpu, true, true, true), "mpi");  // CPU tensors: MPI
  EXPECT_EQ(choose_communicator("auto", cuda, true, true, true), "nccl");
  EXPECT_EQ(choose_communicator("auto", cuda, true, true, false), "mpi");  // no NCCL: host round trips
  EXPECT_EQ(choose_communicator("single", cuda, true, true, true), "single");
  EXPECT_EQ(choose_communicator("mpi", cuda, true, true, true), "mpi");
  EXPECT_EQ(choose_communicator("mpi", cpu, false, true, false), "mpi");  // a one-rank MPI job
  EXPECT_EQ(choose_communicator("nccl", cuda, false, true, true), "nccl");
}

TEST(NcclChoice, WhatCannotBeHadIsNamed) {
  using harness::choose_communicator;
  auto err = [](auto&&... a) { return comm_error_of([&] { harness::choose_communicator(a...); }); };
  EXPECT_NE(err("nccl", Device::cuda, true, true, false).find("--comm nccl: this build has no NCCL"), std::string::npos);
  EXPECT_NE(err("nccl", Device::cpu, true, true, true).find("--comm nccl reduces CUDA tensors, but the model is on the cpu"),
            std::string::npos);
  EXPECT_NE(err("mpi", Device::cpu, false, false, false).find("--comm mpi, but this build has no MPI"), std::string::npos);
  EXPECT_NE(err("auto", Device::cpu, true, false, false).find("launched by mpirun, but this build has no MPI"), std::string::npos);
  EXPECT_NE(err("gloo", Device::cpu, true, true, true).find("--comm 'gloo': expected auto, single, mpi or nccl"), std::string::npos);
  // the real function, in this build: nccl for CPU tensors is refused whatever was built
  EXPECT_NE(comm_error_of([] { harness::communicator("nccl", Device::cpu); }), "");
}

TEST(NcclChoice, NcclWithoutADeviceIsNamed) {
  if (!harness::built_with_nccl()) {  // the stub: the choice refuses it (the test above)
    EXPECT_NE(comm_error_of([] { harness::communicator("nccl", Device::cuda); }).find("this build has no NCCL"), std::string::npos);
    return;
  }
  if (test::cuda_ready()) GTEST_SKIP() << "a CUDA device is present (this checks the error without one)";
  // the constructor runs: every rank finds no device and all of them throw the same error (none waits for another)
  std::string e = comm_error_of([] { harness::communicator("nccl", Device::cuda); });
  EXPECT_NE(e.find("rank 0: --comm nccl: no CUDA device"), std::string::npos) << e;
}

TEST(NcclChoice, GpuPerRank) {
  EXPECT_EQ(harness::gpu_for_rank(0, 1), 0);
  EXPECT_EQ(harness::gpu_for_rank(3, 4), 3);
  EXPECT_EQ(harness::gpu_for_rank(5, 4), 1);  // modulo the devices
  EXPECT_EQ(harness::gpu_for_rank(3, 1), 0);  // a scheduler that shows each rank its own single device
  EXPECT_NE(comm_error_of([] { harness::gpu_for_rank(0, 0); }).find("no CUDA device"), std::string::npos);
  EXPECT_EQ(comm_error_of([] { harness::check_one_gpu_per_rank({"a 0000:01:00.0", "a 0000:02:00.0", "b 0000:01:00.0"}); }), "");
  EXPECT_NE(comm_error_of([] { harness::check_one_gpu_per_rank({"a 0000:01:00.0", "a 0000:02:00.0", "a 0000:01:00.0"}); })
                .find("ranks 0 and 2 both use GPU a 0000:01:00.0"),
            std::string::npos);
}

// The layout the flatten / unflatten copies use: bucket boundaries where the old host loop put them, each
// parameter's slice right after the previous one, the slices tiling each bucket exactly.
TEST(NcclBuckets, LayoutTilesEachBucket) {
  harness::BucketPlan p = harness::plan_buckets({10, 300, 5, 1000, 7}, 1024, false);  // 1024 bytes = 256 floats
  EXPECT_EQ(p.numel, (std::vector<int64_t>{310, 1005, 7}));  // a bucket closes once it holds >= 1024 bytes
  EXPECT_EQ(p.bucket, (std::vector<size_t>{0, 0, 1, 1, 2}));
  EXPECT_EQ(p.offset, (std::vector<int64_t>{0, 10, 0, 5, 0}));
  EXPECT_EQ(p.params, (std::vector<std::vector<size_t>>{{0, 1}, {2, 3}, {4}}));
  EXPECT_TRUE(p.owner.empty() && p.segment.empty());  // ZeRO-1's layout: tests/dist/test_dist.cpp
  EXPECT_EQ(harness::plan_buckets({}, 1024, false).numel.size(), 0u);
  Generator g(3);  // random sizes: every bucket is tiled by its parameters' slices, in order, without gaps
  for (int trial = 0; trial < 50; trial++) {
    std::vector<int64_t> sizes;
    for (int i = 0, n = 1 + (int)(g.uniform() * 30); i < n; i++) sizes.push_back(1 + (int64_t)(g.uniform() * 700));
    harness::BucketPlan q = harness::plan_buckets(sizes, 1 + (int64_t)(g.uniform() * 4096));
    int64_t total = 0;
    for (size_t b = 0; b < q.params.size(); b++) {
      int64_t at = 0;
      for (size_t i : q.params[b]) {
        EXPECT_EQ(q.bucket[i], b);
        EXPECT_EQ(q.offset[i], at);
        at += sizes[i];
      }
      EXPECT_EQ(at, q.numel[b]);
      total += at;
    }
    int64_t want = 0;
    for (int64_t s : sizes) want += s;
    EXPECT_EQ(total, want);
  }
}

// ---- on a GPU ----

Tensor device_values(int64_t n, int rank) {  // quarters and small integers: float32 sums of them are exact
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; i++) v[i] = (float)((rank + 1) * 0.25 + (double)(i % 17));
  return from_vector(v, {n}).to(Device::cuda);
}
float* ptr(const Tensor& t) { return static_cast<float*>(t.raw_data()); }

TEST(Nccl, CollectivesOnDeviceBuffers) {
  SKIP_WITHOUT_NCCL();
  Communicator& c = *g_nccl;
  const int W = c.size(), r = c.rank();
  EXPECT_EQ(c.name(), "nccl");
  EXPECT_EQ(c.buffer_device(), Device::cuda);
  const int64_t n = (1 << 18) + 3;  // several NCCL chunks and an odd tail
  auto sum_at = [&](int64_t i) { return (float)(0.25 * W * (W + 1) / 2 + (double)W * (double)(i % 17)); };

  Tensor a = device_values(n, r), b = device_values(1000, r);  // two collectives in flight at once
  Communicator::Handle ha = c.iallreduce_sum(ptr(a), n), hb = c.iallreduce_sum(ptr(b), 1000);
  c.wait(hb, "all-reduce b"), c.wait(ha, "all-reduce a");
  std::vector<float> va = a.to_vector(), vb = b.to_vector();
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; i++) wrong += va[i] != sum_at(i);
  for (int64_t i = 0; i < 1000; i++) wrong += vb[i] != sum_at(i);
  EXPECT_EQ(wrong, 0) << "all-reduce: " << wrong << " wrong sums, e.g. " << va[1] << " for " << sum_at(1);

  Tensor x = device_values(W * n, r), part = Tensor::empty({n}, DType::f32, Device::cuda);  // reduce-scatter (ZeRO-1)
  c.wait(c.ireduce_scatter_sum(ptr(x), ptr(part), n), "reduce-scatter");
  std::vector<float> vp = part.to_vector();
  wrong = 0;
  for (int64_t i = 0; i < n; i++) wrong += vp[i] != sum_at(r * n + i);  // this rank's segment of the sum
  EXPECT_EQ(wrong, 0) << "reduce-scatter";
  Tensor all = Tensor::empty({W * n}, DType::f32, Device::cuda), mine = device_values(n, r);  // all-gather
  c.wait(c.iallgather(ptr(mine), ptr(all), n), "all-gather");
  std::vector<float> vg = all.to_vector();
  wrong = 0;
  for (int q = 0; q < W; q++) {
    std::vector<float> theirs = device_values(n, q).to_vector();
    for (int64_t i = 0; i < n; i++) wrong += vg[q * n + i] != theirs[i];
  }
  EXPECT_EQ(wrong, 0) << "all-gather";

  Tensor y = device_values(n, r);  // broadcast from the last rank: its values everywhere
  c.wait(c.ibroadcast(ptr(y), n, W - 1), "broadcast");
  std::vector<float> vy = y.to_vector(), want = device_values(n, W - 1).to_vector();
  EXPECT_EQ(vy, want) << "broadcast";

  std::vector<float> host_buf(8, 1.f);  // host buffers: the blocking calls (MPI); the non-blocking ones refuse them
  c.allreduce_sum(host_buf.data(), 8);
  EXPECT_EQ(host_buf[7], (float)W);
  EXPECT_NE(comm_error_of([&] { c.iallreduce_sum(host_buf.data(), 8); }).find("not device memory"), std::string::npos);
  EXPECT_TRUE(c.test(0));  // a zero-length collective moves nothing and is done
}

struct StepOut {
  double loss = 0, grad_norm = 0;
  std::vector<float> params;  // every parameter after the update, in named order, on the host
};

// One step of the tiny classifier of train_step.h (seed 7, eval mode: no dropout, so shards and the whole batch see
// the same function), parameters on the device: forward, backward, clip 0.5, AdamW. With `comm`, data-parallel: this
// rank's rows of the 3-row batch (rank r of W: rows [r B/W, ...), the first B mod W ranks one more, as phase.cpp),
// its loss weighted by its share, buckets of 512 bytes (several per model).
StepOut one_step(const std::string& layer, Communicator* comm, bool zero1 = false) {
  Generator g(7);
  test::TinySequenceClassifier m(layer, g);
  m.eval();
  for (auto& [name, v] : m.named_parameters()) v.mutable_data() = v.data().to(Device::cuda);
  optim::AdamWOptions ao;
  ao.lr = 1e-2, ao.weight_decay = 0.1, ao.eps = 1e-3;  // eps: see train_step.h
  optim::AdamW opt(m.parameters(), ao);
  Tensor tokens = from_vector(std::vector<int64_t>{1, 5, 7, 2, 12, 0, 3, 3, 4, 4, 9, 11, 6, 1, 0, 0, 8, 2, 10, 5, 0, 0, 0, 0}, {3, 8});
  Tensor mask = from_vector(std::vector<float>{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0}, {3, 8});
  Tensor labels = from_vector(std::vector<int64_t>{0, 2, 1}, {3});
  std::unique_ptr<harness::DataParallel> dp;
  int64_t begin = 0, n = 3;
  if (comm) {
    harness::DataParallelOptions o;
    o.zero1 = zero1, o.bucket_bytes = 512;
    dp = std::make_unique<harness::DataParallel>(m, opt, *comm, o);
    dp->broadcast_parameters();
    const int W = comm->size(), r = comm->rank(), base = 3 / W, extra = 3 % W;
    n = base + (r < extra), begin = r * base + std::min(r, extra);
    dp->arm();
  }
  Tensor tok = tokens.narrow(0, begin, n).contiguous(), msk = mask.narrow(0, begin, n).contiguous();
  Var loss = cross_entropy(m.forward(tok, msk), labels.narrow(0, begin, n).contiguous()) * ((double)n / 3);
  loss.backward();
  StepOut out;
  out.loss = loss.item();
  if (dp) {
    dp->finish();
    out.grad_norm = dp->clip(0.5);
    comm->allreduce_sum(&out.loss, 1);
  } else {
    out.grad_norm = optim::clip_grad_norm(m.parameters(), 0.5);
  }
  opt.step();
  opt.zero_grad();
  if (dp) dp->after_step();
  for (auto& [name, v] : m.named_parameters()) {
    std::vector<float> h = v.data().to_vector();
    out.params.insert(out.params.end(), h.begin(), h.end());
  }
  return out;
}

::testing::AssertionResult close(const std::vector<float>& a, const std::vector<float>& b, double rel) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << a.size() << " vs " << b.size() << " values";
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); i++) num += (a[i] - b[i]) * (double)(a[i] - b[i]), den += (double)b[i] * b[i];
  const double r = std::sqrt(num / den);
  if (r <= rel) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "relative difference " << r << " > " << rel;
}

// The one-process step on the whole batch against the data-parallel one, for each way of reducing on the device.
void expect_same_step(const std::string& layer, Communicator& comm, bool zero1) {
  const int W = comm.size();
  if (W > 3) GTEST_SKIP() << "the batch has 3 rows; " << W << " ranks would leave one without";
  StepOut one = one_step(layer, nullptr), par = one_step(layer, &comm, zero1);
  ASSERT_GT(one.grad_norm, 0.0);  // the step moved the weights (the comparison is not of two untouched models)
  if (W == 1) {
    // a sum over one rank is the gradient itself, so only the clip norm can differ: DataParallel adds the same
    // per-parameter f64 terms in reverse order (a last-bit difference of a double, which almost never reaches float32)
    EXPECT_TRUE(close(par.params, one.params, 1e-7));
    EXPECT_NEAR(par.grad_norm, one.grad_norm, 1e-12 * one.grad_norm);
  } else {  // another order of float32 sums; one AdamW step with eps 1e-3 keeps the difference at rounding size
    EXPECT_TRUE(close(par.params, one.params, 1e-5));
    EXPECT_NEAR(par.grad_norm, one.grad_norm, 1e-5 * one.grad_norm);
  }
  EXPECT_NEAR(par.loss, one.loss, 1e-6);
  std::string bytes((const char*)par.params.data(), par.params.size() * 4);
  EXPECT_NO_THROW(harness::check_same_on_every_rank(comm, bytes, "the parameters after the step"));
}

TEST(NcclDataParallel, AdamWStepEqualsTheOneProcessStep) {
  SKIP_WITHOUT_NCCL();
  for (std::string layer : {"attention", "s4d"}) {
    SCOPED_TRACE(layer);
    expect_same_step(layer, *g_nccl, false);
  }
}

TEST(NcclDataParallel, ZeroOneStepEqualsTheOneProcessStep) {
  SKIP_WITHOUT_NCCL();
  expect_same_step("attention", *g_nccl, true);
}

TEST(NcclDataParallel, MpiWithDeviceParametersGoesThroughTheHost) {
  SKIP_WITHOUT_NCCL();  // the mpi communicator the nccl one stands on
  expect_same_step("attention", harness::communicator("mpi"), false);
}

TEST(NcclDataParallel, HostParametersAreRefused) {
  SKIP_WITHOUT_NCCL();
  Generator g(7);
  test::TinySequenceClassifier m("attention", g);
  optim::AdamW opt(m.parameters(), {});
  std::string e = comm_error_of([&] { harness::DataParallel dp(m, opt, *g_nccl); });
  EXPECT_NE(e.find("the nccl communicator reduces cuda buffers, but the parameter"), std::string::npos) << e;
}

}  // namespace
}  // namespace dl

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  using namespace dl;
  if (harness::built_with_nccl() && test::cuda_ready()) {
    try {  // first: NCCL makes this rank's GPU current before any device tensor exists
      g_nccl = &harness::communicator("nccl", Device::cuda);
      std::cerr << "test_nccl: nccl, " << g_nccl->size() << " rank(s); this is rank " << g_nccl->rank() << "\n";
    } catch (const std::exception& e) {
      std::cerr << "test_nccl: the NCCL communicator could not be made: " << e.what() << "\n";
      return 1;
    }
  }
  int failed = RUN_ALL_TESTS();
  if (g_nccl && g_nccl->size() > 1) {  // the job fails when any rank failed
    double f = failed;
    g_nccl->allreduce_sum(&f, 1);
    failed = f > 0;
  }
  return failed;
}
