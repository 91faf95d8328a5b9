// apps/lra_benchmark/config.cpp - the cell's fields, their checks and the app's axes (see config.h).
#include "config.h"

#include <algorithm>

#include "nn/models/model_registry.h"
#include "tasks/registry.h"

namespace lra {

namespace harness = dl::harness;

const std::vector<std::string> kPaperModels = {"transformer", "s4", "s4d", "dlr"};
const std::vector<std::string> kRegimes = {"scratch", "spt-causal", "spt-masked", "text-masked"};

std::string presets_dir() { return std::string(DL_SOURCE_DIR) + "/apps/lra_benchmark/presets"; }

std::vector<harness::Axis> axes() {
  return {{"task", dl::tasks::task_names()}, {"model", dl::nn::model_names()}, {"regime", kRegimes}};
}

CellConfig CellConfig::from_json(const json& j, const std::string& where) {
  return harness::config_from_json<CellConfig>(j, where);
}

void CellConfig::validate() const {
  auto positive = [&](const char* name, double v) { harness::require_positive(key(), name, v); };
  auto one_of = [&](const char* name, const std::string& v, const std::vector<std::string>& allowed) {
    if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
      throw ConfigError(key() + ": field '" + std::string(name) + "' must be one of " + harness::join(allowed) + ", found \"" +
                        v + "\"");
  };
  auto non_negative = [&](const char* name, double v) { harness::require_non_negative(key(), name, v); };
  one_of("task", task, dl::tasks::task_names()), one_of("regime", regime, kRegimes);
  one_of("model", model, dl::nn::model_names());  // before find_model below, whose error is no ConfigError
  positive("d_model", d_model), positive("layers", layers), positive("heads", heads), positive("ffn_mult", ffn_mult);
  positive("d_state", d_state), positive("batch", batch), positive("steps", steps), positive("eval_batches", eval_batches);
  positive("lr", lr), positive("ssm_lr", ssm_lr), positive("pretrain_lr", pretrain_lr);
  // 0 means the default (sizes), none (window, test_batches, pretrain_steps, clip) or only after the last step (cadences)
  non_negative("seq_len", seq_len), non_negative("train_size", train_size), non_negative("val_size", val_size);
  non_negative("test_size", test_size), non_negative("window", window), non_negative("warmup", warmup);
  non_negative("eval_every", eval_every), non_negative("test_batches", test_batches);
  non_negative("pretrain_steps", pretrain_steps), non_negative("checkpoint_every", checkpoint_every);
  non_negative("weight_decay", weight_decay), non_negative("clip", clip);
  if (dropout < 0 || dropout >= 1)
    throw ConfigError(key() + ": field 'dropout' must be in [0, 1), found " + dl::harness::number_text(dropout));
  if (train_limit < 0) throw ConfigError(key() + ": field 'train_limit' must be >= 0 (0: every training example), found " +
                                         std::to_string(train_limit));
  if (mask_prob <= 0 || mask_prob >= 1)
    throw ConfigError(key() + ": field 'mask_prob' must be in (0, 1), found " + dl::harness::number_text(mask_prob));
  one_of("schedule", schedule, {"constant", "linear", "cosine"});
  one_of("pool", pool, {"mean", "last"});
  one_of("loss", loss, {"", "ce", "mse", "l1"});
  one_of("pos", pos, {"rotary", "sinusoidal", "learned", "none"});
  one_of("norm", norm, {"layer", "batch"});
  if (!layer_cfg.empty()) {
    bool object = false;
    try {
      object = json::parse(layer_cfg).is_object();
    } catch (const json::exception&) {  // not JSON, or a number out of range
    }
    if (!object)
      throw ConfigError(key() + ": layer_cfg must be a JSON object in a string, e.g. \"{\\\"kernel_size\\\": 7}\", found " +
                        layer_cfg);
  }
  if (dl::nn::find_layer(dl::nn::find_model(model).layer).takes("heads") && d_model % heads != 0)
    throw ConfigError(key() + ": d_model " + std::to_string(d_model) + " is not divisible by heads " + std::to_string(heads));
}

CellConfig resolve_cell(const harness::Preset& p, const std::string& task, const std::string& model, const std::string& regime,
                        const std::vector<std::string>& overrides) {
  return harness::resolve_cell<CellConfig>(p, {task, model, regime}, overrides);
}

harness::Preset load_preset(const std::string& name_or_path) {
  return harness::load_checked_preset<CellConfig>(name_or_path, presets_dir(), axes());
}

}  // namespace lra
