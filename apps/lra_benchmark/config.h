// apps/lra_benchmark/config.h - the settings of one cell (task, model, regime, seed) and the app's axes.
//
// Presets (apps/lra_benchmark/presets/<name>.json) follow the harness's format (apps/common/config.h) with the
// axes task, model and regime:
//   { "description": "...", "tasks": [...], "models": [...], "regimes": [...], "seeds": [0, 1, 2],
//     "defaults": {field: value, ...},                     every field of CellConfig below
//     "tasks_cfg":  {"listops": {field: value}, ...},      per task
//     "models_cfg": {"s4d": {field: value}, ...},          per model
//     "cells_cfg":  {"image/transformer": {...}, ...} }    per task/model (or task/model/regime)
// Resolution, later wins: CellConfig's built-in defaults < defaults < tasks_cfg < models_cfg < regimes_cfg
// < cells_cfg < command-line `--set field=value` (repeatable). Every field is type-checked; an unknown field or a
// value of the wrong type is an error naming the file (or flag), the field, the expected and the found type;
// validate() then checks the values (ranges, names) and names the cell.
#pragma once
#include <string>
#include <vector>

#include "apps/common/config.h"

namespace lra {

using dl::harness::ConfigError;
using json = nlohmann::json;

// Everything one training run needs. Field names are the JSON keys.
struct CellConfig {
  std::string task = "listops", model = "transformer", regime = "scratch";
  // data
  int seq_len = 0;  // 0 = the task's default
  int train_size = 0, val_size = 0, test_size = 0;
  int train_limit = 0;    // > 0: train on a random subset of this many of the training split's examples (the
                          // validation and test splits unchanged; `data-scale`, data_scale.h); 0: all of them
  std::string data_path;  // official files instead of the embedded default
  // model
  int d_model = 64, layers = 2, heads = 4, ffn_mult = 2, d_state = 64;
  double dropout = 0.1;
  std::string norm = "layer";  // "layer" or "batch"
  bool prenorm = true;
  std::string pos = "rotary";  // transformer positions: "rotary", "sinusoidal", "learned", "none"
  int window = 0;              // > 0: local attention window (Path-X)
  std::string pool = "mean";   // "mean" or "last"
  std::string loss;            // fine-tuning loss: "" = the task's own (cross-entropy for classes, "mse" for a
                               // regression task), "ce", or for a regression task "mse" | "l1" (on the standardised target)
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

  template <class C, class F> static void fields(C& c, F&& f) {
    f("task", c.task), f("model", c.model), f("regime", c.regime);
    f("seq_len", c.seq_len), f("train_size", c.train_size), f("val_size", c.val_size), f("test_size", c.test_size);
    f("train_limit", c.train_limit);
    f("data_path", c.data_path);
    f("d_model", c.d_model), f("layers", c.layers), f("heads", c.heads), f("ffn_mult", c.ffn_mult), f("d_state", c.d_state);
    f("dropout", c.dropout), f("norm", c.norm), f("prenorm", c.prenorm), f("pos", c.pos), f("window", c.window),
        f("pool", c.pool), f("loss", c.loss);
    f("batch", c.batch), f("steps", c.steps), f("warmup", c.warmup), f("eval_every", c.eval_every);
    f("eval_batches", c.eval_batches), f("test_batches", c.test_batches);
    f("lr", c.lr), f("ssm_lr", c.ssm_lr), f("weight_decay", c.weight_decay), f("clip", c.clip), f("schedule", c.schedule);
    f("pretrain_steps", c.pretrain_steps), f("pretrain_lr", c.pretrain_lr), f("mask_prob", c.mask_prob);
    f("seed", c.seed), f("checkpoint_every", c.checkpoint_every), f("layer_cfg", c.layer_cfg);
  }
  json to_json() const { return dl::harness::config_to_json(*this); }
  static CellConfig from_json(const json& j, const std::string& where);
  void validate() const;  // ranges and names; a ConfigError naming the cell and the field
  std::string key() const { return task + "/" + model + "/" + regime; }
};

extern const std::vector<std::string> kPaperModels;  // transformer, s4, s4d, dlr: the models the paper compares

// The model axis: nn/models/model_registry.h (transformer, every registry layer, the variants such as s4d-random).
extern const std::vector<std::string> kRegimes;  // scratch, spt-causal, spt-masked, text-masked (data.h)
std::string presets_dir();                       // apps/lra_benchmark/presets in the source tree
std::vector<dl::harness::Axis> axes();           // task, model, regime with their known values

// The harness's typed resolver (apps/common/config.h) with these axes: a preset with every cell it names resolved, and
// one cell's config with `--set` overrides ("field=value"; value parsed as JSON, else a string).
dl::harness::Preset load_preset(const std::string& name_or_path);
CellConfig resolve_cell(const dl::harness::Preset& p, const std::string& task, const std::string& model,
                        const std::string& regime, const std::vector<std::string>& overrides);

}  // namespace lra
