// apps/common/batch_check.cpp - the batch-boundary range checks (see batch_check.h).
#include "apps/common/batch_check.h"

namespace dl::harness {

BatchLimits limits_of(const tasks::Dataset& split) {
  BatchLimits l;
  l.vocab = split.feature_dim > 0 ? 0 : split.vocab_size;
  l.classes = split.num_classes, l.positions = split.max_len, l.split = split.name;
  return l;
}

namespace {

// "listops/train example 417 (row 3 of the batch)"
std::string example_name(const tasks::Batch& b, const BatchLimits& l, int32_t row) {
  const int64_t index = row < (int32_t)b.indices.size() ? b.indices[row] : -1;
  return (l.split.empty() ? std::string("example ") : l.split + " example ") + std::to_string(index) + " (row " +
         std::to_string(row) + " of the batch)";
}

[[noreturn]] void reject(const std::string& where, const std::string& what) {
  throw tasks::DataError(where + ": " + what);
}

// The real (unpadded) positions of one row of a (B, T) token field.
void check_tokens(const tasks::Batch& b, const BatchLimits& l, const std::string& where, const char* field,
                  const std::vector<int32_t>& tokens, const std::vector<int32_t>& lengths, int32_t T) {
  for (int32_t r = 0; r < b.batch_size && r < (int32_t)lengths.size(); r++)
    for (int32_t t = 0; t < lengths[r]; t++) {
      const int32_t id = tokens[(size_t)r * T + t];
      if (id < 0 || id >= l.vocab)
        reject(where, example_name(b, l, r) + ": " + field + "[" + std::to_string(t) + "] = " + std::to_string(id) +
                                " is outside the model's vocabulary [0, " + std::to_string(l.vocab) + ")");
    }
}

void check_lengths(const tasks::Batch& b, const BatchLimits& l, const std::string& where, const char* field,
                   const std::vector<int32_t>& lengths, int32_t T) {
  for (int32_t r = 0; r < b.batch_size && r < (int32_t)lengths.size(); r++)
    if (lengths[r] > l.positions)
      reject(where, example_name(b, l, r) + ": " + field + " has length " + std::to_string(lengths[r]) +
                              ", longer than the model's " + std::to_string(l.positions) + " positions");
  if (T > l.positions)
    reject(where, std::string("the batch's ") + field + " are padded to length " + std::to_string(T) +
                            ", longer than the model's " + std::to_string(l.positions) + " positions");
}

}  // namespace

void check_batch(const tasks::Batch& b, const BatchLimits& l, const std::string& where) {
  if (!l.any()) return;
  const bool tokens = !b.tokens.empty(), tokens2 = !b.tokens2.empty();
  if (l.vocab > 0 && tokens) check_tokens(b, l, where, "tokens", b.tokens, b.lengths, b.seq_len);
  if (l.vocab > 0 && tokens2) check_tokens(b, l, where, "tokens2", b.tokens2, b.lengths2, b.seq_len2);
  if (l.classes > 0)
    for (int32_t r = 0; r < b.batch_size && r < (int32_t)b.labels.size(); r++)
      if (b.labels[r] < 0 || b.labels[r] >= l.classes)
        reject(where, example_name(b, l, r) + ": label " + std::to_string(b.labels[r]) +
                                " is outside the model's classes [0, " + std::to_string(l.classes) + ")");
  if (l.positions > 0) {
    check_lengths(b, l, where, tokens ? "tokens" : "features", b.lengths, b.seq_len);
    if (tokens2) check_lengths(b, l, where, "tokens2", b.lengths2, b.seq_len2);
  }
}

}  // namespace dl::harness
