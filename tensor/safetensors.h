// tensor/safetensors.h - read and write the safetensors format (Hugging Face).
//
// Layout: 8-byte little-endian header length N, then N bytes of JSON
//   {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ..., "__metadata__": {"k": "v"}}
// then the raw little-endian data; offsets are relative to the end of the header.
// Used for model checkpoints (names = PyTorch state_dict names, docs/checkpoints.md), training state and the
// recorded PyTorch test fixtures. Writes are atomic: a temp file in the same folder, fsync, then rename.
// Reading validates everything (header length vs file size, JSON, dtype, shape vs byte count, overlap) and
// throws SafetensorsError naming the file and the tensor.
#pragma once
#include <map>
#include <stdexcept>
#include <string>

#include "tensor/tensor.h"

namespace dl {

struct SafetensorsError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct TensorFile {
  std::map<std::string, Tensor> tensors;            // CPU tensors (F32, F64, I64; F16/BF16 are widened to F32)
  std::map<std::string, std::string> metadata;      // "__metadata__"
  const Tensor& at(const std::string& name) const;  // throws naming the file's missing tensor
  bool has(const std::string& name) const { return tensors.count(name) > 0; }
  std::string source;  // the path it was read from (for messages)
};

TensorFile load_safetensors(const std::string& path);
TensorFile parse_safetensors(const std::string& bytes, const std::string& source_name);  // fuzzable core
void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});
// The bytes save_safetensors writes (to send them between processes); `what` names them in errors.
std::string serialize_safetensors(const std::map<std::string, Tensor>& tensors,
                                  const std::map<std::string, std::string>& metadata = {},
                                  const std::string& what = "safetensors");

// Write `contents` to `path` atomically (temp file + fsync + rename). Throws std::runtime_error on failure.
void atomic_write_file(const std::string& path, const std::string& contents);

}  // namespace dl
