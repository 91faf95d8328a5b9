// tasks/batching.h - turns a Dataset into a deterministic, resumable stream of padded batches.
//
// What it is: a Batch of flat row-major buffers (B batch, T padded length, F features per position) and
// a Batcher that shuffles with a seeded rng once per epoch, pads to the longest sequence in the batch or
// to a fixed length, optionally buckets by length, optionally prefetches on a background thread, and can
// report and restore its exact position (epoch, batch index, rng state) so a resumed run sees the same
// following batches.
// What it is not: a tensor converter (apps do that) or a sampler with replacement. The Dataset is held by
// reference and must outlive the Batcher.
//
// Shape letters: B = batch size, T = padded length of tokens/features, T2 = padded length of tokens2,
// F = Dataset::feature_dim, D = target_features per example.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tasks/dataset.h"

namespace dl::tasks {

// Where a stream of batches stands: the next batch to be returned is batch `index` of epoch `epoch`, and
// `rng_state` is the Batcher's generator at the start of that epoch (before it drew the epoch's order),
// written with operator<< of std::mt19937_64 so it round-trips exactly.
struct DataPosition {
  int64_t epoch = 0;
  int64_t index = 0;
  std::string rng_state;

  std::string to_string() const;                             // "epoch index rng_state..." on one line
  static DataPosition from_string(const std::string& text);  // throws DataError on malformed text
  bool operator==(const DataPosition&) const = default;
};

struct Batch {
  int32_t batch_size = 0;                 // B (the last batch of an epoch may be smaller)
  int32_t seq_len = 0;                    // T
  std::vector<int32_t> tokens;            // (B, T) padded with Dataset::pad_id; empty when continuous
  std::vector<uint8_t> mask;              // (B, T) 1 = real position, 0 = padding
  std::vector<int32_t> lengths;           // (B) unpadded lengths (after truncation)
  int32_t seq_len2 = 0;                   // T2, 0 unless the dataset has tokens2
  std::vector<int32_t> tokens2;           // (B, T2)
  std::vector<uint8_t> mask2;             // (B, T2)
  std::vector<int32_t> lengths2;          // (B)
  int32_t feature_dim = 0;                // F, 0 unless continuous
  std::vector<float> features;            // (B, T, F) padded with 0
  int32_t target_dim = 0;                 // D, 0 unless the examples have target_features
  std::vector<float> target_features;     // (B, D)
  std::vector<int32_t> labels;            // (B)
  std::vector<int64_t> indices;           // (B) dataset indices, for debugging and tests
  int64_t epoch = 0, index_in_epoch = 0;  // which batch this is
};

// Rows [begin, begin + count) of a batch, every field cut alike (the padded lengths T, T2 stay the batch's): the
// shard of a global batch one data-parallel rank trains on. begin + count must not pass batch_size.
Batch slice_rows(const Batch& b, int32_t begin, int32_t count);

struct BatcherConfig {
  int32_t batch_size = 32;
  uint64_t seed = 0;
  bool shuffle = true;         // false: dataset order every epoch
  bool drop_last = false;      // drop a final partial batch
  int32_t fixed_len = 0;       // > 0: pad every batch to this length (tokens2 too); 0: longest in batch
  bool truncate = false;       // with fixed_len: cut longer sequences (else a longer one is a DataError)
  int32_t bucket_batches = 0;  // k > 1: sort by length inside windows of k batches, then shuffle batches
  int32_t prefetch = 0;        // > 0: a background thread keeps up to this many batches ready
};

class Batcher {
 public:
  Batcher(const Dataset& data, BatcherConfig config);
  ~Batcher();  // stops and joins the prefetch thread
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // The next batch; the stream runs over epochs forever. Rethrows any exception the producer hit.
  Batch next();

  int64_t batches_per_epoch() const;
  // Position of the next batch next() will return (counts only consumed batches, not prefetched ones).
  DataPosition position() const;
  // Continue from a saved position: the following batches equal those the saving run saw next.
  void set_position(const DataPosition& position);

  // Pad/collate an explicit list of dataset indices (no shuffling involved); used by next() and tests.
  Batch collate(const std::vector<int64_t>& indices) const;

 private:
  // Producer-side state: which epoch's order is loaded and where in it we are.
  struct Cursor {
    int64_t epoch = 0, index = 0;
    std::string epoch_rng_state;              // rng state before drawing this epoch's order
    std::vector<std::vector<int64_t>> order;  // this epoch's batches as dataset indices
  };
  void start_epoch(Cursor& cursor);                    // draws the order from rng_, records the state
  Batch produce(Cursor& cursor, DataPosition& after);  // makes the batch at cursor, advances it
  void start_thread();
  void stop_thread();
  void producer_loop();

  const Dataset& data_;
  BatcherConfig config_;
  std::mt19937_64 rng_;
  Cursor cursor_;
  DataPosition consumed_;  // position after the last batch handed to the caller

  struct Item {
    Batch batch;
    DataPosition after;
    std::exception_ptr error;
  };
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool stop_ = false;
};

// Length of an example in positions: tokens.size(), or features.size() / feature_dim when continuous.
int64_t example_length(const Example& example, int32_t feature_dim);

}  // namespace dl::tasks
