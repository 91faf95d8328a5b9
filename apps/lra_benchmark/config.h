// apps/lra_benchmark/config.h - presets, overrides and the resolved settings of one run ("cell").
//
// A preset (apps/lra_benchmark/presets/<name>.json) is a JSON file a user can copy and edit:
//   { "tasks": [...], "models": [...], "regimes": [...],
//     "defaults": {field: value, ...},                     every field of CellConfig below
//     "tasks_cfg":  {"listops": {field: value}, ...},      per task
//     "models_cfg": {"s4d": {field: value}, ...},          per model
//     "cells_cfg":  {"image/transformer": {...}, ...} }    per task/model pair
// Resolution, later wins: CellConfig's built-in defaults < defaults < tasks_cfg < models_cfg < cells_cfg
// < command-line `--set field=value` (repeatable). Every field is type-checked; an unknown field or a value
// of the wrong type is an error naming the file (or flag), the field, the expected and the found type.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace lra {

using json = nlohmann::json;

struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Everything one training run needs. Field names are the JSON keys.
struct CellConfig {
  std::string task = "listops", model = "transformer", regime = "scratch";
  // data
  int seq_len = 0;            // 0 = the task's default
  int train_size = 0, val_size = 0, test_size = 0;
  std::string data_path;      // official files instead of the embedded default
  // model
  int d_model = 64, layers = 2, heads = 4, ffn_mult = 2, d_state = 64;
  double dropout = 0.1;
  std::string norm = "layer";     // "layer" or "batch"
  bool prenorm = true;
  std::string pos = "rotary";     // transformer positions: "rotary", "sinusoidal", "learned", "none"
  int window = 0;                 // > 0: local attention window (Path-X)
  std::string pool = "mean";      // "mean" or "last"
  // fine-tuning (or training from scratch)
  int batch = 32, steps = 300, warmup = 30, eval_every = 100, eval_batches = 16, test_batches = 0;
  double lr = 1e-3, ssm_lr = 1e-3, weight_decay = 0.05, clip = 1.0;
  std::string schedule = "cosine";  // "constant", "linear", "cosine"
  // self-pretraining
  int pretrain_steps = 300;
  double pretrain_lr = 1e-3, mask_prob = 0.15;
  // run
  int seed = 0, checkpoint_every = 100;
  std::string layer_cfg;  // extra registry-layer options as a JSON object, merged over the defaults the app passes

  json to_json() const;
  void apply(const json& j, const std::string& where);  // where: "preset tiny.json tasks_cfg.listops" etc.
  std::string key() const { return task + "/" + model + "/" + regime; }
};

struct Preset {
  std::string name, path, description;
  std::vector<std::string> tasks, models, regimes;
  json raw;
};

std::string presets_dir();                          // apps/lra_benchmark/presets in the source tree
std::vector<std::string> preset_names();
Preset load_preset(const std::string& name_or_path);
// The resolved config of one cell, with `--set` overrides ("field=value"; value parsed as JSON, else a string).
CellConfig resolve_cell(const Preset& p, const std::string& task, const std::string& model, const std::string& regime,
                        const std::vector<std::string>& overrides);

extern const std::vector<std::string> kPaperModels;  // transformer, s4, s4d, dlr: the models the paper compares
std::vector<std::string> model_names();              // kPaperModels' transformer + every registry layer
extern const std::vector<std::string> kRegimes;  // scratch, spt-causal, spt-masked

}  // namespace lra
