// tests/apps/test_every_layer.cpp - "one file, one registry line, one test" for the whole tree: every registry layer
// (nn/registry.h) runs in every app that stacks a token mixer, for a few steps, with no app knowing it by name:
//   lra_benchmark      from scratch, and self-pretrained causally (spt-causal) where the layer can look only back
//   classify           the harness's example app
//   pretrained_convs   as the mixer of the encoder-decoder (causal in the decoder)
//   studies mixers     as the mixer of the study's backbone
// A layer an app cannot use is refused before training with an error that names the layer and why (fnet cannot run
// causally; MLP-Mixer's block needs a fixed length the seq2seq shell does not have): the test asserts which.
// Each cell's first and last logged training losses must be finite, and the cell must leave its result.
// fpt is not here: its models are GPT-2 and an LSTM (the LSTM comes through the registry: apps/fpt/model.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "app_test_util.h"
#include "apps/classify/classify.h"
#include "apps/lra_benchmark/app.h"
#include "apps/lra_benchmark/config.h"
#include "apps/pretrained_convs/app.h"
#include "apps/pretrained_convs/config.h"
#include "apps/studies/mixers.h"
#include "nn/registry.h"

namespace {

using json = nlohmann::json;
namespace harness = dl::harness;

std::vector<std::string> layer_names() {
  std::vector<std::string> v;
  for (auto& e : dl::nn::layer_registry()) v.push_back(e.name);
  return v;
}

// Runs one cell (every axis value given); returns "" and checks its curve, or the error it was refused with.
std::string run_one(const harness::Experiment& e, const harness::Preset& p, const std::vector<std::string>& values,
                    const std::string& out) {
  std::vector<std::vector<std::string>> axes;
  for (auto& v : values) axes.push_back({v});
  try {
    harness::SweepOptions o;
    o.out = out, o.quiet = true;
    auto cells = harness::expand_cells(e, p, axes, {0}, {});
    auto rs = harness::run_cells(e, p, cells, o);
    EXPECT_EQ(rs.size(), 1u);
    auto rows = harness::read_metrics_csv(harness::cell_dir(out, cells.at(0)) + "/metrics.csv");
    EXPECT_GE(rows.size(), 2u) << e.name << " " << harness::join(values);
    for (auto& r : rows) EXPECT_TRUE(std::isfinite(r.train_loss)) << e.name << " " << harness::join(values) << " step " << r.step;
    return "";
  } catch (const std::exception& ex) {
    return ex.what();
  }
}

std::string write(const std::string& path, const json& j) {
  std::ofstream(path) << j.dump(2);
  return path;
}

}  // namespace

TEST(EveryLayer, RunsInLraBenchmarkFromScratchAndCausallySelfPretrained) {
  const std::string d = dl::test::app_temp_dir("every_layer_lra");
  const harness::Experiment e = lra::experiment();
  const harness::Preset p = lra::load_preset(write(
      d + "/mini.json", {{"tasks", {"listops"}}, {"models", {"s4d"}}, {"regimes", {"scratch"}},
                         {"defaults", {{"d_model", 16}, {"layers", 1}, {"heads", 2}, {"d_state", 4}, {"batch", 4}, {"steps", 3},
                                       {"warmup", 1}, {"eval_every", 3}, {"eval_batches", 1}, {"checkpoint_every", 3},
                                       {"pretrain_steps", 2}, {"seq_len", 32}, {"train_size", 16}, {"val_size", 8},
                                       {"test_size", 8}}}}));
  const std::set<std::string> not_causal = {"fnet", "mixer"};
  for (const std::string& name : layer_names()) {
    const std::string layer = name == "attention" ? "transformer" : name;  // the app's name for attention + FFN
    EXPECT_EQ(run_one(e, p, {"listops", layer, "scratch"}, d + "/scratch"), "") << layer;
    const std::string causal = run_one(e, p, {"listops", layer, "spt-causal"}, d + "/causal");
    if (not_causal.count(layer)) {
      EXPECT_NE(causal.find("'" + layer + "'"), std::string::npos) << layer << ": " << causal;
      EXPECT_NE(causal.find("causal"), std::string::npos) << layer << ": " << causal;
    } else {
      EXPECT_EQ(causal, "") << layer;
    }
  }
}

TEST(EveryLayer, RunsInClassify) {
  const std::string d = dl::test::app_temp_dir("every_layer_classify");
  const harness::Experiment e = classify::experiment();
  const harness::Preset p = harness::load_preset(
      write(d + "/mini.json", {{"tasks", {"listops"}}, {"layers", {"s4d"}},
                               {"defaults", {{"seq_len", 32}, {"train_size", 16}, {"val_size", 8}, {"test_size", 8}, {"d_model", 16},
                                             {"layers", 1}, {"batch", 4}, {"steps", 3}, {"warmup", 1}, {"eval_every", 3}}}}),
      e.presets_dir, std::vector<harness::Axis>(e.axes.begin(), e.axes.end()));
  for (const std::string& layer : layer_names()) EXPECT_EQ(run_one(e, p, {"listops", layer}, d + "/out"), "") << layer;
}

TEST(EveryLayer, RunsInPretrainedConvsOrIsRefusedWithItsReason) {
  const std::string d = dl::test::app_temp_dir("every_layer_pconv");
  const harness::Experiment e = pconv::experiment();
  const harness::Preset p = pconv::load_preset(write(
      d + "/mini.json",
      {{"tasks", {"sentiment"}}, {"models", {"lightconv"}}, {"regimes", {"scratch"}},
       {"defaults", {{"d_model", 16}, {"d_ff", 32}, {"layers", 1}, {"decoder_layers", 1}, {"heads", 2}, {"train_size", 16},
                     {"val_size", 8}, {"test_size", 8}, {"batch", 4}, {"steps", 3}, {"warmup", 1}, {"eval_every", 3},
                     {"checkpoint_every", 3}, {"eval_examples", 4}, {"max_src", 32}}}}));
  const std::map<std::string, std::string> refused = {{"fnet", "cannot run causally"}, {"mixer", "max_len"}};
  for (const std::string& layer : layer_names()) {
    const std::string err = run_one(e, p, {"sentiment", layer, "scratch"}, d + "/out");
    if (refused.count(layer)) {
      EXPECT_NE(err.find("layer '" + layer + "' cannot be the encoder-decoder's mixer"), std::string::npos) << err;
      EXPECT_NE(err.find(refused.at(layer)), std::string::npos) << err;
    } else {
      EXPECT_EQ(err, "") << layer;
    }
  }
}

TEST(EveryLayer, RunsInTheMixersStudy) {
  const std::string d = dl::test::app_temp_dir("every_layer_mixers");
  const harness::Experiment e = studies::mixers_experiment();
  const harness::Preset p = harness::load_preset(
      write(d + "/mini.json",
            {{"description", "test"}, {"tasks", {"listops"}}, {"mixers", {"s4d"}}, {"lrs", {"0.002"}},
             {"defaults", {{"seq_len", 32}, {"steps", 3}, {"eval_every", 3}, {"d_model", 16}, {"heads", 2}, {"d_state", 4},
                           {"kernel_size", 3}, {"token_hidden", 4}, {"batch", 4}, {"train_size", 16}, {"val_size", 8},
                           {"test_size", 8}, {"sweep_from", 16}, {"sweep_to", 16}, {"sweep_batch", 2}}}}),
      e.presets_dir, std::vector<harness::Axis>(e.axes.begin(), e.axes.end()));
  for (const std::string& layer : layer_names()) EXPECT_EQ(run_one(e, p, {"listops", layer, "0.002"}, d + "/out"), "") << layer;
}
