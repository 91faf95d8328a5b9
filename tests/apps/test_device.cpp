// tests/apps/test_device.cpp - `--device` in the harness (apps/common/device.h): the names it takes, the clear errors
// without a CUDA build or a device, and what place_model does and refuses. On a machine with a GPU the cuda cases
// check the other side: the name is accepted and parameters move (the training itself is tests/cuda's and
// scripts/gpu_check.sh's).
#include <gtest/gtest.h>

#include "apps/common/config.h"
#include "apps/common/device.h"
#include "nn/layers.h"
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
  // buffers cannot be moved from outside a Module yet: named, before anything moves (so this needs no device)
  nn::BatchNorm1d bn(4);
  std::string e = error_of([&] { place_model(bn, Device::cuda); });
  EXPECT_NE(e.find("buffer 'running_mean'"), std::string::npos) << e;
  EXPECT_EQ(model_device(bn), Device::cpu) << "a refused model stays where it was";
}

}  // namespace
}  // namespace dl::harness
