// apps/pretrained_convs/export.h - a trained cell's encoder-decoder as a standard ONNX file (nn/onnx/, docs/onnx.md).
//
//   pretrained_convs export --cell runs/pretrained_convs/cells/sentiment__lightconv__scratch__seed0 --onnx m.onnx
//                           [--batch 4] [--seed 0]
//
// The graph is teacher forcing (Seq2SeqModel::export_onnx, nn/models/seq2seq.h) at the cell's source length
// S = max_src and the task's longest target T (with eos), with a dynamic batch:
//   input_ids          (batch, S) int64   source bytes + eos, right-padded with 0
//   attention_mask     (batch, S) float   1 = real source position
//   segments           (batch, S) int64   0 before the separator, 1 from it on: only the _xattn models
//   decoder_input_ids  (batch, T) int64   the labels shifted right (start id 0), as shift_right
//   -> logits          (batch, T, V)      the next token's logits at every target position
// Every model of the app exports: transformer (T5 relative position bias), lightconv, dynamicconv, dilatedconv,
// the other registry mixers that have an export, and each one's _xattn twin; a mixer without one refuses, naming itself.
// Greedy decoding loops outside the graph: run it with decoder_input_ids = [0, y1, .., yn, 0 ..] and read position n.
// Beside FILE it writes FILE.check.safetensors: `batch` random rows and the framework's logits for them.
#pragma once
#include <string>

#include "apps/common/export_command.h"

#include "nn/models/seq2seq.h"

namespace pconv {

// Writes m (in eval mode) for source length S and target length T to onnx_path and its check file; the example
// inputs are drawn from seed.
void export_onnx(dl::nn::Seq2SeqModel& m, const std::string& onnx_path, int64_t S, int64_t T, int64_t batch, uint64_t seed);

// `pretrained_convs export`: rebuilds the cell's encoder-decoder from its file and writes it (harness::export_command).
std::string export_cell(const std::string& model_file, const dl::harness::ExportOptions& o);

}  // namespace pconv
