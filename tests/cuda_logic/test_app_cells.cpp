// tests/cuda_logic/test_app_cells.cpp - every app's tiny cell trains and evaluates with --device cuda and logs the
// CPU's curve.
//
// In this binary Device::cuda is the host twin of the backend (cuda/twin.h): device memory is host memory
// behind a poisoned pointer and every backend method runs the cuda/ops/ functions the GPU build runs. So a cell run
// with device "cuda" here takes every device branch an app's step takes on a GPU - the batch moved to the model's
// device, the model's ops, the optimizer's device state, evaluation reading predictions back - and any CPU kernel
// reached with a device tensor, or a host and a device tensor meeting in one op, fails the run. Each test runs the
// same cells (same seeds, same data) with "cpu" and "cuda" and expects the same curve (training loss, validation
// loss, accuracy at every step) and the same final metrics, to 1e-6: the device ops compute the CPU's formulas, in
// f64 accumulation where the CPU does, so what differs is rounding (fused multiply-adds, summation order).
// What this does not test: nvcc, launches, cuBLAS/cuFFT (tests/cuda/, scripts/gpu_check.sh do, on a GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "apps/classify/classify.h"
#include "apps/common/experiment.h"
#include "apps/fpt/app.h"
#include "apps/fpt/config.h"
#include "apps/fpt/pretrain.h"
#include "apps/lra_benchmark/app.h"
#include "apps/lra_benchmark/config.h"
#include "apps/lra_benchmark/speed.h"
#include "apps/pretrained_convs/app.h"
#include "apps/pretrained_convs/config.h"
#include "apps/pretrained_convs/pretrain.h"
#include "cuda/twin.h"

namespace dl {
namespace {

namespace harness = dl::harness;

// <build>/test_tmp/<name>, emptied.
std::string temp_dir(const std::string& name) {
  std::string d = std::string(DL_BINARY_DIR) + "/test_tmp/" + name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

double worst = 0;  // the largest difference same() has seen in this test (printed at its end)

// a and b agree to 1e-6 (absolute below 1, relative above), or are both NaN (not measured)
bool same(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  const double d = std::fabs(a - b) / std::max(1.0, std::fabs(b));
  worst = std::max(worst, d);
  return d <= 1e-6;
}

// Declared first in each test: zeroes `worst`, and prints it when the test ends (the figure docs/cuda.md quotes).
struct PrintWorst {
  std::string test;
  explicit PrintWorst(std::string t) : test(std::move(t)) { worst = 0; }
  ~PrintWorst() { std::printf("  %s: largest cpu-cuda difference %.2g\n", test.c_str(), worst); }
};

// A cpu run allocates no device memory; a cuda run a lot (a silent fallback to the CPU would give the CPU's curve).
void expect_device_use(const std::string& device, int64_t allocations, const std::string& what) {
  if (device == "cpu") EXPECT_EQ(allocations, 0) << what << ": the cpu run allocated device memory";
  else EXPECT_GT(allocations, 1000) << what << ": the cuda run allocated little device memory";
}

// The same cells on the CPU and on the device (the twin): equal curves, point by point, and equal final metrics.
void expect_same_runs(const harness::Experiment& e, const harness::Preset& p, const std::vector<harness::Cell>& cells,
                      const std::string& name) {
  const std::string d = temp_dir("twin_" + name);
  harness::SweepOptions o;
  o.quiet = true;
  o.out = d + "/cpu", o.device = "cpu";
  const int64_t a0 = cuda::host_twin_allocations();
  const auto cpu = harness::run_cells(e, p, cells, o);
  const int64_t a1 = cuda::host_twin_allocations();
  o.out = d + "/cuda", o.device = "cuda";
  const auto dev = harness::run_cells(e, p, cells, o);
  const int64_t a2 = cuda::host_twin_allocations();
  expect_device_use("cpu", a1 - a0, name);
  expect_device_use("cuda", (a2 - a1) / (int64_t)cells.size(), name);  // per cell
  ASSERT_EQ(cpu.size(), cells.size());
  ASSERT_EQ(dev.size(), cells.size());
  for (size_t i = 0; i < cells.size(); i++) {
    const std::string label = cells[i].label();
    const auto &a = cpu[i].curve, &b = dev[i].curve;
    ASSERT_EQ(a.size(), b.size()) << label;
    ASSERT_GE(a.size(), 3u) << label << ": the test wants a point per step";
    for (size_t k = 0; k < a.size(); k++) {
      EXPECT_EQ(a[k].phase, b[k].phase) << label;
      EXPECT_EQ(a[k].step, b[k].step) << label;
      EXPECT_TRUE(same(a[k].train_loss, b[k].train_loss))
          << label << " " << a[k].phase << " step " << a[k].step << ": train loss cpu " << a[k].train_loss << ", cuda "
          << b[k].train_loss;
      EXPECT_TRUE(same(a[k].val_loss, b[k].val_loss)) << label << " " << a[k].phase << " step " << a[k].step << ": val loss cpu "
                                                      << a[k].val_loss << ", cuda " << b[k].val_loss;
      EXPECT_TRUE(same(a[k].accuracy, b[k].accuracy)) << label << " " << a[k].phase << " step " << a[k].step << ": accuracy cpu "
                                                      << a[k].accuracy << ", cuda " << b[k].accuracy;
    }
    ASSERT_EQ(cpu[i].metrics.size(), dev[i].metrics.size()) << label;
    for (auto& [k, v] : cpu[i].metrics)
      EXPECT_TRUE(same(v, dev[i].metrics.at(k))) << label << " " << k << ": cpu " << v << ", cuda " << dev[i].metrics.at(k);
    // the losses moved: the cell trained (a run that silently did nothing would agree too)
    EXPECT_NE(a.front().train_loss, a.back().train_loss) << label;
  }
}

// FPT: continuous inputs (bit XOR) through the frozen language-pretrained transformer, full training and the LSTM;
// token inputs (ListOps) with the masked read-out; dropout on, so the device draws the CPU's masks.
TEST(AppCellsOnDevice, FptEqualsTheCpu) {
  PrintWorst print("FptEqualsTheCpu");
  harness::Experiment e = fpt::experiment();
  harness::Preset p = fpt::load_preset("tiny");
  std::vector<std::string> sets = {"layers=2",      "d_model=16",    "heads=2",      "lstm_layers=1",
                                   "dropout=0",     "train_size=32", "val_size=16",  "test_size=16",
                                   "batch=8",       "steps=4",       "eval_every=1", "lm_steps=6",
                                   "lm_context=12", "lm_batch=4",    "seq_len=24",   "masked_readout=true"};
  // dropout 0 where attention runs: the CPU's f32 GPT-2 attention is the packed kernel, which draws its dropout
  // masks in its own order, the device's the composed path (the same masks as the composed path on the CPU)
  auto cells = harness::expand_cells(e, p, {{"bit_xor"}, {"fpt", "full"}}, {0}, sets);
  auto more = harness::expand_cells(e, p, {{"listops"}, {"full"}}, {0}, sets);
  cells.insert(cells.end(), more.begin(), more.end());
  sets.push_back("dropout=0.1");  // the LSTM arm's input dropout: the device draws the CPU's mask
  more = harness::expand_cells(e, p, {{"bit_xor"}, {"lstm"}}, {0}, sets);
  cells.insert(cells.end(), more.begin(), more.end());
  expect_same_runs(e, p, cells, "fpt");
}

// FPT's language pretraining (GPT-2's own embedding and tied head, AdamW, warmup-cosine) on the device.
TEST(AppCellsOnDevice, FptPretrainingEqualsTheCpu) {
  PrintWorst print("FptPretrainingEqualsTheCpu");
  fpt::CellConfig c;
  c.task = "bit_xor", c.arm = "fpt", c.layers = 1, c.d_model = 16, c.heads = 2, c.dropout = 0;  // 0: see FptEqualsTheCpu
  c.lm_steps = 5, c.lm_context = 10, c.lm_batch = 3;
  std::vector<nlohmann::json> curves;
  for (const char* device : {"cpu", "cuda"}) {
    harness::RunContext ctx;
    ctx.quiet = true, ctx.device = device;
    const int64_t a0 = cuda::host_twin_allocations();
    curves.push_back(fpt::pretrained_transformer("language", c, ctx, /*rebuild=*/true).info.at("curve"));
    expect_device_use(device, cuda::host_twin_allocations() - a0, "fpt pretraining");
  }
  ASSERT_EQ(curves[0].size(), curves[1].size());
  ASSERT_GE(curves[0].size(), 3u);
  for (size_t k = 0; k < curves[0].size(); k++)
    for (const char* f : {"train_loss", "val_loss"}) {
      const double a = curves[0][k].at(f).get<double>(), b = curves[1][k].at(f).get<double>();
      EXPECT_TRUE(same(a, b)) << "pretraining point " << k << " " << f << ": cpu " << a << ", cuda " << b;
    }
}

// pretrained_convs: the T5 Transformer and the three convolutions from scratch, lightconv after span-corruption
// pretraining (on the device too), and the pair model's cross-attention block; greedy decoding in evaluation.
TEST(AppCellsOnDevice, PretrainedConvsEqualsTheCpu) {
  PrintWorst print("PretrainedConvsEqualsTheCpu");
  harness::Experiment e = pconv::experiment();
  harness::Preset p = pconv::load_preset("tiny");
  const std::vector<std::string> sets = {
      "d_model=16",  "d_ff=32",    "layers=1",   "decoder_layers=1", "heads=2",      "train_size=32",      "val_size=8",
      "test_size=8", "batch=4",    "steps=3",    "warmup=1",         "eval_every=1", "checkpoint_every=3", "eval_examples=8",
      "max_src=40",  "pt_steps=3", "pt_batch=2", "pt_len=24",        "pt_warmup=1",  "pt_windows=50"};
  auto cells = harness::expand_cells(
      e, p, {{"sentiment"}, {"transformer", "lightconv", "dynamicconv", "dilatedconv"}, {"scratch"}}, {0}, sets);
  auto pre = harness::expand_cells(e, p, {{"sentiment"}, {"lightconv"}, {"pretrained"}}, {0}, sets);
  auto pair = harness::expand_cells(e, p, {{"pair_edit"}, {"lightconv_xattn"}, {"scratch"}}, {0}, sets);
  cells.insert(cells.end(), pre.begin(), pre.end());
  cells.insert(cells.end(), pair.begin(), pair.end());
  expect_same_runs(e, p, cells, "pretrained_convs");
}

// pretrained_convs' span-corruption pretraining (the encoder-decoder with a convolution, AdamW, inverse square root
// schedule) on the device.
TEST(AppCellsOnDevice, PretrainedConvsPretrainingEqualsTheCpu) {
  PrintWorst print("PretrainedConvsPretrainingEqualsTheCpu");
  harness::Preset p = pconv::load_preset("tiny");
  pconv::CellConfig c = pconv::resolve_cell(p, {"sentiment", "dynamicconv", "pretrained"},
                                            {"d_model=16", "d_ff=32", "layers=1", "decoder_layers=1", "heads=2", "pt_steps=4",
                                             "pt_batch=2", "pt_len=24", "pt_warmup=1", "pt_windows=40"});
  std::vector<nlohmann::json> curves;
  for (const char* device : {"cpu", "cuda"}) {
    harness::RunContext ctx;
    ctx.quiet = true, ctx.device = device;
    const int64_t a0 = cuda::host_twin_allocations();
    curves.push_back(pconv::pretrained_model(c, ctx, /*rebuild=*/true).info.at("curve"));
    expect_device_use(device, cuda::host_twin_allocations() - a0, "pretrained_convs pretraining");
  }
  ASSERT_EQ(curves[0].size(), curves[1].size());
  ASSERT_GE(curves[0].size(), 2u);
  for (size_t k = 0; k < curves[0].size(); k++)
    for (const char* f : {"train_loss", "val_loss"}) {
      const double a = curves[0][k].at(f).get<double>(), b = curves[1][k].at(f).get<double>();
      EXPECT_TRUE(same(a, b)) << "pretraining point " << k << " " << f << ": cpu " << a << ", cuda " << b;
    }
}

// lra_benchmark (checked by hand on the twin before, now here): ListOps with the Transformer (the packed kernel on the
// CPU, the flash primitive on the device), S4, S4D, DLR and the LSTM from scratch, and the Transformer self-pretrained
// (masked denoising, then fine-tuning from the saved backbone).
TEST(AppCellsOnDevice, LraBenchmarkEqualsTheCpu) {
  PrintWorst print("LraBenchmarkEqualsTheCpu");
  harness::Experiment e = lra::experiment();
  harness::Preset p = lra::load_preset("tiny");
  const std::vector<std::string> sets = {"d_model=16",    "layers=1",    "heads=2",      "seq_len=32",   "train_size=64",
                                         "val_size=16",   "test_size=16", "batch=8",     "steps=4",      "eval_every=1",
                                         "eval_batches=2", "pretrain_steps=3", "dropout=0"};
  auto cells = harness::expand_cells(e, p, {{"listops"}, {"transformer", "s4", "s4d", "dlr", "lstm"}, {"scratch"}}, {0}, sets);
  auto spt = harness::expand_cells(e, p, {{"listops"}, {"transformer"}, {"spt-masked"}}, {0}, sets);
  cells.insert(cells.end(), spt.begin(), spt.end());
  expect_same_runs(e, p, cells, "lra_benchmark");
}

// `lra_benchmark speed --device cuda` (what scripts/gpu_check.sh times the paper preset's ListOps Transformer with): the
// model and the batch go to the device, and each timed step ends with one wait for it.
TEST(AppCellsOnDevice, LraSpeedTimesStepsOnTheDevice) {
  harness::Preset p = lra::load_preset("tiny");
  lra::CellConfig c = lra::resolve_cell(p, "listops", "transformer", "scratch",
                                        {"d_model=16", "layers=1", "heads=2", "seq_len=32", "train_size=16", "val_size=16",
                                         "test_size=16", "batch=4"});
  lra::SpeedOptions o;
  o.steps = 2, o.warmup = 1, o.threads = 1, o.device = "cuda";
  const int64_t a0 = cuda::host_twin_allocations(), s0 = cuda::host_twin_synchronizations();
  lra::SpeedResult r = lra::measure_speed(c, o);
  EXPECT_EQ(r.to_json("tiny").at("device"), "cuda");
  EXPECT_GT(r.steps_per_s, 0);
  EXPECT_GT(cuda::host_twin_allocations() - a0, 100) << "the step did not run on the device";
  EXPECT_EQ(cuda::host_twin_synchronizations() - s0, 3) << "one wait per step (warm-up included)";
}

// classify: S4D, attention, the LSTM and a convolution as the mixer, ListOps.
TEST(AppCellsOnDevice, ClassifyEqualsTheCpu) {
  PrintWorst print("ClassifyEqualsTheCpu");
  harness::Experiment e = classify::experiment();
  harness::Preset p = harness::load_preset("tiny", e.presets_dir, std::vector<harness::Axis>(e.axes.begin(), e.axes.end()));
  std::vector<std::string> sets = {"seq_len=24", "train_size=32", "val_size=16", "test_size=16", "d_model=16",
                                   "layers=1",   "batch=8",       "steps=4",     "warmup=1",     "eval_every=1",
                                   "lr=0.02",    "dropout=0.1"};  // a large lr, so a wrong gradient shows within 4 steps
  auto cells = harness::expand_cells(e, p, {{"listops"}, {"s4d", "lstm", "lightconv", "dilatedconv"}}, {0}, sets);
  sets.back() = "dropout=0";  // attention: the CPU runs the packed or flash kernel, whose dropout draws differ
  auto more = harness::expand_cells(e, p, {{"listops"}, {"attention"}}, {0}, sets);
  cells.insert(cells.end(), more.begin(), more.end());
  expect_same_runs(e, p, cells, "classify");
}

}  // namespace
}  // namespace dl
