// apps/common/batch_check.h - the ranges a batch must keep before it reaches a model, checked at the batch boundary.
//
// A token id outside the model's vocabulary, a label outside its classes or a sequence longer than its positions
// would otherwise surface deep inside the model ("index 300 out of range for dim 0 of size 261" from an embedding's
// gather), naming neither the example nor the field. check_batch names them:
//   "[listops/s4d/scratch seed 0] finetune step 12: listops/train example 417 (row 3 of the batch): tokens[25] = 300
//    is outside the model's vocabulary [0, 261)"
// The training phase (phase.h) checks every batch it draws - the one place every app's training batches pass -
// against PhaseParts::limits, before the batch is split over data-parallel ranks (so the example index is the
// split's). Evaluation loops are the apps' own; they may call check_batch on their batches too.
// What is checked: token ids (tokens and tokens2) at real positions, in [0, vocab); labels in [0, classes); each
// row's length, and the padded length, at most positions. A limit of 0 is not checked.
#pragma once
#include <cstdint>
#include <string>

#include "tasks/batching.h"

namespace dl::harness {

struct BatchLimits {
  int32_t vocab = 0;      // token ids in [0, vocab): the model's embedding rows
  int32_t classes = 0;    // labels in [0, classes): the model's outputs
  int32_t positions = 0;  // at most this many positions per sequence: the model's max_len
  std::string split;      // the data's name for messages ("listops/train"); empty: the batch's own indices only
  bool any() const { return vocab > 0 || classes > 0 || positions > 0; }
};

// The limits a model built from this split has: its declared vocab_size, num_classes and max_len (each 0 when the
// split does not have one: continuous inputs, sequence-to-sequence labels).
BatchLimits limits_of(const tasks::Dataset& split);

// Throws tasks::DataError naming `where` (e.g. "[cell] train step 12"), the split, the example's index in it, the
// field, the value and the allowed range, at the first value out of range. Nothing to do when !limits.any().
void check_batch(const tasks::Batch& b, const BatchLimits& limits, const std::string& where);

}  // namespace dl::harness
