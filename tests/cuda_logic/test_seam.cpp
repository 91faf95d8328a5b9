// tests/cuda_logic/test_seam.cpp - the device seam itself, on the host twin: the twin is the real backend class
// (CudaBackend<Twin>, cuda/twin.h), so its argument checks, its caching allocator and the registry of backends run
// here as they would on a GPU.
#include <gtest/gtest.h>

#include "autograd/ops.h"
#include "autograd/profile.h"
#include "cuda/twin.h"
#include "logic_util.h"
#include "tensor/backend.h"

namespace dl {
namespace {

using test::error_of;

TEST(Seam, TheRegisteredDeviceIsTheTwinAndStorageRemembersItsBackend) {
  Backend* twin = &cuda::host_twin();
  ASSERT_EQ(device_backend(Device::cuda), twin);
  EXPECT_EQ(twin->name(), "cuda");
  Tensor x = ones({3}, DType::f32, Device::cuda);
  EXPECT_EQ(x.storage()->backend, twin);
  // a block is freed by the backend that allocated it, even after another is registered
  set_device_backend(Device::cuda, nullptr);
  EXPECT_EQ(device_backend(Device::cuda), nullptr);
  EXPECT_NE(error_of([] { (void)ones({2}, DType::f32, Device::cuda); }).find("this build has no cuda backend"),
            std::string::npos);
  x = Tensor();  // freed on the twin while none is registered
  set_device_backend(Device::cuda, twin);
  EXPECT_EQ(error_of([] { set_device_backend(Device::cpu, nullptr); }), "set_device_backend: cpu has no backend to set");
}

// The backend's own checks (cuda/checks.h) name the op and the operand: they ran only on a GPU before the seam.
TEST(Seam, TheBackendsArgumentChecksNameTheOp) {
  Backend& b = cuda::host_twin();
  Tensor a = zeros({2, 3}, DType::f32, Device::cuda), w = zeros({3, 4}, DType::f64, Device::cuda);
  Tensor out = zeros({2, 4}, DType::f32, Device::cuda);
  EXPECT_EQ(error_of([&] { b.matmul(a, w, out); }), "matmul (cuda): dtypes differ: a f32, b f64, out f32");
  Tensor host = zeros({2, 3});
  EXPECT_EQ(error_of([&] { b.unary(UnaryOp::exp, host, a); }), "unary (cuda): x is on cpu");
  EXPECT_EQ(error_of([&] { b.fill(a.transpose(0, 1), 1.0); }), "fill (cuda): out [3, 2] must be contiguous");
  Tensor X = zeros({2, 2, 2}, DType::f32, Device::cuda);
  EXPECT_EQ(error_of([&] { b.rfft_rows(out, X); }),
            "rfft (cuda): x (R, n) [2, 4] needs X (R, n/2 + 1, 2) of its dtype, got [2, 2, 2]");
}

// The caching allocator on a twin of 2 MiB: a freed block is reused, and when the device is full the cache is handed
// back and the request tried again; what still does not fit is an error naming the bytes asked for and held.
TEST(Seam, OutOfDeviceMemoryEmptiesTheCacheThenNamesWhatWasAskedAndHeld) {
  struct Limit {
    explicit Limit(size_t n) { cuda::set_host_twin_memory_limit(n); }
    ~Limit() { cuda::set_host_twin_memory_limit(0); }
  };
  Backend& b = cuda::host_twin();
  {
    Limit lim(2u << 20);
    void* p = b.alloc(600 << 10);
    b.free(p, 600 << 10);
    EXPECT_EQ(b.alloc(600 << 10), p) << "a freed block is handed out again";
    b.free(p, 600 << 10);
    // 1.5 MiB does not fit under 2 MiB beside the cached blocks (ours and earlier tests'): it does once they are handed back
    void* q = b.alloc(1536 << 10);
    ASSERT_NE(q, nullptr);
    std::string e = error_of([&] { b.alloc(1 << 20); });
    EXPECT_NE(e.find("cuda alloc: out of device memory: 1048576 bytes asked for"), std::string::npos) << e;
    EXPECT_NE(e.find("1572864 bytes held by tensors"), std::string::npos) << e;
    b.free(q, 1536 << 10);
  }
}

// On a device the ops only queue work (the GPU's Thrust policy is par_nosync), so the op profile must wait for the
// device before each clock read, or a row would hold whatever was queued before the next wait. The same step made
// without the profile waits not once: the waits are the profile's, and the ops themselves never block.
TEST(Seam, TheOpProfileWaitsForTheDeviceAndTheOpsDoNot) {
  Generator g(3);
  Var x(randn({4, 8}, g).to(Device::cuda), true), w(randn({8, 5}, g).to(Device::cuda), true);
  auto step = [&] { sum(relu(matmul(x, w))).backward(); };
  const int64_t s0 = cuda::host_twin_synchronizations();
  step();
  EXPECT_EQ(cuda::host_twin_synchronizations(), s0) << "an unprofiled step waited for the device";
  {
    ProfileScope scope;
    step();
  }
  int64_t calls = 0;
  for (const OpProfile& r : profile_table()) calls += r.forward_calls + r.backward_calls;
  EXPECT_GE(calls, 6) << "matmul, relu and sum, forward and backward";
  EXPECT_GE(cuda::host_twin_synchronizations() - s0, calls) << "a profiled op's clock was read without a wait";
}

}  // namespace
}  // namespace dl
