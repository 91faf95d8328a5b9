// tasks/text.cpp - LRA Text task on Brown documents (byte crops, split by document) and the IMDb loader.
#include "tasks/text.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

#include "tasks/brown.h"
#include "tasks/tokenizer.h"

namespace dl::tasks {

namespace fs = std::filesystem;

uint64_t uniform_below(std::mt19937_64& rng, uint64_t n) {
  if (n == 0) throw DataError("uniform_below: n must be > 0");
  const uint64_t limit = std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
  uint64_t x;
  // clang-format off
  do x = rng(); while (x >= limit);
  // clang-format on
  return x % n;
}

TextSplits split_by_document(std::vector<LabeledText> docs, double val_frac, double test_frac, uint64_t seed) {
  if (!(val_frac >= 0 && test_frac >= 0 && val_frac + test_frac < 1))
    throw DataError("split_by_document: need val_frac >= 0, test_frac >= 0 and val_frac + test_frac < 1, got " +
                    std::to_string(val_frac) + " and " + std::to_string(test_frac));
  std::mt19937_64 rng(seed);
  std::map<int32_t, std::vector<LabeledText>> by_label;  // ordered, so the draw order is fixed
  for (auto& d : docs) by_label[d.label].push_back(std::move(d));
  TextSplits s;
  for (auto& [label, group] : by_label) {
    seeded_shuffle(group, rng);
    const auto n = static_cast<double>(group.size());
    const auto n_test = static_cast<size_t>(std::lround(n * test_frac));
    const auto n_val = std::min(group.size() - n_test, static_cast<size_t>(std::lround(n * val_frac)));
    for (size_t i = 0; i < group.size(); ++i)
      (i < n_test ? s.test : i < n_test + n_val ? s.val : s.train).push_back(std::move(group[i]));
  }
  seeded_shuffle(s.train, rng);
  seeded_shuffle(s.val, rng);
  seeded_shuffle(s.test, rng);
  return s;
}

Example random_crop(const LabeledText& doc, int32_t min_len, int32_t max_len, std::mt19937_64& rng) {
  if (min_len < 1 || max_len < min_len)
    throw DataError("random_crop: need 1 <= min_len <= max_len, got " + std::to_string(min_len) + ", " + std::to_string(max_len));
  const size_t len = std::min<size_t>(doc.text.size(), min_len + uniform_below(rng, max_len - min_len + 1));
  const size_t start = uniform_below(rng, doc.text.size() - len + 1);
  Example e;
  e.tokens = ByteTokenizer{}.encode(std::string_view(doc.text).substr(start, len));
  e.label = doc.label;
  return e;
}

namespace {

Dataset empty_byte_dataset(const std::string& name, int32_t max_len, const std::vector<std::string>& class_names) {
  Dataset d;
  d.name = name;
  d.vocab_size = ByteTokenizer{}.vocab_size();
  d.num_classes = static_cast<int32_t>(class_names.size());
  d.pad_id = special_ids::pad;
  d.max_len = max_len;
  d.class_names = class_names;
  return d;
}

std::vector<Example> crops_of(const std::vector<LabeledText>& docs, int32_t per_doc, const TextTaskConfig& c,
                              std::mt19937_64& rng) {
  std::vector<Example> out;
  out.reserve(docs.size() * per_doc);
  for (const auto& d : docs)
    for (int32_t k = 0; k < per_doc; ++k) out.push_back(random_crop(d, c.min_crop, c.max_crop, rng));
  seeded_shuffle(out, rng);
  return out;
}

}  // namespace

void TextTask::recrop_train(std::mt19937_64& rng) {
  data.train.examples = crops_of(docs.train, config.train_crops_per_doc, config, rng);
}

TextTask make_text_task_from_docs(TextSplits docs, const TextTaskConfig& config, const std::string& name) {
  if (config.train_crops_per_doc < 1 || config.eval_crops_per_doc < 1)
    throw DataError("text task: crops per document must be >= 1");
  TextTask t;
  t.config = config;
  t.docs = std::move(docs);
  // Val and test crops come from their own seeded streams so they do not change when training re-crops.
  std::mt19937_64 train_rng(config.seed * 3 + 1), val_rng(config.seed * 3 + 2), test_rng(config.seed * 3 + 3);
  t.data.train = empty_byte_dataset(name + "/train", config.max_crop, t.docs.class_names);
  t.data.val = empty_byte_dataset(name + "/val", config.max_crop, t.docs.class_names);
  t.data.test = empty_byte_dataset(name + "/test", config.max_crop, t.docs.class_names);
  t.recrop_train(train_rng);
  t.data.val.examples = crops_of(t.docs.val, config.eval_crops_per_doc, config, val_rng);
  t.data.test.examples = crops_of(t.docs.test, config.eval_crops_per_doc, config, test_rng);
  return t;
}

std::vector<LabeledText> brown_labeled_documents(const std::string& brown_dir) {
  std::vector<LabeledText> out;
  for (auto& d : load_brown(brown_dir)) out.push_back({d.file_id, std::move(d.text), d.class5, d.genre});
  return out;
}

TextTask make_text_task(const TextTaskConfig& config) {
  TextSplits s = split_by_document(brown_labeled_documents(config.brown_dir), config.val_frac, config.test_frac, config.seed);
  s.class_names = brown_class5_names();
  return make_text_task_from_docs(std::move(s), config, "text_brown");
}

TaskData make_text(const TextTaskConfig& config) { return make_text_task(config).data; }

// ---- IMDb --------------------------------------------------------------------------------------

std::vector<LabeledText> read_imdb_split(const std::string& split_dir) {
  std::vector<LabeledText> out;
  const char* sentiments[2] = {"neg", "pos"};
  for (int32_t label = 0; label < 2; ++label) {
    const fs::path folder = fs::path(split_dir) / sentiments[label];
    if (!fs::is_directory(folder))
      throw DataError(folder.string() + ": folder not found (expected the aclImdb layout <split>/{pos,neg}/*.txt)");
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(folder))
      if (e.is_regular_file() && e.path().extension() == ".txt") files.push_back(e.path());
    if (files.empty()) throw DataError(folder.string() + ": no .txt reviews in this folder");
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      out.push_back({f.filename().string(), read_file(f.string()), label, -1});
      // an empty review would be a sequence of no tokens: nothing to classify, a pooled vector of zeros
      if (out.back().text.empty()) throw DataError(f.string() + ": the review is empty (0 bytes)");
    }
  }
  return out;
}

Dataset byte_dataset(const std::string& name, const std::vector<LabeledText>& texts, int32_t max_len,
                     const std::vector<std::string>& class_names) {
  if (max_len < 1) throw DataError(name + ": max_len must be >= 1, got " + std::to_string(max_len));
  Dataset d = empty_byte_dataset(name, max_len, class_names);
  d.examples.reserve(texts.size());
  for (const auto& t : texts) {
    Example e;
    e.tokens = ByteTokenizer{}.encode(std::string_view(t.text).substr(0, max_len));
    e.label = t.label;
    d.examples.push_back(std::move(e));
  }
  return d;
}

TaskData load_imdb(const std::string& acl_imdb_dir, const ImdbConfig& config) {
  const std::vector<std::string> classes = {"neg", "pos"};
  TextSplits s = split_by_document(read_imdb_split(acl_imdb_dir + "/train"), config.val_frac, 0.0, config.seed);
  TaskData t;
  t.train = byte_dataset("imdb/train", s.train, config.max_len, classes);
  t.val = byte_dataset("imdb/val", s.val, config.max_len, classes);
  t.test = byte_dataset("imdb/test", read_imdb_split(acl_imdb_dir + "/test"), config.max_len, classes);
  return t;
}

}  // namespace dl::tasks
