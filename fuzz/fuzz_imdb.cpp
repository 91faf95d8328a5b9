// fuzz/fuzz_imdb.cpp - libFuzzer target for the IMDb reader over the official aclImdb/{train,test}/{pos,neg}/*.txt
// layout (tasks/text.h load_imdb): a folder walk, so the input describes a folder rather than one file. Built by
// scripts/fuzz.sh; the rule is in fuzz_util.h.
//
// The input: up to 12 files separated by NUL bytes. Each file's first byte says where it goes (its value mod 7; 'p' .. 'v' in order):
// 0-3 train/pos, train/neg, test/pos, test/neg as <i>.txt; 4 train/pos/<i>.lst (not a review: skipped); 5 a folder
// named test/neg/<i>.txt (skipped); 6 nowhere, and the bytes after it name a folder to delete (train, test/pos, ...).
// The rest of the file is its content.
#include "fuzz_util.h"
#include "tasks/text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  const std::string root = fuzz::scratch_dir() + "/aclImdb";
  fs::remove_all(root);
  for (const char* d : {"train/pos", "train/neg", "test/pos", "test/neg"}) fs::create_directories(root + "/" + d);
  const std::vector<std::string> files = fuzz::split_parts(data, size, 12);
  static const char* where[] = {"train/pos", "train/neg", "test/pos", "test/neg"};
  for (size_t i = 0; i < files.size(); i++) {
    if (files[i].empty()) continue;
    const int kind = (unsigned char)files[i][0] % 7;
    const std::string body = files[i].substr(1), n = std::to_string(i);
    if (kind < 4) std::ofstream(root + "/" + where[kind] + "/" + n + ".txt", std::ios::binary) << body;
    if (kind == 4) std::ofstream(root + "/train/pos/" + n + ".lst", std::ios::binary) << body;
    if (kind == 5) fs::create_directories(root + "/test/neg/" + n + ".txt");
    if (kind == 6)
      for (const char* d : {"train", "test", "train/pos", "train/neg", "test/pos", "test/neg"})
        if (body == d) fs::remove_all(root + "/" + d);
  }
  dl::tasks::ImdbConfig cfg;
  cfg.max_len = 16, cfg.val_frac = 0.25;
  try {
    const dl::tasks::TaskData t = dl::tasks::load_imdb(root, cfg);
    for (const dl::tasks::Dataset* d : {&t.train, &t.val, &t.test})
      for (const auto& e : d->examples) {
        if (e.label != 0 && e.label != 1) __builtin_trap();
        if (e.tokens.empty() || e.tokens.size() > 16) __builtin_trap();  // no empty review, truncated to max_len
        for (int32_t tok : e.tokens)
          if (tok < 0 || tok >= d->vocab_size) __builtin_trap();  // byte ids sit after the special ids
      }
    if (t.test.examples.empty()) __builtin_trap();  // a split without reviews is an error, not an empty split
  } catch (const dl::tasks::DataError&) {
  }
  return 0;
}
