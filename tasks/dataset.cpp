// tasks/dataset.cpp - the one file reader the loaders share (see dataset.h).
#include "tasks/dataset.h"

#include <fstream>
#include <sstream>

namespace dl::tasks {

std::string read_file(const std::string& path, const std::string& what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw DataError(path + ": cannot open " + what + " (missing or unreadable)");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool Lines::next(std::string_view& line) {
  if (pos_ >= content_.size()) return false;
  size_t end = content_.find('\n', pos_);
  if (end == std::string_view::npos) end = content_.size();
  line = content_.substr(pos_, end - pos_);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  pos_ = end + 1;
  ++number_;
  return true;
}

}  // namespace dl::tasks
