// tests/onnx/test_lra_export.cpp - `lra_benchmark export` end to end through the executable: a cell trained for a
// few steps, exported, its file accepted by ONNX's checker, and ONNX Runtime reproducing the check file's logits at
// two batch sizes. Cells: tokens (ListOps) with a Transformer, S4D and a Performer (FAVOR+'s random projection an
// initializer), a causally pretrained Transformer (its causal masks), two towers (Retrieval with S4), and continuous
// features (Fashion-MNIST patches with DLR).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "nn/onnx/check_file.h"
#include "ort_check.h"
#include "tensor/safetensors.h"

using namespace dl;

namespace {

struct AppCase {
  std::string task, model, regime, sets;
};
void PrintTo(const AppCase& c, std::ostream* os) { *os << c.task << "/" << c.model << "/" << c.regime; }

int sh(const std::string& cmd) { return std::system((cmd + " > /dev/null 2>&1").c_str()); }

class LraExport : public ::testing::TestWithParam<AppCase> {};

// splits of 64 examples: the export does not depend on them, and Retrieval's 10000 test pairs took 8 of the cell's
// 10 s (2026-12-07, a 2-core Zen 5)
const std::string kSmallSplits = "--set train_size=64 --set val_size=64 --set test_size=64 ";

TEST_P(LraExport, RuntimeReproducesTheCheckFile) {
  const AppCase& c = GetParam();
  const std::string dir = test::fresh_temp_dir("lra_" + c.task + "_" + c.model);
  const std::string exe = std::string(DL_BINARY_DIR) + "/lra_benchmark";
  const std::string cell = dir + "/cells/" + c.task + "__" + c.model + "__" + c.regime + "__seed0";
  ASSERT_EQ(sh(exe + " cell --task " + c.task + " --model " + c.model + " --regime " + c.regime + " --seed 0 --quiet --out " +
               dir + " --set steps=2 --set pretrain_steps=2 " + kSmallSplits + c.sets),
            0)
      << "training the cell failed";
  std::string skipped;
  for (int batch : {2, 3}) {
    const std::string file = dir + "/model_b" + std::to_string(batch) + ".onnx";
    ASSERT_EQ(sh(exe + " export --cell " + cell + " --onnx " + file + " --batch " + std::to_string(batch)), 0);
    test::ToolResult chk = test::onnx_checker(file);
    if (!chk.available) skipped += chk.skip_reason + "; ";
    EXPECT_EQ(chk.error, "") << "onnx.checker rejected " << file;
    TensorFile check = load_safetensors(nn::onnx::check_file_path(file));
    EXPECT_EQ(check.at("logits").size(0), batch);
    std::map<std::string, Tensor> got;
    test::ToolResult ort = test::run_onnx_runtime(file, nn::onnx::check_file_path(file), &got);
    if (!ort.available) {
      skipped += ort.skip_reason;
      break;
    }
    ASSERT_EQ(ort.error, "") << "ONNX Runtime failed on " << file;
    test::expect_close(c.task + "/" + c.model + " B=" + std::to_string(batch), got.at("logits"), check.at("logits"),
                       test::kFixtureLong);
  }
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
  if (!skipped.empty()) GTEST_SKIP() << skipped;
}

INSTANTIATE_TEST_SUITE_P(
    Cells, LraExport,
    ::testing::Values(AppCase{"listops", "transformer", "scratch", ""}, AppCase{"listops", "s4d", "scratch", ""},
                      AppCase{"listops", "performer", "scratch", ""}, AppCase{"listops", "transformer", "spt-causal", ""},
                      AppCase{"retrieval", "s4", "scratch", "--set seq_len=256"}, AppCase{"image_patches", "dlr", "scratch", ""}),
    [](const ::testing::TestParamInfo<AppCase>& i) {
      std::string n = i.param.task + "_" + i.param.model + "_" + i.param.regime;
      for (char& ch : n)
        if (!isalnum((unsigned char)ch)) ch = '_';
      return n;
    });

}  // namespace
