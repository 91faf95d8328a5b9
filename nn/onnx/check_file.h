// nn/onnx/check_file.h - the check file written beside an exported model: FILE.onnx.check.safetensors holds an input
// batch the export made and the framework's outputs for it, each tensor named as the graph input or output it
// belongs to, so that any runtime can be checked against the export (docs/onnx.md; tests/onnx/run_ort.js reads it).
// Its metadata lists the names: "inputs" and "outputs", comma-separated, and "opset".
#pragma once
#include <map>
#include <string>

#include "tensor/tensor.h"

namespace dl::nn::onnx {

std::string check_file_path(const std::string& onnx_path);  // onnx_path + ".check.safetensors"
// Writes the check file atomically; a name both in inputs and outputs throws.
// A padding mask (B, L) f32 for an example batch: row 0 all real, every other row right-padded after a random real length
// in [L/2, L], so the check exercises the masks the model uses.
Tensor example_padding_mask(int64_t B, int64_t L, Generator& g);
void write_check_file(const std::string& onnx_path, const std::map<std::string, Tensor>& inputs,
                      const std::map<std::string, Tensor>& outputs);

}  // namespace dl::nn::onnx
