// nn/onnx/check_file.cpp - see check_file.h.
#include "nn/onnx/check_file.h"

#include "nn/onnx/graph.h"
#include "tensor/safetensors.h"

namespace dl::nn::onnx {

std::string check_file_path(const std::string& onnx_path) { return onnx_path + ".check.safetensors"; }

Tensor example_padding_mask(int64_t B, int64_t L, Generator& g) {
  Tensor m = ones({B, L});
  float* p = m.data<float>();
  for (int64_t b = 1; b < B; b++) {
    const int64_t real = L / 2 + int64_t(g.next_u64() % uint64_t(L - L / 2 + 1));  // in [L/2, L]
    for (int64_t l = real; l < L; l++) p[b * L + l] = 0;
  }
  return m;
}

void write_check_file(const std::string& onnx_path, const std::map<std::string, Tensor>& inputs,
                      const std::map<std::string, Tensor>& outputs) {
  std::map<std::string, Tensor> all;
  std::string in_names, out_names;
  for (auto& [name, t] : inputs) {
    all[name] = t.to(Device::cpu).contiguous();
    in_names += (in_names.empty() ? "" : ",") + name;
  }
  for (auto& [name, t] : outputs) {
    if (all.count(name)) fail("write_check_file: '" + name + "' is both an input and an output of " + onnx_path);
    all[name] = t.to(Device::cpu).to(DType::f32).contiguous();
    out_names += (out_names.empty() ? "" : ",") + name;
  }
  save_safetensors(check_file_path(onnx_path), all,
                   {{"inputs", in_names}, {"outputs", out_names}, {"opset", std::to_string(kOpset)}});
}

}  // namespace dl::nn::onnx
