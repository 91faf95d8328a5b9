// tests/apps/test_generate.cpp - the generate app on tiny GPT-2s written here: byte-level (vocab 256) and with GPT-2's
// BPE (vocab 300, vocab.json + merges.txt written beside it): the same seed gives the same text, greedy text is the same
// with the key/value cache and by recomputing the prefix, the prompt goes through the tokenizer and the tokens' bytes
// stream out, the context limit stops it with a reason, bad input (no heads, no tokenizer for a BPE-sized vocabulary,
// a tokenizer of another size, one file of two, a long prompt, a missing file) is named, and the executable prints the
// same text for a seed and its tokens/s.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "app_test_util.h"
#include "apps/common/results.h"
#include "apps/generate/generate.h"
#include "common/op_harness.h"
#include "nn/models/gpt2.h"
#include "tasks/gpt2_bpe.h"

namespace fs = std::filesystem;
using namespace dl;

namespace {

// a random GPT-2 (context 24) saved with HF names; info.json beside it as the FPT cache writes it
std::string tiny_model(const std::string& dir, int64_t vocab = 256, bool info = true) {
  fs::create_directories(dir);
  nn::GPT2Config c;
  c.vocab_size = vocab, c.n_positions = 24, c.n_embd = 16, c.n_layer = 2, c.n_head = 2;
  Generator g(3);
  nn::GPT2Model m(c, g);
  // 20x GPT-2's init: at std 0.02 the next byte follows the last one whatever came before, so a cache that lost the
  // context would still give the recompute's greedy text
  for (auto& p : m.parameters()) p.mutable_data().copy_(mul_scalar(p.data(), 20.0));
  m.save(dir + "/transformer.safetensors");
  if (info) std::ofstream(dir + "/info.json") << R"({"architecture": {"heads": 2, "layers": 2, "d_model": 16}})";
  return dir + "/transformer.safetensors";
}

std::string utf8(char32_t c) {  // code points below U+0800 (bytes_to_unicode's characters)
  return c < 0x80 ? std::string(1, (char)c) : std::string{(char)(0xC0 | (c >> 6)), (char)(0x80 | (c & 0x3F))};
}

// GPT-2 tokenizer files for 300 tokens: the 256 bytes (id = byte), 43 merges of letter pairs and of a space with a
// letter ("Ġt", ...), then "<|endoftext|>"
void tiny_tokenizer(const std::string& dir) {
  fs::create_directories(dir);
  nlohmann::json v = nlohmann::json::object();
  for (int b = 0; b < 256; b++) v[utf8(tasks::gpt2_byte_char((unsigned char)b))] = b;
  std::string merges = "#version: 0.2\n";
  const std::string G = utf8(0x120), letters = "etaoinsh";
  int id = 256;
  for (char a : letters)  // "Ġ e", "Ġ t", ...: 8 merges
    merges += G + " " + a + "\n", v[G + a] = id++;
  for (char a : letters)
    for (char b : letters)
      if (id < 299) merges += std::string(1, a) + " " + b + "\n", v[std::string(1, a) + b] = id++;
  v["<|endoftext|>"] = id;
  std::ofstream(dir + "/vocab.json") << v.dump();
  std::ofstream(dir + "/merges.txt") << merges;
}

std::string tmp(const std::string& name) { return std::string(DL_BINARY_DIR) + "/test_tmp/generate/" + name; }

}  // namespace

TEST(Generate, SameSeedSameTextAndGreedyAgreesWithRecomputing) {
  gen::Options o;
  o.model = tiny_model(tmp("a")), o.prompt = "ab", o.tokens = 12, o.seed = 5;
  o.sampling.temperature = 1.0, o.sampling.top_k = 50, o.sampling.top_p = 0.9;
  const std::string first = gen::generate(o).text;
  EXPECT_EQ(first.size(), 12u);
  EXPECT_EQ(gen::generate(o).text, first);
  o.seed = 6;
  EXPECT_NE(gen::generate(o).text, first);
  o.sampling = {}, o.sampling.temperature = 0;  // greedy: cache and recompute must pick the same bytes
  std::vector<std::string> streamed;
  const gen::Result cached = gen::generate(o, [&](const std::string& s) { streamed.push_back(s); });
  o.recompute = true;
  EXPECT_EQ(gen::generate(o).text, cached.text);
  ASSERT_EQ(streamed.size(), 13u);
  EXPECT_EQ(streamed[0], "ab");  // the prompt first, then one byte a token
  std::string joined;
  for (size_t i = 1; i < streamed.size(); i++) joined += streamed[i];
  EXPECT_EQ(joined, cached.text);
  EXPECT_EQ(cached.prompt_tokens, 2);
}

// vocab 300: the prompt is encoded with the tokenizer (fewer tokens than bytes), the text is the tokens' bytes
TEST(Generate, BpeModelEncodesThePromptAndStreamsTokenBytes) {
  tiny_tokenizer(tmp("tok"));
  const tasks::Gpt2Bpe bpe = tasks::Gpt2Bpe::load(tmp("tok") + "/vocab.json", tmp("tok") + "/merges.txt");
  ASSERT_EQ(bpe.vocab_size(), 300);
  gen::Options o;
  o.model = tiny_model(tmp("bpe"), 300), o.vocab = tmp("tok") + "/vocab.json", o.merges = tmp("tok") + "/merges.txt";
  o.prompt = "the seas", o.tokens = 10, o.seed = 2;
  // by hand: "the" | " seas"; ranks 0-7 are "Ġ x" (x in etaoinsh), then "a b" at 8 + 8 i(a) + i(b) while ids last;
  // "t h" (rank 23, id 279) beats the unranked "h e"; " seas": "Ġ s" (6), then "e a" (10), and "ea s" is unranked
  ASSERT_EQ(bpe.encode(o.prompt), (std::vector<int32_t>{279, 'e', 262, 266, 's'}));
  std::string streamed;
  const gen::Result r = gen::generate(o, [&](const std::string& s) { streamed += s; });
  EXPECT_EQ(r.prompt_tokens, 5);
  EXPECT_EQ(r.prompt_text, "the seas");  // the prompt as printed: merged tokens' bytes (th, Ġs, ea) among single bytes
  ASSERT_EQ(r.ids.size(), 10u);
  std::vector<int32_t> ids(r.ids.begin(), r.ids.end());
  EXPECT_EQ(r.text, bpe.decode(ids));
  EXPECT_EQ(streamed, "the seas" + r.text);
  EXPECT_EQ(gen::generate(o).ids, r.ids);  // the same seed
  o.vocab = o.merges = "", o.tokenizer_dir = tmp("tok");
  EXPECT_EQ(gen::generate(o).ids, r.ids);  // --tokenizer DIR reads the same files
  o.sampling.temperature = 0;
  const gen::Result cached = gen::generate(o);
  o.recompute = true;
  EXPECT_EQ(gen::generate(o).ids, cached.ids);
  o.prompt = "";  // no prompt: GPT-2 starts from <|endoftext|>
  EXPECT_EQ(gen::generate(o).prompt_text, "<|endoftext|>");
}

TEST(Generate, TheContextLimitStopsItWithAReason) {
  gen::Options o;
  o.model = tiny_model(tmp("b")), o.prompt = "0123456789", o.tokens = 40;
  for (bool recompute : {false, true}) {
    o.recompute = recompute;
    gen::Result r = gen::generate(o);
    EXPECT_EQ(r.text.size(), 24u - 10u + 1u) << recompute;  // predicted from contexts of 10 .. 24 positions
    EXPECT_NE(r.stopped.find("the context is full (24 positions)"), std::string::npos) << r.stopped;
  }
}

TEST(Generate, BadInputIsNamed) {
  auto has = [](const std::string& err, const std::string& what) {
    EXPECT_NE(err.find(what), std::string::npos) << "expected \"" << what << "\" in: " << err;
  };
  gen::Options o;
  o.model = tiny_model(tmp("noinfo"), 256, /*info=*/false);
  has(test::error_of([&] { gen::generate(o); }), "give --heads");
  o.heads = 2;
  EXPECT_EQ(test::error_of([&] { gen::generate(o); }), "");
  o.model = tiny_model(tmp("bpe300"), 300);
  has(test::error_of([&] { gen::generate(o); }), "has 300 tokens, more than bytes: give its tokenizer files");
  tiny_tokenizer(tmp("tok2"));
  o.model = tiny_model(tmp("bpe301"), 301), o.tokenizer_dir = tmp("tok2");
  has(test::error_of([&] { gen::generate(o); }), "the tokenizer has 300 tokens and " + o.model + " has 301");
  o.tokenizer_dir = "", o.vocab = tmp("tok2") + "/vocab.json";
  has(test::error_of([&] { gen::generate(o); }), "needs both files");
  o.merges = tmp("tok2") + "/vocab.json";  // the wrong file: the reader names it and its line
  has(test::error_of([&] { gen::generate(o); }), tmp("tok2") + "/vocab.json:1: expected two tokens separated by one space");
  o.vocab = o.merges = "";
  o.model = tiny_model(tmp("c"));
  o.prompt = std::string(30, 'x');
  has(test::error_of([&] { gen::generate(o); }), "the prompt has 30 tokens; the model's context is 24");
  o.model = tmp("missing.safetensors");
  has(test::error_of([&] { gen::generate(o); }), "no model file");
  o.lra_cell = tmp("c");
  has(test::error_of([&] { gen::generate(o); }), "give one model");
}

// The executable: the same seed prints the same text (prompt first), and the timing line on stderr
TEST(Generate, ExecutablePrintsTheSameTextForASeedAndItsSpeed) {
  tiny_tokenizer(tmp("tok3"));
  const std::string model = tiny_model(tmp("exe"), 300), d = tmp("exe");
  const std::string cmd = std::string(DL_BINARY_DIR) + "/generate --model " + model + " --tokenizer " + tmp("tok3") +
                          " --prompt 'the sea' --tokens 8 --seed 4 --top-k 20 --threads 1";
  for (int i = 0; i < 2; i++)
    ASSERT_EQ(std::system((cmd + " > " + d + "/out" + std::to_string(i) + ".txt 2> " + d + "/err.txt").c_str()), 0)
        << harness::read_text(d + "/err.txt");
  const std::string out = harness::read_text(d + "/out0.txt");
  EXPECT_EQ(out, harness::read_text(d + "/out1.txt"));
  EXPECT_EQ(out.rfind("the sea", 0), 0u) << out;
  const std::string err = harness::read_text(d + "/err.txt");
  EXPECT_NE(err.find("generate: 8 tokens in "), std::string::npos) << err;
  EXPECT_NE(err.find("tokens/s (GPT-2, BPE tokens, key/value cache; prompt 4 tokens)"), std::string::npos) << err;
}
