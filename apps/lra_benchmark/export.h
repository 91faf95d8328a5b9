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
#include <string>

#include "apps/common/export_command.h"

#include "model.h"

namespace lra {

// Writes m (in eval mode) to onnx_path and its check file; the inputs are drawn from seed.
void export_onnx(LraModel& m, const std::string& onnx_path, int64_t batch, uint64_t seed);

// `lra_benchmark export`: rebuilds the cell's model from its file and writes it (harness::export_command).
std::string export_cell(const std::string& model_file, const dl::harness::ExportOptions& o);

}  // namespace lra
