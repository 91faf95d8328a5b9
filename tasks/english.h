// tasks/english.h - the packaged English text that the apps' language models pretrain on (no download beyond
// the npm Brown corpus).
//
// What it is: the 500 Brown documents (brown.h, detokenised, in file-id order, each followed by a blank line),
// then every fortune file Debian's `fortunes` package installs (/usr/share/games/fortunes, files without an
// extension, sorted by name), entries separated by blank lines (the "%" lines become empty lines). About 6 MB
// of Brown and 2.6 MB of fortunes (43 files). Without `fortunes` installed the corpus is Brown alone; fortune_file_count()
// lets a cache key tell the two apart.
// What it is not: deduplicated or filtered (fortunes holds verse, quotes and some offensive jokes, as shipped).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dl::tasks {

struct EnglishCorpus {
  std::string text;
  int64_t brown_documents = 0, brown_bytes = 0, fortune_files = 0, fortune_bytes = 0;
};

EnglishCorpus english_corpus();
std::vector<std::string> fortune_files();  // the paths read, sorted
int64_t fortune_file_count();

}  // namespace dl::tasks
