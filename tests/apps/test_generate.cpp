// tests/apps/test_generate.cpp - the generate app on tiny GPT-2s written here: byte-level (vocab 256) and with GPT-2's
// BPE (vocab 300, vocab.json + merges.txt or tokenizer.json written beside it): the same seed gives the same text,
// greedy text is the same with the key/value cache and by recomputing the prefix, the prompt goes through the tokenizer
// (from either format) and the tokens' bytes stream out, the context limit stops it with a reason, bad input (no heads,
// no tokenizer for a BPE-sized vocabulary, a tokenizer of another size, one file of two, two tokenizers, a long
// prompt, a missing file) is named, GPT-2 stops at <|endoftext|> unless told not to, and the executable prints the
// same text for a seed and its tokens/s.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
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
  // the same tokenizer as Hugging Face's tokenizer.json, alone in <dir>_json/
  nlohmann::json m = nlohmann::json::array();
  for (size_t a = merges.find('\n') + 1, b; (b = merges.find('\n', a)) != std::string::npos; a = b + 1)
    m.push_back(merges.substr(a, b - a));
  const nlohmann::json tj = {
      {"added_tokens", {{{"id", id}, {"content", "<|endoftext|>"}, {"special", true}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model", {{"type", "BPE"}, {"vocab", v}, {"merges", m}}}};
  fs::create_directories(dir + "_json");
  std::ofstream(dir + "_json/tokenizer.json") << tj.dump();
}

std::string tmp(const std::string& name) { return std::string(DL_BINARY_DIR) + "/test_tmp/generate/" + name; }

// tiny_tokenizer's vocabulary (300, "<|endoftext|>" = 299) on a GPT-2 whose every next-token distribution is the same:
// ln_f's weight 0 leaves its bias b as every position's output, so logits = wte b, and wte[299] = eos_weight b sets how
// likely the end token is (the other rows as drawn).
std::string model_with_end_token(const std::string& dir, double eos_weight) {
  const std::string file = tiny_model(dir, 300);
  nn::GPT2Config c;
  c.vocab_size = 300, c.n_positions = 24, c.n_embd = 16, c.n_layer = 2, c.n_head = 2;
  Generator g(4);
  nn::GPT2Model m(c, g);
  nn::load_gpt2_hf(m, file);
  auto sd = m.state_dict();
  Tensor b = randn({16}, g);
  sd.at("transformer.ln_f.weight").copy_(zeros({16}));
  sd.at("transformer.ln_f.bias").copy_(b);
  sd.at("transformer.wte.weight").select(0, 299).copy_(mul_scalar(b, eos_weight / 16.0));  // logit of eos: eos_weight |b|^2 / 16
  m.save(file);
  return file;
}

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

// Several samples stepped as one batch: sample i is the text of seed + i alone, with the cache and by recomputing; on
// the end-token model too, where samples stop at different rounds (a stopped one is fed its last token and not read).
TEST(Generate, SamplesInABatchAreTheSingleRunsOfTheirSeeds) {
  tiny_tokenizer(tmp("tok_batch"));
  struct Setup {
    std::string model, tokenizer, prompt;
  };
  for (const Setup& st : {Setup{tiny_model(tmp("batch")), "", "ab"},
                          Setup{model_with_end_token(tmp("batch_eos"), 5.0), tmp("tok_batch"), "the"}})
    for (bool recompute : {false, true}) {
      gen::Options o;
      o.model = st.model, o.tokenizer_dir = st.tokenizer, o.prompt = st.prompt, o.tokens = 12, o.seed = 3;
      o.sampling.temperature = 1.0, o.recompute = recompute;
      o.samples = 6;
      const gen::Result batch = gen::generate(o);
      ASSERT_EQ(batch.samples.size(), 6u);
      int stopped = 0;
      std::set<std::vector<int64_t>> distinct;
      int64_t total = 0;
      for (int64_t i = 0; i < 6; i++) {
        gen::Options one = o;
        one.samples = 1, one.seed = o.seed + i;
        const gen::Result alone = gen::generate(one);
        const std::string what = st.model + (recompute ? " recomputing" : " cached") + ", sample " + std::to_string(i);
        EXPECT_EQ(batch.samples[i].ids, alone.ids) << what;
        EXPECT_EQ(batch.samples[i].text, alone.text) << what;
        EXPECT_EQ(batch.samples[i].stopped, alone.stopped) << what;
        stopped += !alone.stopped.empty();
        distinct.insert(alone.ids);
        total += (int64_t)alone.ids.size();
      }
      EXPECT_EQ(batch.ids, batch.samples[0].ids);
      EXPECT_EQ(batch.generated, total);
      EXPECT_GE(distinct.size(), 5u) << "the seeds should give different texts";
      if (!st.tokenizer.empty()) EXPECT_GE(stopped, 2) << "some samples should stop at the end token before the others";
    }
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
  o.tokenizer_dir = tmp("tok") + "_json";
  EXPECT_EQ(gen::generate(o).ids, r.ids);  // a folder with only tokenizer.json: the same tokenizer
  o.tokenizer_dir = "", o.tokenizer_json = tmp("tok") + "_json/tokenizer.json";
  EXPECT_EQ(gen::generate(o).ids, r.ids);  // --tokenizer-json FILE
  o.tokenizer_json = "", o.tokenizer_dir = tmp("tok");
  o.sampling.temperature = 0;
  const gen::Result cached = gen::generate(o);
  o.recompute = true;
  EXPECT_EQ(gen::generate(o).ids, cached.ids);
  o.prompt = "";  // no prompt: GPT-2 starts from <|endoftext|>
  EXPECT_EQ(gen::generate(o).prompt_text, "<|endoftext|>");
}

// <|endoftext|> stops GPT-2 (default), after being sampled: the tokens are those of the run that goes on, cut after
// the first end token; --no-stop-at-eos (stop_at_eos false) samples on and prints it as its text.
TEST(Generate, GptStopsAtTheEndOfTextTokenUnlessAskedNotTo) {
  tiny_tokenizer(tmp("tok_eos"));
  gen::Options o;
  o.model = model_with_end_token(tmp("eos"), 5.0), o.tokenizer_dir = tmp("tok_eos"), o.prompt = "the", o.tokens = 20;
  o.sampling.temperature = 1.0;
  int cut_mid_text = 0;  // seeds whose first end token comes after at least two other tokens
  for (uint64_t seed = 0; seed < 12; seed++) {
    o.seed = seed, o.stop_at_eos = false;
    const gen::Result on = gen::generate(o);
    ASSERT_EQ(on.ids.size(), 20u);
    const auto first = std::find(on.ids.begin(), on.ids.end(), 299);
    o.stop_at_eos = true;
    std::string streamed;
    const gen::Result r = gen::generate(o, [&](const std::string& s) { streamed += s; });
    if (first == on.ids.end()) {
      EXPECT_EQ(r.ids, on.ids) << "seed " << seed;
      EXPECT_EQ(r.stopped, "");
      continue;
    }
    const std::vector<int64_t> cut(on.ids.begin(), first + 1);
    EXPECT_EQ(r.ids, cut) << "seed " << seed;  // the end token is the last id
    EXPECT_EQ(r.stopped, "the end-of-text token <|endoftext|> (id 299; --no-stop-at-eos goes on)");
    EXPECT_EQ(r.text.find("<|endoftext|>"), std::string::npos) << r.text;  // and not printed
    EXPECT_EQ(streamed, "the" + r.text);
    if (cut.size() >= 3) cut_mid_text++;
  }
  EXPECT_GE(cut_mid_text, 2) << "the end token should come mid-text for some seeds (eos_weight too large?)";
  // greedy on a model that always prefers the end token: one token, and with --no-stop-at-eos its text each time
  o.model = model_with_end_token(tmp("eos_greedy"), 50.0), o.sampling = {}, o.sampling.temperature = 0, o.tokens = 3;
  o.stop_at_eos = true;
  for (bool recompute : {false, true}) {
    o.recompute = recompute;
    EXPECT_EQ(gen::generate(o).ids, std::vector<int64_t>{299}) << recompute;
  }
  o.stop_at_eos = false;
  EXPECT_EQ(gen::generate(o).text, "<|endoftext|><|endoftext|><|endoftext|>");
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
  {  // a file that is no model at all is named as such, not as a model without its head count
    std::ofstream(tmp("junk.safetensors")) << "abc";
    gen::Options j;
    j.model = tmp("junk.safetensors");
    has(test::error_of([&] { gen::generate(j); }), tmp("junk.safetensors") + ": file is 3 bytes, too short");
  }
  o.heads = 2;
  EXPECT_EQ(test::error_of([&] { gen::generate(o); }), "");
  o.model = tiny_model(tmp("bpe300"), 300);
  has(test::error_of([&] { gen::generate(o); }), "has 300 tokens, more than bytes: give its tokenizer (--vocab");
  tiny_tokenizer(tmp("tok2"));
  o.model = tiny_model(tmp("bpe301"), 301), o.tokenizer_dir = tmp("tok2");
  has(test::error_of([&] { gen::generate(o); }), "the tokenizer has 300 tokens and " + o.model + " has 301");
  o.tokenizer_json = tmp("tok2") + "_json/tokenizer.json";
  has(test::error_of([&] { gen::generate(o); }), "give one tokenizer: --tokenizer DIR, --tokenizer-json FILE, or --vocab");
  o.tokenizer_dir = "", o.tokenizer_json = tmp("tok2") + "/vocab.json";  // not a tokenizer.json: named by the reader
  has(test::error_of([&] { gen::generate(o); }), tmp("tok2") + "/vocab.json: model is missing; expected an object");
  o.tokenizer_json = "", o.vocab = tmp("tok2") + "/vocab.json";
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
  // the end token: the default stops at it and says so; --no-stop-at-eos prints it and goes on
  const std::string eos_cmd = std::string(DL_BINARY_DIR) + "/generate --model " + model_with_end_token(tmp("exe_eos"), 50.0) +
                              " --tokenizer " + tmp("tok3") + " --prompt 'the' --tokens 2 --temperature 0 --threads 1";
  ASSERT_EQ(std::system((eos_cmd + " > " + d + "/eos.txt 2> " + d + "/eos_err.txt").c_str()), 0);
  EXPECT_EQ(harness::read_text(d + "/eos.txt"), "the\n");
  EXPECT_NE(harness::read_text(d + "/eos_err.txt").find("stopped early: the end-of-text token <|endoftext|> (id 299"),
            std::string::npos)
      << harness::read_text(d + "/eos_err.txt");
  ASSERT_EQ(std::system((eos_cmd + " --no-stop-at-eos > " + d + "/eos.txt 2> " + d + "/eos_err.txt").c_str()), 0);
  EXPECT_EQ(harness::read_text(d + "/eos.txt"), "the<|endoftext|><|endoftext|>\n");
  // --samples 2: each text after its header, the second the text of --seed 5 alone
  ASSERT_EQ(std::system((cmd + " --samples 2 > " + d + "/two.txt 2> " + d + "/err.txt").c_str()), 0) << harness::read_text(d + "/err.txt");
  const std::string seed5 = cmd.substr(0, cmd.find(" --seed 4")) + " --seed 5" + cmd.substr(cmd.find(" --seed 4") + 9);
  ASSERT_EQ(std::system((seed5 + " > " + d + "/five.txt 2> " + d + "/err5.txt").c_str()), 0);
  EXPECT_EQ(harness::read_text(d + "/two.txt"), "--- sample 0 (seed 4)\n" + out + "--- sample 1 (seed 5)\n" + harness::read_text(d + "/five.txt"));
  EXPECT_NE(harness::read_text(d + "/err.txt").find("generate: 16 tokens in "), std::string::npos) << harness::read_text(d + "/err.txt");
}
