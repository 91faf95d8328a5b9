// tests/tasks_gen/data_error_of.h - the message of the DataError a call throws, for the readers' bad-file tests; no
// error at all fails the test. Stricter than dl::test::error_of (tests/common/op_harness.h), which takes any
// exception: here another exception type propagates and fails the test, so a reader that throws the wrong kind of
// error is caught.
#pragma once
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "tasks/dataset.h"

namespace dl::test {

inline std::string data_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const dl::tasks::DataError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a DataError";
  return "";
}

}  // namespace dl::test
