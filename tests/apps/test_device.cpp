// tests/apps/test_device.cpp - `--device` in the harness (apps/common/device.h): the names it takes, the clear errors
// without a CUDA build or a device, and what place_model moves (parameters in place, buffers with them). On a machine
// with a GPU (or with DL_TEST_DEVICE=twin) the cuda cases check the other side: the name is accepted, parameters and
// buffers move (the training itself is tests/cuda's, tests/cuda_logic's and scripts/gpu_check.sh's).
#include <gtest/gtest.h>

#include "apps/common/config.h"
#include "apps/common/device.h"
#include "nn/layers.h"
#include "tests/common/op_harness.h"  // all_close
#include "tensor/backend.h"

namespace dl::harness {
namespace {

bool cuda_present() {
  Backend* b = device_backend(Device::cuda);
  return b && b->available();
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(HarnessDevice, NamesAndTheTwoClearErrors) {
  EXPECT_EQ(parse_device("cpu"), Device::cpu);
  EXPECT_NE(error_of([] { parse_device("tpu"); }).find("--device 'tpu': expected cpu or cuda"), std::string::npos);
  if (cuda_present()) {
    EXPECT_EQ(parse_device("cuda"), Device::cuda);
    return;
  }
  std::string e = error_of([] { parse_device("cuda"); });
  const bool built = device_backend(Device::cuda) != nullptr;
  // with the backend built: the driver's reason; without it: the build's
  const std::string want = built ? "--device cuda: no CUDA device (cudaGetDeviceCount: " : "--device cuda: this build has no CUDA backend";
  EXPECT_NE(e.find(want), std::string::npos) << e;
}

TEST(HarnessDevice, PlaceModelMovesParametersAndRefusesBuffers) {
  Generator g(1);
  nn::Linear lin(3, 2, g);
  Var w = lin.weight;
  place_model(lin, Device::cpu);  // a no-op where the model already is
  EXPECT_EQ(lin.weight.impl(), w.impl()) << "the same Var: an optimiser built on it keeps working";
  EXPECT_EQ(model_device(lin), Device::cpu);
  if (cuda_present()) {
    place_model(lin, Device::cuda);
    EXPECT_EQ(lin.weight.impl(), w.impl());
    EXPECT_EQ(model_device(lin), Device::cuda);
  }
}

// Buffers move with the model and are updated there: BatchNorm's running statistics after one training step on the
// device equal the CPU's.
TEST(HarnessDevice, PlaceModelMovesBuffersAndTheyUpdateThere) {
  if (!cuda_present()) GTEST_SKIP() << "no cuda device (DL_TEST_DEVICE=twin runs this on the host twin)";
  nn::BatchNorm1d cpu(4), dev(4);
  place_model(dev, Device::cuda);
  for (auto& [name, t] : dev.named_buffers()) EXPECT_EQ(t.device(), Device::cuda) << name;
  Generator g(3);
  Tensor x = randn({5, 4}, g);
  cpu.forward(Var(x));
  dev.forward(Var(x.to(Device::cuda)));
  auto a = cpu.named_buffers(), b = dev.named_buffers();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); i++)
    EXPECT_TRUE(test::all_close(b[i].second.to(Device::cpu).to(DType::f64), a[i].second.to(DType::f64), test::Tol{1e-6, 1e-6},
                                a[i].first));
}

}  // namespace
}  // namespace dl::harness
