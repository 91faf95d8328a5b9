// tests/tasks_lra/test_util.h - helpers for the data tests: a temporary folder that cleans up after itself,
// writing small files, and asserting that a DataError message names what it should.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tasks/dataset.h"

namespace dl::tasks::testing {

// A fresh folder under the system temp dir, removed when the object goes out of scope.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& tag) {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           ("dl_tasks_lra_" + tag + "_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string str() const { return path.string(); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

inline void write_file(const std::string& path, const std::string& content) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream f(path, std::ios::binary);
  f << content;
  ASSERT_TRUE(f.good()) << "cannot write " << path;
}

// Runs `body`, expects a DataError, and returns its message (empty if none was thrown, which fails the test).
template <class F> std::string data_error_message(F&& body) {
  try {
    body();
  } catch (const DataError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a DataError";
  return "";
}

}  // namespace dl::tasks::testing
