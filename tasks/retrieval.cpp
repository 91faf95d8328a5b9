// tasks/retrieval.cpp - Brown chunk pairs (LRA Retrieval default) and the AAN TSV reader (see retrieval.h).
#include "tasks/retrieval.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "tasks/tokenizer.h"

namespace dl::tasks {

namespace {

// Chunk length used for every chunk of `doc`: chunk_len, or half the document when it is shorter than two
// chunks. Positives and negatives use the same rule, so a chunk's length never hints at the label.
size_t chunk_length(const LabeledText& doc, int32_t chunk_len) {
  return std::min<size_t>(static_cast<size_t>(chunk_len), doc.text.size() / 2);
}

std::vector<int32_t> window(const LabeledText& doc, size_t start, size_t len) {
  return ByteTokenizer{}.encode(std::string_view(doc.text).substr(start, len));
}

Dataset pair_dataset(const std::string& name, std::vector<Example> examples, int32_t max_len) {
  Dataset d;
  d.name = name;
  d.examples = std::move(examples);
  d.vocab_size = ByteTokenizer{}.vocab_size();
  d.num_classes = 2;
  d.pad_id = special_ids::pad;
  d.max_len = max_len;
  d.class_names = {"different", "same"};
  return d;
}

}  // namespace

std::vector<Example> make_retrieval_pairs(const std::vector<LabeledText>& docs, int64_t count, int32_t chunk_len,
                                          std::mt19937_64& rng, const std::string& name) {
  if (chunk_len < 1) throw DataError(name + ": chunk_len must be >= 1, got " + std::to_string(chunk_len));
  std::map<int32_t, std::vector<size_t>> by_genre;
  for (size_t i = 0; i < docs.size(); ++i) {
    if (docs[i].text.size() < 2)
      throw DataError(name + ": document '" + docs[i].id + "' has " + std::to_string(docs[i].text.size()) +
                      " bytes, at least 2 are needed for two chunks");
    by_genre[docs[i].group].push_back(i);
  }
  // Negatives need a genre with two documents; draw the first document among those, uniformly.
  std::vector<size_t> negative_firsts;
  for (const auto& [genre, members] : by_genre)
    if (members.size() >= 2) negative_firsts.insert(negative_firsts.end(), members.begin(), members.end());
  if (docs.empty() || negative_firsts.empty())
    throw DataError(name + ": needs a genre with at least two documents to make negative pairs (" + std::to_string(docs.size()) +
                    " documents)");

  const int64_t half = count / 2;
  std::vector<Example> pairs;
  pairs.reserve(2 * half);
  for (int64_t k = 0; k < half; ++k) {  // positives: two non-overlapping windows, one each side of a cut
    const LabeledText& d = docs[uniform_below(rng, docs.size())];
    const size_t len = chunk_length(d, chunk_len), n = d.text.size();
    const size_t cut = len + uniform_below(rng, n - 2 * len + 1);
    const size_t a = uniform_below(rng, cut - len + 1);
    const size_t b = cut + uniform_below(rng, n - cut - len + 1);
    Example e;
    e.tokens = window(d, a, len);
    e.tokens2 = window(d, b, len);
    if (uniform_below(rng, 2) == 1) std::swap(e.tokens, e.tokens2);  // order must not give the answer away
    e.label = 1;
    pairs.push_back(std::move(e));
  }
  for (int64_t k = 0; k < half; ++k) {  // negatives: two different documents of one genre
    const size_t i = negative_firsts[uniform_below(rng, negative_firsts.size())];
    const auto& members = by_genre[docs[i].group];
    size_t j = members[uniform_below(rng, members.size() - 1)];
    if (j == i) j = members.back();  // draw among the others: skip i by mapping it to the last member
    Example e;
    const size_t len_i = chunk_length(docs[i], chunk_len), len_j = chunk_length(docs[j], chunk_len);
    e.tokens = window(docs[i], uniform_below(rng, docs[i].text.size() - len_i + 1), len_i);
    e.tokens2 = window(docs[j], uniform_below(rng, docs[j].text.size() - len_j + 1), len_j);
    e.label = 0;
    pairs.push_back(std::move(e));
  }
  seeded_shuffle(pairs, rng);
  return pairs;
}

TaskData make_retrieval_from_docs(const TextSplits& docs, const RetrievalConfig& config) {
  std::mt19937_64 rng(config.seed);
  TaskData t;
  t.train = pair_dataset("retrieval/train",
                         make_retrieval_pairs(docs.train, config.num_train, config.chunk_len, rng, "retrieval/train"),
                         config.chunk_len);
  t.val = pair_dataset("retrieval/val", make_retrieval_pairs(docs.val, config.num_val, config.chunk_len, rng, "retrieval/val"),
                       config.chunk_len);
  t.test =
      pair_dataset("retrieval/test", make_retrieval_pairs(docs.test, config.num_test, config.chunk_len, rng, "retrieval/test"),
                   config.chunk_len);
  return t;
}

TaskData make_retrieval(const RetrievalConfig& config) {
  auto docs = brown_labeled_documents(config.brown_dir);
  for (auto& d : docs) d.label = d.group;  // stratify the document split by the fine genre
  return make_retrieval_from_docs(split_by_document(std::move(docs), config.val_frac, config.test_frac, config.seed), config);
}

// ---- AAN ---------------------------------------------------------------------------------------

std::vector<AanPair> parse_aan_tsv(std::string_view content, const std::string& file_name) {
  std::vector<AanPair> pairs;
  Lines lines(content);
  for (std::string_view line; lines.next(line);) {
    if (line.empty()) continue;
    const std::string where = lines.where(file_name);
    std::vector<std::string_view> cols;
    for (size_t start = 0;;) {
      const size_t tab = line.find('\t', start);
      cols.push_back(line.substr(start, tab == std::string_view::npos ? std::string_view::npos : tab - start));
      if (tab == std::string_view::npos) break;
      start = tab + 1;
    }
    if (cols.size() != 5)
      throw DataError(where + ": expected 5 tab-separated columns (label, id1, id2, text1, text2), found " +
                      std::to_string(cols.size()));
    // LRA stores the label as a float; accept any spelling of exactly 0 or 1 ("0", "1.0", ...).
    const std::string label_text(cols[0]);
    char* parse_end = nullptr;
    const double value = label_text.empty() ? -1 : std::strtod(label_text.c_str(), &parse_end);
    if (label_text.empty() || parse_end != label_text.c_str() + label_text.size() || (value != 0.0 && value != 1.0))
      throw DataError(where + ": label must be 0 or 1, found '" + label_text.substr(0, 20) + "'");
    pairs.push_back(
        {static_cast<int32_t>(value), std::string(cols[1]), std::string(cols[2]), std::string(cols[3]), std::string(cols[4])});
  }
  return pairs;
}

std::vector<AanPair> read_aan_tsv(const std::string& path) { return parse_aan_tsv(read_file(path), path); }

void write_aan_tsv(const std::string& path, const std::vector<AanPair>& pairs) {
  std::ofstream f(path, std::ios::binary);
  if (!f) throw DataError(path + ": cannot open for writing");
  for (const auto& p : pairs) {
    for (const std::string* field : {&p.id1, &p.id2, &p.text1, &p.text2})
      if (field->find_first_of("\t\n") != std::string::npos)
        throw DataError(path + ": a field of pair " + p.id1 + "/" + p.id2 + " contains a tab or newline");
    f << p.label << '\t' << p.id1 << '\t' << p.id2 << '\t' << p.text1 << '\t' << p.text2 << '\n';
  }
  if (!f) throw DataError(path + ": write failed");
}

TaskData load_aan(const std::string& dir, int32_t max_len) {
  if (max_len < 1) throw DataError("load_aan: max_len must be >= 1");
  constexpr size_t lra_text_cap = 10000;  // LRA encodes s[:10000] and then keeps max_len tokens
  const size_t keep = std::min<size_t>(lra_text_cap, static_cast<size_t>(max_len));
  TaskData t;
  const char* files[3] = {"train", "eval", "test"};
  Dataset* outs[3] = {&t.train, &t.val, &t.test};
  const char* names[3] = {"aan/train", "aan/val", "aan/test"};
  for (int k = 0; k < 3; ++k) {
    const std::string path = dir + "/new_aan_pairs." + files[k] + ".tsv";
    if (!std::filesystem::exists(path)) throw DataError(path + ": file not found (from the LRA release, lra_release/tsv_data)");
    std::vector<Example> examples;
    for (const auto& p : read_aan_tsv(path)) {
      Example e;
      e.tokens = ByteTokenizer{}.encode(std::string_view(p.text1).substr(0, keep));
      e.tokens2 = ByteTokenizer{}.encode(std::string_view(p.text2).substr(0, keep));
      e.label = p.label;
      examples.push_back(std::move(e));
    }
    if (examples.empty()) throw DataError(path + ": no pairs in this file");
    *outs[k] = pair_dataset(names[k], std::move(examples), max_len);
  }
  return t;
}

}  // namespace dl::tasks
