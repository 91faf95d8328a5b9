// tests/onnx/test_gpt2_export.cpp - a small GPT-2 exported to ONNX: onnx.checker accepts it and ONNX Runtime gives the
// framework's logits at two batch sizes; its initializers carry HF's state_dict names. And the same from a GPT-2 file
// through the generate app's --export-onnx (the executable), whose bad options are named.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "nn/models/gpt2.h"
#include "nn/onnx/check_file.h"
#include "nn/onnx/graph.h"
#include "ort_check.h"

using namespace dl;
using namespace dl::nn;

TEST(OnnxGpt2, CheckerAcceptsAndRuntimeReproducesLogits) {
  GPT2Config c;
  c.vocab_size = 50, c.n_positions = 32, c.n_embd = 32, c.n_layer = 2, c.n_head = 4;
  Generator g(3);
  GPT2Model m(c, g);
  // weights 5x their init scale: at init the blocks barely change the residual stream, and an attention that
  // looked at the wrong positions would hardly move the logits
  {
    NoGradGuard ng;
    for (auto& p : m.parameters()) {
      Tensor d = p.data();
      d.copy_(mul_scalar(d, 5.0));
    }
  }
  m.eval();
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

namespace {

// The executable's exit status and what it printed (stdout and stderr).
std::pair<int, std::string> run(const std::string& cmd) {
  FILE* f = popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  char buf[512];
  while (size_t n = fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  return {pclose(f), out};
}

}  // namespace

TEST(OnnxGpt2, GenerateExportsAGpt2FileThatTheRuntimeReproduces) {
  const std::string dir = test::fresh_temp_dir("gpt2_generate");
  GPT2Config c;
  c.vocab_size = 40, c.n_positions = 16, c.n_embd = 16, c.n_layer = 2, c.n_head = 2;
  Generator g(5);
  GPT2Model m(c, g);
  {
    NoGradGuard ng;  // 5x the init scale, as above
    for (auto& p : m.parameters()) p.mutable_data().copy_(mul_scalar(p.data(), 5.0));
  }
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
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
  if (!skipped.empty()) GTEST_SKIP() << skipped;
}
