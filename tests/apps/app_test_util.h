// tests/apps/app_test_util.h - what the app tests share: a fresh scratch folder.
#pragma once
#include <filesystem>
#include <functional>
#include <string>

namespace dl::test {

// <build>/test_tmp/<name>, emptied and created.
inline std::string app_temp_dir(const std::string& name) {
  std::string d = std::string(DL_BINARY_DIR) + "/test_tmp/" + name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// The message of the exception f throws, or "" (the app tests link no op harness).
inline std::string error_text(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace dl::test
