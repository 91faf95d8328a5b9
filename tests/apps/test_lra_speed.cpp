// tests/apps/test_lra_speed.cpp - `lra_benchmark speed`'s code path on miniature cells: one timed step each,
// and the JSON line's fields are the model's own (parameter count, batch, length) and plausible timings.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "apps/lra_benchmark/model.h"
#include "apps/lra_benchmark/speed.h"

using namespace lra;
namespace fs = std::filesystem;

// ListOps and Retrieval (two towers) at length 32, one layer of width 16, batch 4.
static dl::harness::Preset mini_preset() {
  std::string dir = std::string(DL_BINARY_DIR) + "/test_tmp/lra_speed";
  fs::create_directories(dir);
  std::ofstream(dir + "/mini.json") << R"({
    "tasks": ["listops", "retrieval"], "models": ["transformer", "s4d"], "regimes": ["scratch"],
    "defaults": {"d_model": 16, "layers": 1, "heads": 2, "d_state": 8, "dropout": 0.0, "batch": 4,
                 "seq_len": 32, "train_size": 16, "val_size": 16, "test_size": 16}
  })";
  return load_preset(dir + "/mini.json");
}

TEST(LraSpeed, OneStepPerCellReportsTheModelsOwnFields) {
  dl::harness::Preset p = mini_preset();
  SpeedOptions o;
  o.steps = 1, o.warmup = 0, o.threads = 1;
  for (auto& task : p.values[0])
    for (auto& model : p.values[1]) {
      SCOPED_TRACE(task + "/" + model);
      CellConfig c = resolve_cell(p, task, model, "scratch", {});
      SpeedResult r = measure_speed(c, o);
      json j = r.to_json(p.name);

      // the parameters of the model the trainer fine-tunes (its pretraining head left out)
      dl::Generator g((uint64_t)c.seed + 1);
      LraModel reference(c, task_shape(c), false, g);
      EXPECT_EQ(j.at("params").get<int64_t>(), reference.num_parameters() - reference.pretrain_head_params());

      EXPECT_EQ(j.at("preset"), "mini");
      EXPECT_EQ(j.at("task"), task);
      EXPECT_EQ(j.at("model"), model);
      EXPECT_EQ(j.at("batch"), 4);
      EXPECT_EQ(j.at("seq_len"), r.shape.max_len);
      EXPECT_GT(r.shape.max_len, 0);
      EXPECT_LE(r.shape.max_len, 32);
      EXPECT_EQ(j.at("shape").at("two_tower"), task == "retrieval");
      EXPECT_GT(j.at("ms_per_step").get<double>(), 0);
      EXPECT_NEAR(r.steps_per_s * r.ms_per_step, 1000.0, 1e-6);
      EXPECT_GT(j.at("peak_rss_mb").get<double>(), 0);
    }
}
