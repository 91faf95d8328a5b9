// tests/onnx/ort_check.h - what every ONNX test does with an exported file: ONNX's own checker (Debian's python3-onnx)
// and ONNX Runtime (npm onnxruntime-node, through tests/onnx/run_ort.js), never a reader of our own.
//   onnx_checker(file)             "" when onnx.checker.check_model(full_check=True) accepts it, else its message;
//                                  unavailable (skip_reason set) when python3 cannot import onnx
//   run_onnx_runtime(file, in)     the graph's outputs for the inputs in the safetensors file `in` (a check file);
//                                  unavailable when node or onnxruntime-node is missing
//   expect_close(name, a, b, tol)  the tolerance policy's test, naming the output and the worst element
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "tensor/safetensors.h"
#include "tensor/tensor.h"
#include "tolerance.h"

namespace dl::test {

struct ToolResult {
  bool available = true;
  std::string skip_reason;  // why the tool could not run (not a failure)
  std::string error;        // what the tool said when it rejected the file or failed
};

ToolResult onnx_checker(const std::string& onnx_path);
ToolResult run_onnx_runtime(const std::string& onnx_path, const std::string& inputs_path, std::map<std::string, Tensor>* outputs);
// max over elements of |a - b| - (atol + rtol |b|) <= 0, with shapes equal; adds a gtest failure naming `what`.
void expect_close(const std::string& what, const Tensor& actual, const Tensor& expected, Tol tol);
// A fresh empty folder under the system's temp folder.
std::string fresh_temp_dir(const std::string& hint);

// What an app's `export` subcommand must do with a trained cell (the fpt and pretrained_convs export tests): `exe export
// --cell cell` into dir at --batch 2 and at --batch 3 --seed 1, the two files byte-identical (the batch is dynamic,
// the seed draws only the check batch), onnx.checker accepting the file, and ONNX Runtime on the one file reproducing
// each check file's "logits" and any other output it holds (kFixtureLong). `per_check` looks at each check file too (its batch: 2, then 3); failures
// name `what`. Returns why a tool could not run ("" when both ran): the caller skips with it.
std::string check_cell_export(const std::string& exe, const std::string& cell, const std::string& dir, const std::string& what,
                              const std::function<void(const TensorFile&, int64_t batch)>& per_check);
// The same for any command that exports: command(onnx) writes the file `onnx` (and its check file) when given
// " --batch N" and " --seed S" after it (the generate app's --export-onnx of a GPT-2 file).
std::string check_export(const std::function<std::string(const std::string& onnx)>& command, const std::string& dir,
                         const std::string& what, const std::function<void(const TensorFile&, int64_t batch)>& per_check);

}  // namespace dl::test
