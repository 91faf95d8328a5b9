// tests/onnx/test_fpt_export.cpp - `fpt export` end to end through the executable: a cell trained for two steps,
// exported at two batch sizes (the files must be byte-identical: the batch is dynamic, the example batch only goes to
// the check file), the file accepted by ONNX's checker, and ONNX Runtime reproducing both check files' logits from
// the one file. One cell per arm family: fpt (the language-pretrained GPT-2, pretrained for a few steps here; the
// ablation arms, random, full_lang and the depths are the same graph), full (GPT-2 with token inputs and the masked
// read-out), and the layer-norm LSTM (unrolled) on continuous bits and on tokens with the masked read-out.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "nn/onnx/check_file.h"
#include "ort_check.h"
#include "tensor/safetensors.h"

using namespace dl;

namespace {

struct FptCase {
  std::string task, arm, sets;
};
void PrintTo(const FptCase& c, std::ostream* os) { *os << c.task << "/" << c.arm; }

int sh(const std::string& cmd) { return std::system((cmd + " > /dev/null 2>&1").c_str()); }

// Small enough to train in a second; the LM (arm fpt) is pretrained for 4 steps and cached under its own key.
const char* kTiny = " --set steps=2 --set layers=2 --set d_model=16 --set heads=2 --set lstm_layers=2 --set train_size=32"
                    " --set val_size=16 --set test_size=16 --set batch=8 --set eval_every=2 --set checkpoint_every=2"
                    " --set lm_steps=4 --set lm_context=16 --set lm_batch=4";

class FptExport : public ::testing::TestWithParam<FptCase> {};

TEST_P(FptExport, RuntimeReproducesTheCheckFiles) {
  const FptCase& c = GetParam();
  const std::string dir = test::fresh_temp_dir("fpt_" + c.task + "_" + c.arm);
  const std::string exe = std::string(DL_BINARY_DIR) + "/fpt";
  const std::string cell = dir + "/cells/" + c.task + "__" + c.arm + "__seed0";
  ASSERT_EQ(sh(exe + " cell --task " + c.task + " --arm " + c.arm + " --seed 0 --quiet --out " + dir + kTiny + " " + c.sets), 0)
      << "training the cell failed";
  const std::string skipped = test::check_cell_export(exe, cell, dir, c.task + "/" + c.arm, [](const TensorFile&, int64_t) {});
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
  if (!skipped.empty()) GTEST_SKIP() << skipped;
}

INSTANTIATE_TEST_SUITE_P(Arms, FptExport,
                         ::testing::Values(FptCase{"bit_xor", "fpt", ""}, FptCase{"bit_xor", "lstm", ""},
                                           FptCase{"listops", "full", "--set seq_len=32 --set masked_readout=true"},
                                           FptCase{"listops", "lstm", "--set seq_len=32 --set masked_readout=true"}),
                         [](const ::testing::TestParamInfo<FptCase>& i) { return i.param.task + "_" + i.param.arm; });

}  // namespace
