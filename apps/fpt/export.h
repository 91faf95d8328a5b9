// apps/fpt/export.h - a trained FPT cell's model as a standard ONNX file (nn/onnx/, docs/onnx.md).
//
//   fpt export --cell runs/fpt/cells/bit_xor__fpt__seed0 --onnx bit_xor_fpt.onnx [--batch 4] [--seed 0]
//
// The graph is FptModel::forward (model.h) in eval mode for the task's longest input, L positions, with a dynamic batch:
//   tokens (batch, L) int64 | features (batch, L, F) float                       the task's input
//   mask   (batch, L) float, 1 = real position: only with masked_readout on a classification task (the one place
//          forward reads the mask: each row's last real position is read out)
//   -> logits (batch, R, outputs): R read-out tokens (1 for classification, n / patch for the bit tasks)
// Inside: the input layer (Embedding as Gather, or Linear), the body - GPT-2's blocks fed embeddings (every arm
// but lstm: fpt, full, full_lang, random, bitmem, the ablations and the depths differ only in which weights
// trained, so they share this graph) or the layer-norm LSTM (unrolled over L: nn/recurrent/lstm.h) - then the
// read-out positions (Slice of the last R, or a one-hot of the last real one times the states) and the output Linear.
// Rows shorter than L are right-padded. The body is causal, so a real position never sees padding; the
// last-position read-out (the paper's, masked_readout off) reads position L - 1, as the model does on a batch
// padded to L. Beside FILE it writes FILE.check.safetensors: `batch` random rows and the framework's logits for them.
#pragma once
#include <string>

#include "apps/common/export_command.h"

#include "model.h"

namespace fpt {

// Writes m (in eval mode) to onnx_path and its check file; the example inputs are drawn from seed.
void export_onnx(FptModel& m, const std::string& onnx_path, int64_t batch, uint64_t seed);

// `fpt export`: rebuilds the cell's model from its file and writes it (harness::export_command).
std::string export_cell(const std::string& model_file, const dl::harness::ExportOptions& o);

}  // namespace fpt
