// apps/lra_benchmark/export.h - a trained cell's model as a standard ONNX file (nn/onnx/, docs/onnx.md).
//
//   lra_benchmark export --cell runs/lra_benchmark/cells/listops__s4d__scratch__seed0 --onnx listops_s4d.onnx
//                        [--batch 4] [--seed 0]
//
// The graph takes the task's inputs at its longest length L (the export length: an SSM's kernel is computed for it)
// and a dynamic batch:
//   tokens (batch, L) int64 | features (batch, L, F + 1) float (the last channel is masked SPT's mask channel, 0)
//   mask   (batch, L) float, 1 = real position
//   a retrieval task takes a second sequence as tokens_b (or features_b) and mask_b
// and returns logits (batch, classes) as classify() does (a regression task: (batch, 1), the standardised target).
// Beside FILE it writes FILE.check.safetensors: a batch of `batch` random inputs (right-padded rows) and the
// framework's logits for them, named as the graph's inputs and output.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "model.h"

namespace lra {

// Writes m (in eval mode) to onnx_path and its check file; the inputs are drawn from seed.
void export_onnx(LraModel& m, const std::string& onnx_path, int64_t batch, uint64_t seed);

class ExportCommand {
 public:
  explicit ExportCommand(CLI::App& app);
  ExportCommand(const ExportCommand&) = delete;  // CLI11 holds pointers to the members
  CLI::App* command() const { return cmd_; }
  void run() const;

 private:
  CLI::App* cmd_;
  std::string cell_, onnx_;
  int64_t batch_ = 4;
  uint64_t seed_ = 0;
};

}  // namespace lra
