// tests/onnx/test_gpt2_export.cpp - a small GPT-2 exported to ONNX: onnx.checker accepts it and ONNX Runtime gives the
// framework's logits at two batch sizes; its initializers carry HF's state_dict names.
#include <gtest/gtest.h>

#include <filesystem>

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
