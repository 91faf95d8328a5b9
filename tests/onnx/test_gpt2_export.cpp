// tests/onnx/test_gpt2_export.cpp - a small GPT-2 exported to ONNX: onnx.checker accepts it and ONNX Runtime gives the
// framework's logits at two batch sizes; its initializers carry HF's state_dict names. And the same from a GPT-2 file
// through the generate app's --export-onnx (the executable), whose bad options are named.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sys/wait.h>

#include "nn/models/gpt2.h"
#include "nn/onnx/check_file.h"
#include "nn/onnx/graph.h"
#include "tensor/safetensors.h"
#include "ort_check.h"

using namespace dl;
using namespace dl::nn;

namespace {

// A 2-layer GPT-2 with its weights `scale` times their init: at init the blocks barely change the residual stream, so
// an attention that looked at the wrong positions (or a cache that lost the context) would hardly move the logits.
std::unique_ptr<GPT2Model> scaled_gpt2(int64_t vocab, int64_t positions, int64_t width, int64_t heads, uint64_t seed,
                                       double scale) {
  GPT2Config c;
  c.vocab_size = vocab, c.n_positions = positions, c.n_embd = width, c.n_layer = 2, c.n_head = heads;
  Generator g(seed);
  auto m = std::make_unique<GPT2Model>(c, g);
  NoGradGuard ng;
  for (auto& p : m->parameters()) p.mutable_data().copy_(mul_scalar(p.data(), scale));
  m->eval();
  return m;
}

// A command's exit status and its output: stdout and stderr, or stdout alone (the texts of a byte-level model hold
// any byte, '\n' too).
std::pair<int, std::string> run(const std::string& cmd, bool with_stderr = true) {
  FILE* f = popen((cmd + (with_stderr ? " 2>&1" : " 2>/dev/null")).c_str(), "r");
  std::string out;
  char buf[512];
  while (size_t n = fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  const int st = pclose(f);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

}  // namespace

TEST(OnnxGpt2, CheckerAcceptsAndRuntimeReproducesLogits) {
  const std::unique_ptr<GPT2Model> model = scaled_gpt2(50, 32, 32, 4, 3, 5.0);
  GPT2Model& m = *model;
  const GPT2Config& c = m.cfg;
  Generator g(3);
  const int64_t T = 12;
  onnx::Graph graph("gpt2_test");
  m.export_onnx(graph, T);
  const std::string dir = test::fresh_temp_dir("gpt2");
  const std::string file = dir + "/gpt2.onnx";
  graph.save(file);
  for (auto& n : graph.initializer_names())
    if (n.rfind("onnx::", 0) != 0) EXPECT_TRUE(m.state_dict().count(n)) << n << " is not a state_dict name";

  std::string skipped;
  test::ToolResult chk = test::onnx_checker(file);
  if (!chk.available) skipped += chk.skip_reason + "; ";
  EXPECT_EQ(chk.error, "") << "onnx.checker rejected " << file;
  for (int64_t B : {2, 3}) {
    Tensor ids = randint(0, c.vocab_size, {B, T}, g);
    Tensor logits;
    {
      NoGradGuard ng;
      logits = m.forward(ids).data();
    }
    onnx::write_check_file(file, {{"input_ids", ids}}, {{"logits", logits}});
    std::map<std::string, Tensor> got;
    test::ToolResult ort = test::run_onnx_runtime(file, onnx::check_file_path(file), &got);
    if (!ort.available) {
      skipped += ort.skip_reason;
      break;
    }
    ASSERT_EQ(ort.error, "") << "ONNX Runtime failed on " << file;
    test::expect_close("gpt2 B=" + std::to_string(B) + " logits", got.at("logits"), logits, test::kFixtureLong);
  }
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
  if (!skipped.empty()) GTEST_SKIP() << skipped;
}

TEST(OnnxGpt2, ExportLongerThanPositionsFails) {
  GPT2Config c;
  c.vocab_size = 10, c.n_positions = 8, c.n_embd = 8, c.n_layer = 1, c.n_head = 2;
  Generator g(1);
  GPT2Model m(c, g);
  onnx::Graph graph("too_long");
  EXPECT_THROW(m.export_onnx(graph, 9), std::exception);
}

// The cached step: from an empty cache (five tokens), then one token, then three at once, each call fed the presents
// ONNX Runtime returned from the call before; logits against forward on the whole prefix, presents against step()'s
// key/value cache after as many tokens.
TEST(OnnxGpt2, CachedStepFromAnEmptyCacheReproducesTheFramework) {
  const std::unique_ptr<GPT2Model> model = scaled_gpt2(50, 32, 32, 4, 7, 5.0);
  GPT2Model& m = *model;
  const GPT2Config& c = m.cfg;
  Generator g(7);
  onnx::Graph graph("gpt2_with_past");
  m.export_onnx_with_past(graph);
  const std::string dir = test::fresh_temp_dir("gpt2_past");
  const std::string file = dir + "/gpt2_past.onnx";
  graph.save(file);
  std::string skipped;
  test::ToolResult chk = test::onnx_checker(file);
  if (!chk.available) skipped += chk.skip_reason + "; ";
  EXPECT_EQ(chk.error, "") << "onnx.checker rejected " << file;

  const int64_t B = 2, NH = 4, HS = 8, T = 9;
  const Tensor ids = randint(0, c.vocab_size, {B, T}, g);
  NoGradGuard ng;
  StreamState s = m.start_stream(B);
  std::map<std::string, Tensor> past;  // what the next call gets: ONNX Runtime's presents
  for (int64_t i = 0; i < c.n_layer; i++)
    for (const char* kv : {"key", "value"}) past["past_key_values." + std::to_string(i) + "." + kv] = zeros({B, NH, 0, HS});
  int64_t done = 0;
  for (int64_t n : {5, 1, 3}) {
    const std::string what = "tokens " + std::to_string(done) + " .. " + std::to_string(done + n - 1);
    std::map<std::string, Tensor> in = past;
    in["input_ids"] = ids.narrow(1, done, n).contiguous();
    const std::string in_file = dir + "/in_" + std::to_string(done) + ".safetensors";
    save_safetensors(in_file, in);
    std::map<std::string, Tensor> got;
    test::ToolResult ort = test::run_onnx_runtime(file, in_file, &got);
    if (!ort.available) {
      skipped += ort.skip_reason;
      break;
    }
    ASSERT_EQ(ort.error, "") << "ONNX Runtime failed on " << file << " (" << what << ")";
    for (int64_t t = done; t < done + n; t++) m.step(ids.narrow(1, t, 1).reshape({B}).contiguous(), s);
    done += n;
    const Tensor want = m.forward(ids.narrow(1, 0, done).contiguous()).data().narrow(1, done - n, n);  // (B, n, V)
    test::expect_close(what + ": logits", got.at("logits"), want, test::kFixtureLong);
    for (int64_t i = 0; i < c.n_layer; i++)
      for (int kv = 0; kv < 2; kv++) {
        const std::string name = "present." + std::to_string(i) + "." + (kv ? "value" : "key");
        test::expect_close(what + ": " + name, got.at(name), s.t[2 * i + kv], test::kFixtureLong);
        past["past_key_values." + std::to_string(i) + "." + (kv ? "value" : "key")] = got.at(name);
      }
  }
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
  if (!skipped.empty()) GTEST_SKIP() << skipped;
}

TEST(OnnxGpt2, GenerateExportsAGpt2FileThatTheRuntimeReproduces) {
  const std::string dir = test::fresh_temp_dir("gpt2_generate");
  const std::unique_ptr<GPT2Model> gpt = scaled_gpt2(40, 16, 16, 2, 5, 5.0);
  GPT2Model& m = *gpt;
  const std::string model = dir + "/transformer.safetensors";
  m.save(model);
  const std::string exe = std::string(DL_BINARY_DIR) + "/generate --model " + model + " --heads 2";
  const std::string skipped = test::check_export([&](const std::string& onnx) { return exe + " --length 12 --export-onnx " + onnx; },
                                                 dir, "generate --export-onnx", [&](const TensorFile& check, int64_t batch) {
                                                   // the check file holds the framework's own logits for its ids
                                                   NoGradGuard ng;
                                                   m.eval();
                                                   const Tensor ids = check.at("input_ids");
                                                   EXPECT_EQ(ids.shape(), (Shape{batch, 12}));
                                                   test::expect_close("check file logits", check.at("logits"),
                                                                      m.forward(ids).data(), test::kFixtureLong);
                                                 });
  // the cached step: the check file's example has 5 positions cached and 5 new; its presents are checked too
  std::filesystem::create_directories(dir + "/kv");
  const std::string skipped_kv = test::check_export(
      [&](const std::string& onnx) { return exe + " --kv-cache --length 10 --export-onnx " + onnx; }, dir + "/kv",
      "generate --export-onnx --kv-cache", [&](const TensorFile& check, int64_t batch) {
        EXPECT_EQ(check.at("input_ids").shape(), (Shape{batch, 5}));
        EXPECT_EQ(check.at("past_key_values.1.value").shape(), (Shape{batch, 2, 5, 8}));
        EXPECT_EQ(check.at("present.1.value").shape(), (Shape{batch, 2, 10, 8}));
      });
  // the default length is the model's context
  auto [rc, out] = run(exe + " --export-onnx " + dir + "/full.onnx --batch 1");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("input_ids (batch, 16)"), std::string::npos) << out;
  // bad options are named, and nothing is sampled
  std::tie(rc, out) = run(exe + " --export-onnx " + dir + "/long.onnx --length 17");
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("--length 17 is past the model's 16 positions"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(dir + "/long.onnx"));
  std::tie(rc, out) = run(std::string(DL_BINARY_DIR) + "/generate --model " + model + " --heads 2 --length 4");
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("--length requires --export-onnx"), std::string::npos) << out;
  std::tie(rc, out) = run(std::string(DL_BINARY_DIR) + "/generate --lra-cell " + dir + " --export-onnx " + dir + "/x.onnx");
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("lra_benchmark export --cell"), std::string::npos) << out;
  std::tie(rc, out) = run(exe + " --export-onnx " + dir + "/one.onnx --kv-cache --length 1");
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("--kv-cache needs --length of at least 2"), std::string::npos) << out;
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
  if (!skipped.empty() || !skipped_kv.empty()) GTEST_SKIP() << skipped << skipped_kv;
}

// Greedy text from the exported cached step under ONNX Runtime (scripts/ort_generate.js: the prompt once with an empty
// past, then a token per call on the presents) is generate's greedy text for the same file and prompt. The model is
// a byte-level GPT-2 at 20x its init scale, so the next byte depends on the context (test_generate.cpp's reason).
TEST(OnnxGpt2, RuntimeGreedyTextFromTheCachedStepIsGenerates) {
  const std::string dir = test::fresh_temp_dir("gpt2_ort_generate");
  const std::string model = dir + "/transformer.safetensors", step = dir + "/step.onnx";
  scaled_gpt2(256, 24, 16, 2, 3, 20.0)->save(model);
  const std::string gen = std::string(DL_BINARY_DIR) + "/generate --model " + model + " --heads 2";
  auto [rc, out] = run(gen + " --export-onnx " + step + " --kv-cache");
  ASSERT_EQ(rc, 0) << out;
  const std::string prompt = "ab";
  const auto [rc_ours, ours] = run(gen + " --prompt " + prompt + " --tokens 16 --temperature 0", false);  // prompt, 16 bytes, \n
  ASSERT_EQ(rc_ours, 0) << ours;
  const std::string script = std::string(DL_FIXTURE_DIR) + "/../../scripts/ort_generate.js";
  const auto [rc_ort, theirs] = run("node " + script + " " + step + " --prompt " + prompt + " --tokens 16", false);  // 16 bytes, \n
  if (rc_ort == 2 || rc_ort == 127) GTEST_SKIP() << "node or onnxruntime-node is not here (exit " << rc_ort << ")";
  ASSERT_EQ(rc_ort, 0) << theirs;
  EXPECT_EQ(prompt + theirs, ours);
  std::set<char> distinct(theirs.begin(), theirs.end());  // (the final \n among them)
  EXPECT_GE(distinct.size(), 3u) << "a text this uniform would not show a cache that lost the context: " << theirs;
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
}
