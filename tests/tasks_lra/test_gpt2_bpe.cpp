// tests/tasks_lra/test_gpt2_bpe.cpp - GPT-2's byte-level BPE (tasks/gpt2_bpe.h): the byte map, the pre-tokenizer and
// the merge loop on cases worked by hand, the encodings OpenAI's algorithm gives on a recorded tokenizer
// (tests/fixtures/gpt2_bpe, written by make_fixtures.py with the regex module), round trips of any bytes, and a
// named error for every kind of malformed vocab.json and merges.txt.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "tasks/gpt2_bpe.h"
#include "test_util.h"

namespace dl::tasks {
namespace {

using testing::data_error_message;
using testing::TempDir;
using testing::write_file;
using json = nlohmann::json;

std::string utf8(char32_t c) {
  std::string s;
  if (c < 0x80) return std::string(1, (char)c);
  if (c < 0x800) return s + (char)(0xC0 | (c >> 6)) + (char)(0x80 | (c & 0x3F));
  if (c < 0x10000) return s + (char)(0xE0 | (c >> 12)) + (char)(0x80 | ((c >> 6) & 0x3F)) + (char)(0x80 | (c & 0x3F));
  return s + (char)(0xF0 | (c >> 18)) + (char)(0x80 | ((c >> 12) & 0x3F)) + (char)(0x80 | ((c >> 6) & 0x3F)) +
         (char)(0x80 | (c & 0x3F));
}

// A vocabulary whose one-byte tokens have id = byte, then `extra` tokens (written in bytes_to_unicode characters).
json byte_vocab(const std::vector<std::string>& extra = {}) {
  json v = json::object();
  for (int b = 0; b < 256; b++) v[utf8(gpt2_byte_char((unsigned char)b))] = b;
  for (size_t i = 0; i < extra.size(); i++) v[extra[i]] = 256 + (int)i;
  return v;
}

const std::string G = utf8(0x120);  // 'Ġ': the space

std::vector<std::string> pieces(std::string_view text) {
  std::vector<std::string> out;
  for (auto p : gpt2_pre_split(text)) out.emplace_back(p);
  return out;
}

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(DL_SOURCE_DIR) + "/tests/fixtures/gpt2_bpe/" + name, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(Gpt2Bpe, ByteMapKeepsPrintableBytesAndShiftsTheRestPast255) {
  EXPECT_EQ(gpt2_byte_char('A'), U'A');
  EXPECT_EQ(gpt2_byte_char('!'), U'!');
  EXPECT_EQ(gpt2_byte_char(0xE9), U'\u00E9');  // é stands for itself
  EXPECT_EQ(gpt2_byte_char(0), 0x100u);        // the first non-printable byte gets U+0100
  EXPECT_EQ(gpt2_byte_char('\n'), 0x10Au);     // 'Ċ'
  EXPECT_EQ(gpt2_byte_char(' '), 0x120u);      // 'Ġ': 32 non-printables come before it
  EXPECT_EQ(gpt2_byte_char(0xAD), 0x143u);     // the soft hyphen is the last (68th) of them
  int shifted = 0;
  for (int b = 0; b < 256; b++) {
    EXPECT_EQ(gpt2_char_byte(gpt2_byte_char((unsigned char)b)), b);
    shifted += gpt2_byte_char((unsigned char)b) >= 256;
  }
  EXPECT_EQ(shifted, 68);
  EXPECT_EQ(gpt2_char_byte(0x144), -1);
  EXPECT_EQ(gpt2_char_byte(' '), -1);  // the space byte is written 'Ġ', never ' '
}

TEST(Gpt2Bpe, PreSplitFollowsThePatternOnHandWorkedCases) {
  using V = std::vector<std::string>;
  EXPECT_EQ(pieces("Hello world"), (V{"Hello", " world"}));
  EXPECT_EQ(pieces("Hello  world"), (V{"Hello", " ", " world"}));  // the run leaves its last space to the word
  EXPECT_EQ(pieces("a   \n"), (V{"a", "   \n"}));                  // white space to the end: one piece
  EXPECT_EQ(pieces("\n\n\tx"), (V{"\n\n", "\t", "x"}));            // only ' ' is the optional prefix
  EXPECT_EQ(pieces("don't we'll"), (V{"don", "'t", " we", "'ll"}));
  EXPECT_EQ(pieces("DON'T"), (V{"DON", "'", "T"}));  // contractions are lower case only
  EXPECT_EQ(pieces("x's'"), (V{"x", "'s", "'"}));
  EXPECT_EQ(pieces("abc123 !!?"), (V{"abc", "123", " !!?"}));
  EXPECT_EQ(pieces("caf\xC3\xA9 \xCE\xB1\xCE\xB2"), (V{"caf\xC3\xA9", " \xCE\xB1\xCE\xB2"}));  // é, Greek: letters
  EXPECT_EQ(pieces("e\xCC\x81"), (V{"e", "\xCC\x81"}));                                        // a combining accent is no letter
  EXPECT_EQ(pieces("x\xC2\xB2"), (V{"x", "\xC2\xB2"}));                                        // ² is a number
  EXPECT_EQ(pieces("a\xC2\xA0"
                   "b"),
            (V{"a", "\xC2\xA0", "b"}));  // no-break space is white space
  // bytes that are no UTF-8 are one "other" character each: they join punctuation
  EXPECT_EQ(pieces("a\xFF\xFE"
                   "b"),
            (V{"a", "\xFF\xFE", "b"}));
  EXPECT_EQ(pieces(" \x80!"), (V{" \x80!"}));
  EXPECT_EQ(pieces("\xC3"), (V{"\xC3"}));                  // truncated
  EXPECT_EQ(pieces("\xED\xA0\x80"), (V{"\xED\xA0\x80"}));  // a surrogate: three bad bytes
  EXPECT_EQ(pieces("\xC0\xAF"
                   "a"),
            (V{"\xC0\xAF", "a"}));  // overlong '/'
  EXPECT_EQ(pieces("\xE0\x81\x81"
                   "b"),
            (V{"\xE0\x81\x81", "b"}));  // overlong 'A' is no letter
  EXPECT_TRUE(pieces("").empty());
}

TEST(Gpt2Bpe, MergesApplyLowestRankFirstEveryOccurrenceLeftToRight) {
  // ids: bytes 0..255, then Ġt 256, he 257, Ġthe 258, aa 259, bc 260, ab 261
  const std::string vocab = byte_vocab({G + "t", "he", G + "the", "aa", "bc", "ab"}).dump();
  const Gpt2Bpe t = Gpt2Bpe::parse(vocab, "#version: 0.2\n" + G + " t\nh e\n" + G + "t he\na a\nb c\na b\n");
  EXPECT_EQ(t.vocab_size(), 262);
  EXPECT_EQ(t.num_merges(), 6);
  EXPECT_EQ(t.encode(" the"), (std::vector<int32_t>{258}));      // Ġ t -> Ġt, h e -> he, Ġt he -> Ġthe
  EXPECT_EQ(t.encode("the"), (std::vector<int32_t>{'t', 257}));  // no space: "t" + "he"
  EXPECT_EQ(t.encode("aaa"), (std::vector<int32_t>{259, 'a'}));  // left to right, no overlap
  EXPECT_EQ(t.encode("aaaa"), (std::vector<int32_t>{259, 259}));
  EXPECT_EQ(t.encode("abc"), (std::vector<int32_t>{'a', 260}));  // "b c" (rank 4) before "a b" (rank 5)
  EXPECT_EQ(t.encode("the the"), (std::vector<int32_t>{'t', 257, 258}));
  EXPECT_EQ(t.decode({258, 259, ' ', 10}), " theaa \n");
  EXPECT_EQ(t.token_bytes(258), " the");
  EXPECT_EQ(t.find(G + "the"), 258);
  EXPECT_FALSE(t.find("the").has_value());
  // the rank order is the file's: with "a b" first, "abc" is "ab" + "c"
  const Gpt2Bpe u = Gpt2Bpe::parse(vocab, "a b\nb c\n");
  EXPECT_EQ(u.encode("abc"), (std::vector<int32_t>{261, 'c'}));
  EXPECT_NE(data_error_message([&] {
              t.decode({1, 262});
            }).find("id 262 at position 1 is outside the vocabulary [0, 262)"),
            std::string::npos);
}

// The recorded reference: OpenAI's encoder.py algorithm run by make_fixtures.py on 123 texts (hand-picked edge cases
// across scripts, numbers and Unicode spaces, and 60 seeded random strings).
TEST(Gpt2Bpe, MatchesTheReferenceAlgorithmOnRecordedTexts) {
  const Gpt2Bpe t = Gpt2Bpe::parse(fixture("vocab.json"), fixture("merges.txt"));
  const json cases = json::parse(fixture("expected.json"))["cases"];
  ASSERT_GT(cases.size(), 100u);
  for (const json& c : cases) {
    const std::string text = c["text"];
    EXPECT_EQ(pieces(text), c["pieces"].get<std::vector<std::string>>()) << json(text).dump();
    const std::vector<int32_t> ids = t.encode(text);
    EXPECT_EQ(ids, c["ids"].get<std::vector<int32_t>>()) << json(text).dump();
    EXPECT_EQ(t.decode(ids), text);
  }
}

TEST(Gpt2Bpe, AnyBytesRoundTrip) {
  const Gpt2Bpe t = Gpt2Bpe::parse(fixture("vocab.json"), fixture("merges.txt"));
  std::mt19937 rng(7);
  for (int n = 0; n < 300; n++) {
    std::string s;
    const int len = (int)(rng() % 40);
    for (int i = 0; i < len; i++) {
      switch (rng() % 4) {
        case 0: s += (char)(rng() % 256); break;                 // any byte, valid or not
        case 1: s += utf8((char32_t)(rng() % 0x110000)); break;  // any code point (surrogates: bad bytes)
        case 2: s += " "; break;
        default: s += (char)('a' + rng() % 26);
      }
    }
    const std::vector<int32_t> ids = t.encode(s);
    for (int32_t id : ids) ASSERT_TRUE(id >= 0 && id < t.vocab_size());
    std::string joined;
    for (auto p : gpt2_pre_split(s)) joined += p;
    ASSERT_EQ(joined, s);
    ASSERT_EQ(t.decode(ids), s) << "case " << n;
  }
}

// Each malformed input, with the words its message must contain.
TEST(Gpt2Bpe, MalformedFilesAreNamed) {
  const std::string vocab = byte_vocab({G + "t", "he"}).dump(), merges = G + " t\nh e\n";
  auto err = [](const std::string& v, const std::string& m) { return data_error_message([&] { Gpt2Bpe::parse(v, m); }); };
  auto has = [](const std::string& msg, const std::string& what) {
    EXPECT_NE(msg.find(what), std::string::npos) << "expected \"" << what << "\" in: " << msg;
  };
  // vocab.json
  has(err("{\"a\": 0,\n \"b\" 1}", merges), "vocab.json:2:6: not valid JSON");
  has(err("[1, 2]", merges), "vocab.json: expected a JSON object {\"token\": id, ...}, found a array");
  json v = byte_vocab();
  v["zz"] = 1.5;
  has(err(v.dump(), ""), "token \"zz\" has the id 1.5; expected an integer");
  v["zz"] = 7;
  has(err(v.dump(), ""), "the id 7 is given to both");
  v["zz"] = 300;
  has(err(v.dump(), ""), "token \"zz\" has the id 300; expected ids 0 .. 256 (one per token, no gaps) for 257 tokens");
  v["zz"] = -1;
  has(err(v.dump(), ""), "has the id -1");
  std::string dup = byte_vocab({"zz"}).dump();
  dup.insert(dup.size() - 1, ",\"zz\":256");
  has(err(dup, ""), "the token \"zz\" is a key twice");
  has(err(byte_vocab({"a b"}).dump(), ""), "token \"a b\" (id 256) has the character U+0020, which stands for no byte");
  has(err(byte_vocab({"\xE2\x82\xAC"}).dump(), ""), "has the character U+20AC");
  json missing = byte_vocab();
  missing.erase(G);
  missing["extra"] = 32;
  has(err(missing.dump(), ""), "the byte 20 has no token (\"" + G + "\"); expected all 256 one-byte tokens");
  has(err("\xEF\xBB\xBF" + vocab, merges), "vocab.json:1: starts with a UTF-8 byte order mark");
  // merges.txt
  EXPECT_EQ(Gpt2Bpe::parse(vocab, "#version: 0.2\n" + merges + "\n\n").num_merges(), 2);  // header, blank end lines
  EXPECT_EQ(Gpt2Bpe::parse(vocab, G + " t").num_merges(), 1);                             // no final newline
  has(err(vocab, "\xEF\xBB\xBF#version: 0.2\n" + merges), "merges.txt:1: starts with a UTF-8 byte order mark");
  has(err(vocab, "#version: 0.2\r\n" + merges), "merges.txt:1: ends in CR LF (a Windows line end)");
  has(err(vocab, G + " t\r\nh e\n"), "merges.txt:1: ends in CR LF");
  has(err(vocab, merges + "#version: 0.2\n"), "merges.txt:3: the token \"#version:\" is not in vocab.json");
  has(err(vocab, G + "\nh e\n"), "merges.txt:1: expected two tokens separated by one space (\"A B\"), found \"" + G + "\"");
  has(err(vocab, "h e x\n"), "merges.txt:1: expected two tokens separated by one space");
  has(err(vocab, "h  e\n"), "expected two tokens separated by one space");
  has(err(vocab, "h e\n\n" + G + " t\n"), "merges.txt:2: is empty; expected a merge \"A B\"");
  has(err(vocab, "h hello\n"), "merges.txt:1: the token \"hello\" is not in vocab.json");
  has(err(vocab, "t h\n"), "merges.txt:1: merges \"t\" and \"h\" into \"th\", which is not in vocab.json");
  has(err(vocab, "#version: 0.2\nh e\n" + G + " t\nh e\n"), "merges.txt:4: the merge \"h e\" is a repeat of line 2");
  // the files themselves
  TempDir d("gpt2_bpe");
  write_file(d.file("vocab.json"), vocab);
  write_file(d.file("merges.txt"), merges);
  EXPECT_EQ(Gpt2Bpe::load(d.file("vocab.json"), d.file("merges.txt")).encode(" the"), (std::vector<int32_t>{256, 257}));
  has(data_error_message([&] { Gpt2Bpe::load(d.file("nope.json"), d.file("merges.txt")); }), "nope.json");
  write_file(d.file("bad.txt"), "h e\nh e\n");
  has(data_error_message([&] { Gpt2Bpe::load(d.file("vocab.json"), d.file("bad.txt")); }),
      d.file("bad.txt") + ":2: the merge \"h e\" is a repeat of line 1");
}

}  // namespace
}  // namespace dl::tasks
