// tests/tasks_lra/test_tokenizer.cpp - byte, character and BPE tokenizers: id layout and round trips.
#include <gtest/gtest.h>

#include <string>

#include "tasks/tokenizer.h"
#include "test_util.h"

namespace dl::tasks {
namespace {

using testing::data_error_message;
using testing::TempDir;
using testing::write_file;

const std::string sample_text =
    "The jury said it did find that many of Georgia's registration and election laws are outmoded. "
    "The jury further said that the City Executive Committee deserves the praise and thanks of the City. "
    "In 1961, the jury said, the election was conducted well; the jury was pleased.\n\tNumbers: 12345 67890!";

TEST(ByteTokenizer, IdsAreBytePlusFiveAndSentinelsFollowTheBytes) {
  ByteTokenizer tok{100};
  EXPECT_EQ(tok.vocab_size(), 361);
  EXPECT_EQ(tok.encode("A\xff"), (std::vector<int32_t>{65 + 5, 255 + 5}));
  EXPECT_EQ(tok.sentinel_id(0), 261);
  EXPECT_EQ(tok.sentinel_id(99), 360);
  EXPECT_NE(data_error_message([&] { tok.sentinel_id(100); }).find("sentinel 100"), std::string::npos);
  const std::string text = "h\xc3\xa9llo\n";
  EXPECT_EQ(tok.decode(tok.encode(text)), text);
  EXPECT_EQ(tok.decode({special_ids::bos, 5 + 'a', special_ids::mask, 261, special_ids::eos, special_ids::pad}),
            "a<mask><extra_id_0>");
  EXPECT_NE(data_error_message([&] { tok.decode({400}); }).find("outside the vocabulary"), std::string::npos);
}

TEST(CharTokenizer, RoundTripsUtf8AndMapsUnseenCharactersToUnk) {
  const std::string text = "na\xc3\xafve caf\xc3\xa9 \xe2\x82\xac";  // "naïve café €"
  const auto tok = CharTokenizer::train(text);
  EXPECT_EQ(tok.vocab_size(), special_ids::count + 10);  // n a ï v e space c f é €
  EXPECT_EQ(tok.decode(tok.encode(text)), text);
  const auto ids = tok.encode("cz\xff");
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[1], special_ids::unk);  // z never seen
  EXPECT_EQ(ids[2], special_ids::unk);  // malformed UTF-8 byte
}

TEST(Bpe, PreSplitKeepsEveryByte) {
  const std::string text = sample_text + "  double  spaces\n\n";
  std::string joined;
  for (auto w : bpe_pre_split(text)) joined += w;
  EXPECT_EQ(joined, text);
  const auto words = bpe_pre_split("the cat, 42");
  ASSERT_EQ(words.size(), 4u);  // "the" " cat" "," " 42"
  EXPECT_EQ(words[1], " cat");
  EXPECT_EQ(words[3], " 42");
}

TEST(Bpe, RoundTripCompressionAndDeterminism) {
  const auto tok = BpeTokenizer::train(sample_text, 60);
  EXPECT_GT(tok.merges().size(), 20u);
  EXPECT_EQ(tok.vocab_size(), 261 + static_cast<int32_t>(tok.merges().size()));
  const auto ids = tok.encode(sample_text);
  EXPECT_EQ(tok.decode(ids), sample_text);
  EXPECT_LT(ids.size(), sample_text.size() * 3 / 4) << "merges should shorten the training text";
  const std::string unseen = "Zebras \xe2\x82\xac quietly jury-rigged 99 \x01 things.";
  EXPECT_EQ(tok.decode(tok.encode(unseen)), unseen);  // byte-level: nothing is ever unknown
  EXPECT_EQ(BpeTokenizer::train(sample_text, 60).merges(), tok.merges());
  // The most frequent pair of this text must be learned first: " t"/"th"/"he" style pairs beat rare ones.
  const auto first = tok.merges()[0];
  EXPECT_TRUE(first.first >= 5 && first.second >= 5);
}

TEST(Bpe, SaveLoadGivesTheSameEncoder) {
  TempDir dir("bpe");
  const auto tok = BpeTokenizer::train(sample_text, 40);
  tok.save(dir.file("bpe.json"));
  const auto loaded = BpeTokenizer::load(dir.file("bpe.json"));
  EXPECT_EQ(loaded.merges(), tok.merges());
  EXPECT_EQ(loaded.encode(sample_text), tok.encode(sample_text));
}

TEST(Bpe, DamagedFilesAreDataErrors) {
  TempDir dir("bpe_bad");
  const std::string path = dir.file("bad.json");
  write_file(path, "{\"type\": \"byte_bpe\", \"special_count\": 5, \"merges\": [[5, 6], [300, 7]]}");
  std::string msg = data_error_message([&] { BpeTokenizer::load(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("merge 1"), std::string::npos) << msg;
  write_file(path, "not json");
  msg = data_error_message([&] { BpeTokenizer::load(path); });
  EXPECT_NE(msg.find("not valid JSON"), std::string::npos) << msg;
}

// Found by fuzz/fuzz_bpe.cpp: fields of the wrong JSON type escaped as nlohmann::type_error (a crash in an app).
TEST(Bpe, FieldsOfTheWrongTypeAreDataErrors) {
  for (const char* text : {R"({"m.rgeslnt":5,"type":0})", R"({"type": "byte_bpe", "special_count": "5", "merges": []})",
                           R"({"type": ["byte_bpe"], "merges": []})"}) {
    const std::string msg = data_error_message([&] { BpeTokenizer::parse(text, "t.json"); });
    EXPECT_NE(msg.find("t.json"), std::string::npos) << text << ": " << msg;
  }
}

}  // namespace
}  // namespace dl::tasks
