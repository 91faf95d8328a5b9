// apps/common/device.cpp - device names and moving a model (see device.h).
#include "apps/common/device.h"

#include "apps/common/config.h"
#include "tensor/backend.h"

namespace dl::harness {

Device parse_device(const std::string& name) {
  if (name == "cpu") return Device::cpu;
  if (name != "cuda") throw ConfigError("--device '" + name + "': expected cpu or cuda");
  Backend* b = device_backend(Device::cuda);
  if (!b)
    throw ConfigError("--device cuda: this build has no CUDA backend (built without CUDA: nvcc was not found or "
                      "-DDL_CUDA=OFF; see docs/cuda.md)");
  if (!b->available()) throw ConfigError("--device cuda: no CUDA device (" + b->unavailable_reason() + ")");
  return Device::cuda;
}

void place_model(nn::Module& m, Device d) {
  m.move_buffers(d);
  for (auto& [name, v] : m.named_parameters()) {
    Tensor& data = v.mutable_data();
    if (data.device() == d) continue;
    if (v.grad().defined()) v.zero_grad();  // a gradient on the old device would meet the new parameter
    data = data.to(d);
  }
}

Device model_device(const nn::Module& m) {
  for (auto& [name, v] : m.named_parameters()) return v.data().device();
  return Device::cpu;
}

}  // namespace dl::harness
