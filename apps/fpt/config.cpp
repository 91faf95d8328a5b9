// apps/fpt/config.cpp - the cell's fields, their checks and the axes (see config.h).
#include "config.h"

namespace fpt {

namespace harness = dl::harness;

const std::vector<std::string> kTasks = {"bit_memory", "bit_xor", "listops", "image_patches", "digits", "homology"};
const std::vector<std::string> kArms = {"fpt",      "full",   "full_lang",  "lstm",   "random",  "bitmem",
                                        "out_only", "out_in", "out_in_pos", "fpt_ff", "fpt_attn"};

const std::vector<int> kDepths = {1, 2, 3, 4, 6, 8, 12};
static const std::vector<std::string> kDepthBases = {"fpt", "random"};

std::pair<std::string, int> split_depth(const std::string& arm) {
  for (auto& base : kDepthBases)
    for (int k : kDepths)
      if (arm == base + "-L" + std::to_string(k)) return {base, k};
  return {arm, 0};
}

std::string presets_dir() { return std::string(DL_SOURCE_DIR) + "/apps/fpt/presets"; }
std::vector<harness::Axis> axes() {
  std::vector<std::string> arms = kArms;
  for (auto& base : kDepthBases)
    for (int k : kDepths) arms.push_back(base + "-L" + std::to_string(k));
  return {{"task", kTasks}, {"arm", arms}};
}

CellConfig CellConfig::from_json(const json& j, const std::string& where) {
  return harness::config_from_json<CellConfig>(j, where);
}

void CellConfig::validate() const {
  auto positive = [&](const char* name, double v) { harness::require_positive(key(), name, v); };
  positive("layers", layers), positive("d_model", d_model), positive("heads", heads), positive("batch", batch);
  positive("accum", accum), positive("steps", steps), positive("lr", lr), positive("lm_context", lm_context);
  positive("lm_batch", lm_batch), positive("lm_lr", lm_lr), positive("lstm_layers", lstm_layers);
  if (d_model % heads)
    throw ConfigError(key() + ": d_model " + std::to_string(d_model) + " is not divisible by heads " + std::to_string(heads));
  if (dropout < 0 || dropout >= 1)
    throw ConfigError(key() + ": field 'dropout' must be in [0, 1), found " + dl::harness::number_text(dropout));
  if (lm_steps < 0 || bitmem_steps < 0) throw ConfigError(key() + ": lm_steps and bitmem_steps must be >= 0");
  if (bits < 0 || patterns < 0 || patch < 0)
    throw ConfigError(key() + ": bits, patterns and patch must be >= 0 (0: the default)");
}

void depth_of_arm(CellConfig& c) {
  auto [base, depth] = split_depth(c.arm);
  c.arm = base;
  if (depth > 0) c.layers = depth;
}

CellConfig resolve_cell(const harness::Preset& p, const std::string& task, const std::string& arm,
                        const std::vector<std::string>& overrides) {
  return harness::resolve_cell<CellConfig>(p, {task, arm}, overrides, depth_of_arm);
}

harness::Preset load_preset(const std::string& name_or_path) {
  return harness::load_checked_preset<CellConfig>(name_or_path, presets_dir(), axes(), depth_of_arm);
}

}  // namespace fpt
