// tests/tasks_lra/test_gpt2_tokenizer_json.cpp - GPT-2's BPE read from Hugging Face's tokenizer.json
// (tasks/gpt2_tokenizer_json.h): a file the test writes from the recorded tokenizer of tests/fixtures/gpt2_bpe, with its
// merges in both of the tokenizers library's formats, gives the ids vocab.json + merges.txt give on every recorded text;
// and every kind of malformed or non-GPT-2 file is a DataError naming the file, the field and what was found.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tasks/gpt2_tokenizer_json.h"
#include "test_util.h"

namespace dl::tasks {
namespace {

using testing::data_error_message;
using testing::TempDir;
using testing::write_file;
using json = nlohmann::json;

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(DL_FIXTURE_DIR) + "/gpt2_bpe/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The fixture tokenizer (256 bytes + 120 merges + "<|endoftext|>") as the tokenizers library saves it; pair_merges:
// merges as ["A", "B"] (tokenizers 0.20 and later) instead of "A B".
json fixture_tokenizer_json(bool pair_merges) {
  const json vocab = json::parse(fixture("vocab.json"));
  json merges = json::array();
  std::istringstream lines(fixture("merges.txt"));
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    const size_t sp = line.find(' ');
    if (pair_merges) merges.push_back(json::array({line.substr(0, sp), line.substr(sp + 1)}));
    else merges.push_back(line);
  }
  const int eot = vocab.at("<|endoftext|>").get<int>();
  return json{
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", json::array({{{"id", eot}, {"content", "<|endoftext|>"}, {"single_word", false}, {"special", true}}})},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
      {"post_processor", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", ""},
        {"end_of_word_suffix", ""},
        {"fuse_unk", false},
        {"vocab", vocab},
        {"merges", merges}}}};
}

TEST(Gpt2TokenizerJson, GivesTheIdsOfVocabAndMergesOnEveryRecordedText) {
  TempDir dir("tokenizer_json");
  const std::string vocab = dir.path.string() + "/vocab.json", merges = dir.path.string() + "/merges.txt";
  write_file(vocab, fixture("vocab.json"));
  write_file(merges, fixture("merges.txt"));
  const Gpt2Bpe files = Gpt2Bpe::load(vocab, merges);
  const json cases = json::parse(fixture("expected.json"))["cases"];
  ASSERT_GT(cases.size(), 100u);
  for (bool pairs : {false, true}) {
    const std::string path = dir.path.string() + (pairs ? "/pairs.json" : "/strings.json");
    write_file(path, fixture_tokenizer_json(pairs).dump(2));
    const Gpt2Bpe t = load_gpt2_tokenizer_json(path);
    EXPECT_EQ(t.vocab_size(), files.vocab_size());
    EXPECT_EQ(t.num_merges(), files.num_merges());
    EXPECT_EQ(t.find("<|endoftext|>"), files.find("<|endoftext|>"));
    for (const json& c : cases) {
      const std::string text = c.at("text").get<std::string>();
      EXPECT_EQ(t.encode(text), files.encode(text)) << (pairs ? "pair merges: " : "string merges: ") << text;
      EXPECT_EQ(t.encode(text), c.at("ids").get<std::vector<int32_t>>()) << text;
    }
  }
}

// One malformed file: `edit` applied to the fixture's tokenizer.json (or `raw` text instead), and the words the
// DataError must hold.
struct Bad {
  std::string what;
  std::function<void(json&)> edit;
  std::vector<std::string> expected;
  std::string raw;
  // A constructor, so the cases that edit the fixture leave `raw` out without a missing-initializer warning.
  Bad(std::string w, std::function<void(json&)> e, std::vector<std::string> x, std::string r = "")
      : what(std::move(w)), edit(std::move(e)), expected(std::move(x)), raw(std::move(r)) {}
};

TEST(Gpt2TokenizerJson, EveryMalformedFileIsANamedDataError) {
  const std::string G = "\xC4\xA0";  // 'Ġ', the space
  const std::vector<Bad> bad = {
      {"not JSON", {}, {"tok.json: not valid JSON", "expected Hugging Face's tokenizer.json"}, "{\"model\": "},
      {"byte order mark", {}, {"tok.json: starts with a UTF-8 byte order mark"}, "\xEF\xBB\xBF{}"},
      {"an array", {}, {"tok.json: expected a JSON object", "found a array"}, "[1, 2]"},
      {"no model", [](json& j) { j.erase("model"); }, {"tok.json: model is missing; expected an object"}},
      {"WordPiece", [](json& j) { j["model"]["type"] = "WordPiece"; }, {"model.type is \"WordPiece\"; expected \"BPE\""}},
      {"no model type", [](json& j) { j["model"].erase("type"); }, {"model.type is missing; expected \"BPE\""}},
      {"a normaliser",
       [](json& j) {
         j["normalizer"] = {{"type", "NFC"}};
       },
       {"normalizer is {\"type\":\"NFC\"}; expected null"}},
      {"no pre-tokenizer", [](json& j) { j.erase("pre_tokenizer"); }, {"tok.json: pre_tokenizer is missing; expected an object"}},
      {"a sequence of pre-tokenizers",
       [](json& j) {
         j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", json::array()}};
       },
       {"pre_tokenizer.type is \"Sequence\"; expected \"ByteLevel\""}},
      {"a prefix space",
       [](json& j) { j["pre_tokenizer"]["add_prefix_space"] = true; },
       {"pre_tokenizer.add_prefix_space is true; expected false"}},
      {"no add_prefix_space",
       [](json& j) { j["pre_tokenizer"].erase("add_prefix_space"); },
       {"pre_tokenizer.add_prefix_space is missing; expected false"}},
      {"no regex", [](json& j) { j["pre_tokenizer"]["use_regex"] = false; }, {"pre_tokenizer.use_regex is false; expected true"}},
      {"a subword prefix",
       [](json& j) { j["model"]["continuing_subword_prefix"] = "##"; },
       {"model.continuing_subword_prefix is \"##\"; expected null or \"\""}},
      {"vocab not an object",
       [](json& j) { j["model"]["vocab"] = json::array(); },
       {"model.vocab is a array; expected an object"}},
      {"a repeated vocab key",
       {},
       {"tok.json: the key \"a\" appears twice in one object"},
       R"({"model": {"type": "BPE", "vocab": {"a": 0, "a": 1}, "merges": []}})"},
      {"a non-integer id",
       [](json& j) { j["model"]["vocab"]["he"] = 1.5; },
       {"tok.json: model.vocab: token \"he\" has the id 1.5; expected an integer"}},
      {"an id twice", [](json& j) { j["model"]["vocab"]["he"] = 0; }, {"tok.json: model.vocab: the id 0 is given to both"}},
      {"no merges", [](json& j) { j["model"].erase("merges"); }, {"tok.json: model.merges is missing; expected an array"}},
      {"a number as a merge",
       [](json& j) { j["model"]["merges"][2] = 7; },
       {"tok.json: model.merges:3: found 7; expected \"A B\" or [\"A\", \"B\"]"}},
      {"three tokens in a pair",
       [](json& j) {
         j["model"]["merges"][0] = json::array({"h", "e", "x"});
       },
       {"tok.json: model.merges:1: found [\"h\",\"e\",\"x\"]"}},
      {"a space inside a pair's token",
       [](json& j) {
         j["model"]["merges"][1] = json::array({"a b", "c"});
       },
       {"tok.json: model.merges:2: the token \"a b\" holds a space"}},
      {"a line break in a merge",
       [](json& j) { j["model"]["merges"][1] = "h e\nh e"; },
       {"tok.json: model.merges:2: found \"h e\nh e\", which holds a line break"}},
      {"a version line as a merge",
       [](json& j) { j["model"]["merges"][0] = "#version: 0.2"; },
       {"tok.json: model.merges:1: found \"#version: 0.2\"; expected a merge"}},
      {"one token in a merge",
       [](json& j) { j["model"]["merges"][4] = "he"; },
       {"tok.json: model.merges:5: expected two tokens separated by one space"}},
      {"a merge of an unknown token",
       [G](json& j) { j["model"]["merges"][3] = G + "q" + " x"; },
       {"tok.json: model.merges:4: the token \"" + G + "q\" is not in tok.json: model.vocab"}},
      {"a repeated merge",
       [](json& j) { j["model"]["merges"][5] = j["model"]["merges"][0]; },
       {"tok.json: model.merges:6: the merge \"h e\" is a repeat of line 1"}},
      {"an added token with another id",
       [](json& j) { j["added_tokens"][0]["id"] = 3; },
       {"tok.json: added_tokens[0]: \"<|endoftext|>\" has the id 3, but model.vocab gives it 376"}},
      {"an added token not in the vocabulary",
       [](json& j) { j["added_tokens"][0]["content"] = "<pad>"; },
       {"added_tokens[0]: \"<pad>\" has the id 376, but model.vocab does not hold it"}},
      {"an added token without content",
       [](json& j) { j["added_tokens"][0].erase("content"); },
       {"tok.json: added_tokens[0]: found", "expected {\"id\": integer, \"content\": string, ...}"}},
  };
  for (const Bad& b : bad) {
    std::string text = b.raw;
    if (text.empty()) {
      json j = fixture_tokenizer_json(false);
      b.edit(j);
      text = j.dump();
    }
    const std::string err = data_error_message([&] { parse_gpt2_tokenizer_json(text, "tok.json"); });
    for (const std::string& e : b.expected) EXPECT_NE(err.find(e), std::string::npos) << b.what << ": " << err;
  }
  EXPECT_NE(
      data_error_message([] { load_gpt2_tokenizer_json("/nonexistent/tokenizer.json"); }).find("/nonexistent/tokenizer.json"),
      std::string::npos);
}

}  // namespace
}  // namespace dl::tasks
