// tests/onnx/test_pretrained_convs_export.cpp - `pretrained_convs export` end to end through the executable: a cell
// trained for two steps, exported at two batch sizes (byte-identical files: the batch is dynamic), the file accepted
// by ONNX's checker, and ONNX Runtime reproducing both check files' logits (teacher forcing, every target position)
// from the one file. Models: the T5 Transformer (relative position bias, causal and cross attention), the three
// convolutions of the paper, a pair-attention (_xattn) model on the pair task (segments), and S4D as a registry
// mixer (its convolution form, bidirectional in the encoder and causal in the decoder). And a performer mixer exported
// from the model itself (no app). A mixer without an export refuses as any layer does (test_export.cpp).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "nn/models/seq2seq.h"
#include "nn/onnx/check_file.h"
#include "nn/onnx/graph.h"
#include "ort_check.h"
#include "tensor/safetensors.h"

using namespace dl;

namespace {

struct ConvCase {
  std::string task, model;
};
void PrintTo(const ConvCase& c, std::ostream* os) { *os << c.task << "/" << c.model; }

int sh(const std::string& cmd) { return std::system((cmd + " > /dev/null 2>&1").c_str()); }

const char* kTiny =
    " --regime scratch --seed 0 --quiet --set steps=2 --set d_model=16 --set d_ff=32 --set heads=2 --set layers=2"
    " --set decoder_layers=2 --set kernel_sizes=3,5 --set dilations=1,2 --set train_size=32 --set val_size=8"
    " --set test_size=8 --set batch=8 --set eval_every=2 --set checkpoint_every=2 --set eval_examples=8 --set max_src=24";

class PretrainedConvsExport : public ::testing::TestWithParam<ConvCase> {};

TEST_P(PretrainedConvsExport, RuntimeReproducesTheCheckFiles) {
  const ConvCase& c = GetParam();
  const std::string dir = test::fresh_temp_dir("pconv_" + c.model);
  const std::string exe = std::string(DL_BINARY_DIR) + "/pretrained_convs";
  const std::string cell = dir + "/cells/" + c.task + "__" + c.model + "__scratch__seed0";
  ASSERT_EQ(sh(exe + " cell --task " + c.task + " --model " + c.model + " --out " + dir + kTiny), 0)
      << "training the cell failed";
  const std::string skipped = test::check_cell_export(exe, cell, dir, c.model, [&](const TensorFile& check, int64_t) {
    EXPECT_EQ(check.tensors.count("segments"), c.model.ends_with("_xattn") ? 1u : 0u);
  });
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
  if (!skipped.empty()) GTEST_SKIP() << skipped;
}

INSTANTIATE_TEST_SUITE_P(Models, PretrainedConvsExport,
                         ::testing::Values(ConvCase{"sentiment", "transformer"}, ConvCase{"sentiment", "lightconv"},
                                           ConvCase{"sentiment", "dynamicconv"}, ConvCase{"sentiment", "dilatedconv"},
                                           ConvCase{"pair_edit", "lightconv_xattn"}, ConvCase{"sentiment", "s4d"}),
                         [](const ::testing::TestParamInfo<ConvCase>& i) { return i.param.model; });

// A performer mixer (FAVOR+, bidirectional with the padding mask in the encoder, causal in the decoder), exported from
// the model itself without the app: ONNX Runtime reproduces decode_logits(dec_in, encode(ids, mask), mask).
TEST(PretrainedConvsExportModel, PerformerMixerRuntimeReproducesTheLogits) {
  constexpr int64_t S = 8, T = 5, B = 3;
  nn::Seq2SeqConfig cfg;
  cfg.vocab_size = 40, cfg.d_model = 16, cfg.d_ff = 32, cfg.num_layers = 1, cfg.num_decoder_layers = 1, cfg.num_heads = 2;
  cfg.mixer = "performer";
  Generator g(0);
  nn::Seq2SeqModel m(cfg, g);
  m.eval();
  const std::string dir = test::fresh_temp_dir("seq2seq_performer"), file = dir + "/model.onnx";
  nn::onnx::Graph graph("seq2seq_performer");
  m.export_onnx(graph, S, T);
  graph.save(file);
  Tensor ids = randint(1, cfg.vocab_size, {B, S}, g), mask = nn::onnx::example_padding_mask(B, S, g);
  Tensor dec_in = randint(0, cfg.vocab_size, {B, T}, g);
  Tensor logits;
  {
    NoGradGuard ng;
    logits = m.decode_logits(dec_in, m.encode(ids, mask), mask).data();  // (B, T, V)
  }
  nn::onnx::write_check_file(file, {{"input_ids", ids}, {"attention_mask", mask}, {"decoder_input_ids", dec_in}},
                             {{"logits", logits}});
  std::string skipped;
  test::ToolResult chk = test::onnx_checker(file);
  if (!chk.available) skipped += chk.skip_reason + "; ";
  EXPECT_EQ(chk.error, "") << "onnx.checker rejected " << file;
  std::map<std::string, Tensor> got;
  test::ToolResult ort = test::run_onnx_runtime(file, nn::onnx::check_file_path(file), &got);
  if (!ort.available) skipped += ort.skip_reason;
  else {
    ASSERT_EQ(ort.error, "") << "ONNX Runtime failed on " << file;
    test::expect_close("seq2seq performer logits", got.at("logits"), logits, test::kFixtureLong);
  }
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
  if (!skipped.empty()) GTEST_SKIP() << skipped;
}

}  // namespace
