// tests/apps/app_test_util.h - what the app tests share: a fresh scratch folder, the message of a thrown error, and
// the check that two runs left byte-identical weights.
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "op_harness.h"  // error_of
#include "tensor/safetensors.h"

namespace dl::test {

// <build>/test_tmp/<name>, emptied and created.
inline std::string app_temp_dir(const std::string& name) {
  std::string d = std::string(DL_BINARY_DIR) + "/test_tmp/" + name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// Every tensor of safetensors file b equals a's, byte for byte (an exact resume).
inline void expect_identical_weights(const std::string& a, const std::string& b) {
  TensorFile fa = load_safetensors(a), fb = load_safetensors(b);
  ASSERT_EQ(fa.tensors.size(), fb.tensors.size()) << a << " vs " << b;
  for (auto& [n, t] : fa.tensors) {
    const Tensor& u = fb.at(n);
    ASSERT_EQ(t.shape(), u.shape()) << n;
    EXPECT_EQ(0, std::memcmp(t.raw_data(), u.raw_data(), t.numel() * dtype_size(t.dtype()))) << n << " differs after resume";
  }
}

}  // namespace dl::test
