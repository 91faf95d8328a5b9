// tests/apps/test_generate.cpp - the generate app on a tiny byte-level GPT-2 written here: the same seed gives the same
// text, greedy text is the same with the key/value cache and by recomputing the prefix, the context limit stops it
// with a reason, and bad input (no heads, a BPE-sized vocabulary, a long prompt, a missing file) is named.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "apps/generate/generate.h"
#include "common/op_harness.h"
#include "nn/models/gpt2.h"

namespace fs = std::filesystem;
using namespace dl;

namespace {

// a random byte-level GPT-2 (vocab 256, context 24) saved with HF names; info.json beside it as the FPT cache writes
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
  std::string streamed;
  const gen::Result cached = gen::generate(o, [&](char c) { streamed.push_back(c); });
  o.recompute = true;
  EXPECT_EQ(gen::generate(o).text, cached.text);
  EXPECT_EQ(streamed, cached.text);
  EXPECT_EQ(cached.prompt_tokens, 2);
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
  gen::Options o;
  o.model = tiny_model(tmp("noinfo"), 256, /*info=*/false);
  EXPECT_NE(test::error_of([&] { gen::generate(o); }).find("give --heads"), std::string::npos);
  o.heads = 2;
  EXPECT_EQ(test::error_of([&] { gen::generate(o); }), "");
  o.model = tiny_model(tmp("bpe"), 300);
  EXPECT_NE(test::error_of([&] { gen::generate(o); }).find("has 300 tokens; only byte-level models"), std::string::npos);
  o.model = tiny_model(tmp("c"));
  o.prompt = std::string(30, 'x');
  EXPECT_NE(test::error_of([&] { gen::generate(o); }).find("the prompt has 30 bytes; the model's context is 24"),
            std::string::npos);
  o.model = tmp("missing.safetensors");
  EXPECT_NE(test::error_of([&] { gen::generate(o); }).find("no model file"), std::string::npos);
}
