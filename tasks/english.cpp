// tasks/english.cpp - see english.h.
#include "tasks/english.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "tasks/brown.h"

namespace dl::tasks {

namespace fs = std::filesystem;

std::vector<std::string> fortune_files() {
  std::error_code ec;
  std::vector<std::string> files;
  for (auto& e : fs::directory_iterator("/usr/share/games/fortunes", ec))
    if (e.is_regular_file() && !e.path().has_extension()) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

int64_t fortune_file_count() { return (int64_t)fortune_files().size(); }

EnglishCorpus english_corpus() {
  EnglishCorpus c;
  for (auto& d : load_brown()) c.text += d.text + "\n\n", c.brown_documents++;
  c.brown_bytes = (int64_t)c.text.size();
  for (auto& f : fortune_files()) {  // entries separated by lines holding "%"
    std::ifstream in(f);
    for (std::string line; std::getline(in, line);) {
      if (line == "%") line.clear();
      c.text += line + "\n";
      c.fortune_bytes += (int64_t)line.size() + 1;
    }
    c.fortune_files++;
  }
  return c;
}

}  // namespace dl::tasks
