// apps/common/batch_tensors.h - a tasks::Batch as tensors: the one copy of its flat buffers into dl::Tensors that the
// apps' models and losses read (token ids and labels widened to i64, masks to f32 1/0, features as they are).
// What it is not: an app's own transform (ignore-index targets, an extra mask channel, bit classes); the app builds
// those from these tensors or from the batch.
//
// Shape letters as in tasks/batching.h: B batch, T padded length, T2 padded length of tokens2, F features per position,
// D target_features per example.
#pragma once
#include "tasks/batching.h"
#include "tensor/tensor.h"

namespace dl::harness {

// Host tensors; a field the batch does not have (an empty buffer) is an undefined Tensor (defined() false).
struct BatchTensors {
  Tensor tokens;           // (B, T) i64; undefined for continuous inputs
  Tensor mask;             // (B, T) f32, 1 = real position
  Tensor labels;           // (B) i64 (-1 where an example has none, e.g. a regression task)
  Tensor tokens2;          // (B, T2) i64; the second sequence of a pair, or undefined
  Tensor mask2;            // (B, T2) f32
  Tensor features;         // (B, T, F) f32; continuous inputs, or undefined
  Tensor target_features;  // (B, D) f32, or undefined
};

// A buffer whose size is not its field's shape (a Batch not made by tasks::Batcher or slice_rows) is a DataError.
BatchTensors to_tensors(const tasks::Batch& b);

}  // namespace dl::harness
