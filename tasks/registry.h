// tasks/registry.h - the explicit task registry: one line per task, name -> maker of TaskData.
//
// What it is: the one place an app looks a task up by name (`--task listops`). Every maker takes the same
// small TaskConfig; a field left at 0 / empty means "the task's own default" (documented per task in
// registry.cpp). With `data_path` set, a task reads the paper's official files instead of generating or
// using the packaged default (ListOps TSVs, aclImdb, AAN TSVs, an IDX folder, CIFAR-10 batches).
//
// What it is not: a plugin system. No static self-registration (house style 6): to add a task, add one line
// to the table in registry.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tasks/dataset.h"

namespace dl::tasks {

struct TaskConfig {
  int32_t seq_len = 0;     // sequence length / crop size (0 = task default)
  int64_t train_size = 0;  // examples (0 = task default; for fixed datasets: a cap)
  int64_t val_size = 0;
  int64_t test_size = 0;
  uint64_t seed = 0;
  std::string data_path;  // official data folder; empty = generator / packaged data
};

using TaskMaker = TaskData (*)(const TaskConfig&);

struct TaskEntry {
  const char* name;
  TaskMaker make;
  const char* description;
};

const std::vector<TaskEntry>& task_registry();
std::vector<std::string> task_names();
// Throws DataError listing the known names when `name` is not registered.
TaskData make_task(const std::string& name, const TaskConfig& config);

}  // namespace dl::tasks
