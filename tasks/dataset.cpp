// tasks/dataset.cpp - the one file reader the loaders share (see dataset.h).
#include "tasks/dataset.h"

#include <fstream>
#include <sstream>

namespace dl::tasks {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw DataError(path + ": cannot open file");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace dl::tasks
