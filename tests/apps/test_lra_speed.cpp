// tests/apps/test_lra_speed.cpp - `lra_benchmark speed`'s code path on miniature cells: one timed step each,
// and the JSON line's fields are the model's own (parameter count, batch, length, FLOPs) and plausible timings.
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

      // a training step's FLOPs are 3 x the model's own count: its blocks' counts (each tower) plus the head's products
      const int64_t B = c.batch, L = r.shape.max_len, D = c.d_model;
      double parts = 0;
      for (size_t i = 0; i < reference.num_blocks(); i++) parts += reference.block(i).forward_flops(B, L);
      if (r.shape.features > 0) parts += 2.0 * B * L * (r.shape.features + 1) * D;  // the features' input projection
      double head = 2.0 * B * D * r.shape.classes;
      if (r.shape.two_tower) parts *= 2, head += 2.0 * B * 4 * D * D;  // both towers; the hidden layer on [a, b, a*b, a-b]
      EXPECT_NEAR(j.at("model_gflop").get<double>(), 3 * (parts + head) / 1e9, 1e-12 * (parts + head));
      EXPECT_NEAR(r.gflops, r.model_gflop * r.steps_per_s, 1e-9);
    }
}
