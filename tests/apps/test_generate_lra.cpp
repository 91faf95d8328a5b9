// tests/apps/test_generate_lra.cpp - generate on lra_benchmark spt-causal cells that the app itself trains here (ListOps,
// S4D and a Transformer with learned positions, 30 pretraining steps at width 8): the stream's logits equal the full
// forward's next-token logits at every position, greedy text is the same streamed and recomputed, the same seed gives
// the same tokens, S4D streams in constant memory per token, a cell that cannot generate is named, and the executable
// prints ListOps symbols and its tokens/s.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include "app_test_util.h"
#include "apps/common/results.h"
#include "apps/generate/generate.h"
#include "apps/generate/language_model.h"
#include "apps/lra_benchmark/data.h"
#include "apps/lra_benchmark/model.h"
#include "common/op_harness.h"

namespace fs = std::filesystem;
using namespace dl;

namespace {

// <build>/test_tmp/generate_lra/<test>/<model>/run/cells/listops__<model>__spt-causal__seed0, trained once per process
std::string trained_cell(const std::string& model) {
  static std::map<std::string, std::string> done;
  if (done.count(model)) return done[model];
  // One folder per test: ctest runs the tests as parallel processes, and two of them training the same folder at once
  // removed each other's cell (GenerateLra.ACellThatCannotGenerateIsNamed failed so under ctest -j2).
  const std::string d = std::string(DL_BINARY_DIR) + "/test_tmp/generate_lra/" +
                        ::testing::UnitTest::GetInstance()->current_test_info()->name() + "/" + model;
  fs::remove_all(d);
  fs::create_directories(d);
  const std::string sets =
      " --set d_model=8 --set layers=2 --set heads=2 --set d_state=4 --set steps=1 --set pretrain_steps=30 --set warmup=2"
      " --set eval_every=30 --set checkpoint_every=30 --set seq_len=32 --set train_size=32 --set val_size=4"
      " --set test_size=4 --set batch=8 --set pretrain_lr=0.01";
  const std::string cmd = std::string(DL_BINARY_DIR) + "/lra_benchmark cell --task listops --model " + model +
                          " --regime spt-causal --seed 0 --threads 1 --quiet --out " + d + "/run" + sets +
                          (model == "transformer" ? " --set pos=learned" : "") + " > " + d + "/train.log 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << harness::read_text(d + "/train.log");
  return done[model] = d + "/run/cells/listops__" + model + "__spt-causal__seed0";
}

// the config the cell's model file carries
lra::CellConfig cell_config(const std::string& cell) {
  const std::string f = cell + "/model.safetensors";
  return lra::CellConfig::from_json(harness::config_in_metadata(load_safetensors(f).metadata, f, "lra_benchmark"), f);
}

}  // namespace

// The stream's logits after each token equal forward's over the whole prefix; S4D's state is constant per token.
TEST(GenerateLra, SteppingGivesTheFullForwardsNextTokenLogits) {
  for (const std::string model : {"s4d", "transformer"}) {
    gen::Options o;
    o.lra_cell = trained_cell(model);
    o.prompt = "[MAX 2 9 [MIN 4 7 ] 0 ] [SM 3 [MED 1 5 8 ] 6 ]";
    NoGradGuard ng;
    gen::LanguageModel lm = gen::open_lra_cell(o);
    ASSERT_EQ(lm.prompt.size(), 18u);
    EXPECT_EQ(lm.vocab, 16);
    // learned positions end with the table (the longest sequence of the task's splits); S4D's recurrence does not
    const lra::CellConfig c = cell_config(o.lra_cell);
    EXPECT_EQ(lm.context, model == "s4d" ? 0 : lra::shape_of(lra::task_data(c)).max_len) << model;
    EXPECT_NE(lm.name.find(model == "s4d" ? "in constant memory per token" : "grows with the context"), std::string::npos)
        << lm.name;
    std::vector<int64_t> prefix;
    lm.start(1);
    for (int64_t id : lm.prompt) {
      prefix.push_back(id);
      const Tensor streamed = lm.step({id}), full = lm.recompute(prefix, 1);
      EXPECT_TRUE(test::all_close(streamed, full, test::kAgreeF32, model + " position " + std::to_string(prefix.size() - 1)));
    }
  }
}

TEST(GenerateLra, SameSeedSameTokensAndGreedyStreamsAsItRecomputes) {
  gen::Options o;
  o.lra_cell = trained_cell("s4d"), o.tokens = 24, o.seed = 3;
  const gen::Result a = gen::generate(o);
  ASSERT_EQ(a.ids.size(), 24u);
  EXPECT_TRUE(a.stopped.empty()) << a.stopped;
  EXPECT_EQ(gen::generate(o).ids, a.ids);
  o.seed = 4;
  EXPECT_NE(gen::generate(o).ids, a.ids);
  EXPECT_EQ(a.prompt_tokens, 8);  // no --prompt: the first 8 tokens of test example 0
  const auto& ex = lra::task_data(cell_config(o.lra_cell)).test.examples[0].tokens;
  std::string expected_prompt;
  const char* names[] = {"<pad>", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "[MIN", "[MAX", "[MED", "[SM", "]"};
  for (int i = 0; i < 8; i++) expected_prompt += std::string(names[ex[i]]) + " ";
  EXPECT_EQ(a.prompt_text, expected_prompt);
  o.sampling.temperature = 0;
  o.tokens = 40;  // 48 positions, past the longest training sequence (30): S4D's recurrence has no end
  const gen::Result streamed = gen::generate(o);
  EXPECT_EQ(streamed.ids.size(), 40u);
  o.recompute = true;
  EXPECT_EQ(gen::generate(o).ids, streamed.ids);
}

// Several samples on one batched stream (S4D's recurrence and the Transformer's cache for 3 sequences): sample i is the
// text of seed + i alone.
TEST(GenerateLra, SamplesInABatchAreTheSingleRunsOfTheirSeeds) {
  for (const std::string model : {"s4d", "transformer"}) {
    gen::Options o;
    o.lra_cell = trained_cell(model), o.tokens = 10, o.seed = 7, o.samples = 3;
    const gen::Result batch = gen::generate(o);
    ASSERT_EQ(batch.samples.size(), 3u);
    for (int64_t i = 0; i < 3; i++) {
      gen::Options one = o;
      one.samples = 1, one.seed = o.seed + i;
      EXPECT_EQ(batch.samples[i].ids, gen::generate(one).ids) << model << " sample " << i;
    }
    EXPECT_NE(batch.samples[0].ids, batch.samples[1].ids) << model;
  }
}

TEST(GenerateLra, ACellThatCannotGenerateIsNamed) {
  auto has = [](const std::string& err, const std::string& what) {
    EXPECT_NE(err.find(what), std::string::npos) << "expected \"" << what << "\" in: " << err;
  };
  const std::string cell = trained_cell("s4d"), d = std::string(DL_BINARY_DIR) + "/test_tmp/generate_lra/bad";
  fs::remove_all(d);
  fs::create_directories(d + "/empty");
  gen::Options o;
  o.lra_cell = d + "/none";
  has(test::error_of([&] { gen::generate(o); }), "--lra-cell " + d + "/none: no such folder");
  o.lra_cell = d + "/empty";
  has(test::error_of([&] { gen::generate(o); }), d + "/empty/model.safetensors is missing");
  fs::create_directories(d + "/nopre");
  fs::copy_file(cell + "/model.safetensors", d + "/nopre/model.safetensors");
  o.lra_cell = d + "/nopre";
  has(test::error_of([&] { gen::generate(o); }), d + "/nopre/pretrain holds no checkpoint");
  lra::CellConfig c = cell_config(cell);
  c.regime = "scratch";  // a fine-tuned-only cell: no LM head was trained
  fs::create_directories(d + "/scratch");
  Generator g(0);
  lra::LraModel m(c, lra::shape_of(lra::task_data(c)), false, g);
  m.save(d + "/scratch/model.safetensors", {{"format", "pt"}, {"dl.cell", c.key()}, {"dl.config", c.to_json().dump()}});
  o.lra_cell = d + "/scratch";
  has(test::error_of([&] { gen::generate(o); }),
      "listops/s4d/scratch was trained with the regime scratch; generation needs an spt-causal cell");
  o.lra_cell = cell, o.prompt = "[MAX 2 x";
  has(test::error_of([&] { gen::generate(o); }), "--prompt");
}

TEST(GenerateLra, ExecutablePrintsSymbolsAndTokensPerSecond) {
  const std::string cell = trained_cell("s4d"), d = std::string(DL_BINARY_DIR) + "/test_tmp/generate_lra";
  const std::string cmd = std::string(DL_BINARY_DIR) + "/generate --lra-cell " + cell +
                          " --prompt '[MAX 2 9' --tokens 12 --seed 1 --threads 1 > " + d + "/out.txt 2> " + d + "/err.txt";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << harness::read_text(d + "/err.txt");
  const std::string out = harness::read_text(d + "/out.txt"), err = harness::read_text(d + "/err.txt");
  EXPECT_EQ(out.rfind("[MAX 2 9 ", 0), 0u) << out;
  EXPECT_NE(err.find("generate: 12 tokens in "), std::string::npos) << err;
  EXPECT_NE(err.find("tokens/s (lra_benchmark listops/s4d/spt-causal pretraining step 30, streaming in constant memory per "
                     "token; prompt 3 tokens)"),
            std::string::npos)
      << err;
}
