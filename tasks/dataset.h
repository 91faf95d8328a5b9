// tasks/dataset.h - the data contract between tasks/ and everything that trains.
//
// What it is: plain C++ containers for one split of a classification task (LRA, FPT, text), with no
// dependency on Tensor. Apps turn batches of these into tensors. What it is not: a batcher (batching.h),
// a tokenizer (tokenizer.h) or a loader of any particular format (one file per task).
//
// An Example is either a token sequence (ListOps, Text, Retrieval, Image as pixel tokens, Pathfinder as
// pixel tokens) or a sequence of feature vectors (bit memory: T x 50 floats; image patches: 49 x 16),
// plus an optional second sequence for two-tower tasks (Retrieval) and an integer class label.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace dl::tasks {

// Thrown by every loader and generator for bad input: the message names file, line/record and what was wrong.
struct DataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The whole file as bytes; when it cannot be opened, DataError "<path>: cannot open <what> (missing or
// unreadable)". Every loader reads through it.
std::string read_file(const std::string& path, const std::string& what = "file");

// The lines of a file's content, numbered from 1, each without its '\n' and a trailing '\r' (files written on
// Windows). Every line-oriented loader walks its file with it:
//   Lines lines(content);
//   for (std::string_view line; lines.next(line);) { ... lines.where(file_name) ... }   // "file:line"
class Lines {
 public:
  explicit Lines(std::string_view content) : content_(content) {}
  bool next(std::string_view& line);
  int64_t number() const { return number_; }  // of the line last returned; 0 before the first
  bool at_end() const { return pos_ >= content_.size(); }
  std::string where(const std::string& file_name) const { return file_name + ":" + std::to_string(number_); }

 private:
  std::string_view content_;
  size_t pos_ = 0;
  int64_t number_ = 0;
};

struct Example {
  std::vector<int32_t> tokens;         // token ids (empty when the example is continuous)
  std::vector<int32_t> tokens2;        // second sequence for two-tower tasks (Retrieval), else empty
  std::vector<float> features;         // continuous inputs, row-major (length x feature_dim), else empty
  std::vector<float> target_features;  // continuous targets (bit memory / XOR outputs), else empty
  int32_t label = -1;                  // class id in [0, num_classes); -1 when the task is sequence-to-sequence
};

struct Dataset {
  std::string name;  // e.g. "listops/train"
  std::vector<Example> examples;
  int32_t vocab_size = 0;                // token vocabulary including specials (0 when continuous)
  int32_t feature_dim = 0;               // per-position feature size when continuous (0 when tokens)
  int32_t num_classes = 0;               // number of labels (0 when not a classification task)
  int32_t pad_id = 0;                    // id used to pad token sequences
  int32_t max_len = 0;                   // longest sequence the task can produce (for model sizing)
  std::vector<std::string> class_names;  // optional, for reports
};

// The three splits a task provides.
struct TaskData {
  Dataset train, val, test;
};

}  // namespace dl::tasks
