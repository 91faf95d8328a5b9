// apps/lra_benchmark/config.cpp - preset loading and type-checked overrides (see config.h).
#include "config.h"

#include "nn/registry.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace lra {

const std::vector<std::string> kPaperModels = {"transformer", "s4", "s4d", "dlr"};

// Every registry layer is a model too ("transformer" is the registry's "attention" plus a feed-forward block).
std::vector<std::string> model_names() {
  std::vector<std::string> names = {"transformer"};
  for (auto& e : dl::nn::layer_registry())
    if (e.name != "attention") names.push_back(e.name);
  return names;
}
const std::vector<std::string> kRegimes = {"scratch", "spt-causal", "spt-masked"};

// One list of every field, visited by to_json and apply, so the two can never disagree.
template <class C, class F> static void for_each_field(C& c, F&& f) {
  f("task", c.task), f("model", c.model), f("regime", c.regime);
  f("seq_len", c.seq_len), f("train_size", c.train_size), f("val_size", c.val_size), f("test_size", c.test_size);
  f("data_path", c.data_path);
  f("d_model", c.d_model), f("layers", c.layers), f("heads", c.heads), f("ffn_mult", c.ffn_mult), f("d_state", c.d_state);
  f("dropout", c.dropout), f("norm", c.norm), f("prenorm", c.prenorm), f("pos", c.pos), f("window", c.window), f("pool", c.pool);
  f("batch", c.batch), f("steps", c.steps), f("warmup", c.warmup), f("eval_every", c.eval_every);
  f("eval_batches", c.eval_batches), f("test_batches", c.test_batches);
  f("lr", c.lr), f("ssm_lr", c.ssm_lr), f("weight_decay", c.weight_decay), f("clip", c.clip), f("schedule", c.schedule);
  f("pretrain_steps", c.pretrain_steps), f("pretrain_lr", c.pretrain_lr), f("mask_prob", c.mask_prob);
  f("seed", c.seed), f("checkpoint_every", c.checkpoint_every), f("layer_cfg", c.layer_cfg);
}

json CellConfig::to_json() const {
  json j;
  for_each_field(*this, [&](const char* k, const auto& v) { j[k] = v; });
  return j;
}

void CellConfig::apply(const json& j, const std::string& where) {
  if (!j.is_object()) throw ConfigError(where + ": expected an object of fields, found " + j.type_name());
  for (auto& [key, val] : j.items()) {
    bool found = false;
    for_each_field(*this, [&](const char* k, auto& field) {
      if (key != k) return;
      found = true;
      using T = std::decay_t<decltype(field)>;
      auto bad = [&](const char* want) {
        throw ConfigError(where + ": field '" + key + "' must be " + want + ", found " + val.type_name() + " (" + val.dump() + ")");
      };
      if constexpr (std::is_same_v<T, int>) {
        if (!val.is_number_integer()) bad("an integer");
        field = val.get<int>();
      } else if constexpr (std::is_same_v<T, double>) {
        if (!val.is_number()) bad("a number");
        field = val.get<double>();
      } else if constexpr (std::is_same_v<T, bool>) {
        if (!val.is_boolean()) bad("true or false");
        field = val.get<bool>();
      } else {
        if (!val.is_string()) bad("a string");
        field = val.get<std::string>();
      }
    });
    if (!found) {
      std::string known;
      for_each_field(*this, [&](const char* k, auto&) { known += std::string(known.empty() ? "" : ", ") + k; });
      throw ConfigError(where + ": unknown field '" + key + "' (known fields: " + known + ")");
    }
  }
}

std::string presets_dir() { return std::string(DL_SOURCE_DIR) + "/apps/lra_benchmark/presets"; }

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (auto& e : std::filesystem::directory_iterator(presets_dir(), ec))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

static std::vector<std::string> string_list(const json& j, const std::string& key, const std::string& where,
                                            const std::vector<std::string>* allowed) {
  std::vector<std::string> out;
  if (!j.contains(key)) throw ConfigError(where + ": missing list '" + key + "'");
  if (!j[key].is_array()) throw ConfigError(where + ": '" + key + "' must be a list of strings, found " + j[key].type_name());
  for (auto& v : j[key]) {
    if (!v.is_string()) throw ConfigError(where + ": '" + key + "' must be a list of strings, found an element " + v.dump());
    std::string s = v.get<std::string>();
    if (allowed && std::find(allowed->begin(), allowed->end(), s) == allowed->end()) {
      std::string known;
      for (auto& a : *allowed) known += (known.empty() ? "" : ", ") + a;
      throw ConfigError(where + ": unknown " + key.substr(0, key.size() - 1) + " '" + s + "' (known: " + known + ")");
    }
    out.push_back(s);
  }
  return out;
}

Preset load_preset(const std::string& name_or_path) {
  Preset p;
  p.path = name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".json") ? name_or_path
                                                                                          : presets_dir() + "/" + name_or_path + ".json";
  std::ifstream in(p.path);
  if (!in) {
    std::string known;
    for (auto& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
    throw ConfigError("preset '" + name_or_path + "' not found (looked for " + p.path + "; known presets: " + known + ")");
  }
  try {
    p.raw = json::parse(in);
  } catch (const json::parse_error& e) {
    throw ConfigError(p.path + ": not valid JSON: " + e.what());
  }
  p.name = std::filesystem::path(p.path).stem().string();
  p.description = p.raw.value("description", "");
  p.tasks = string_list(p.raw, "tasks", p.path, nullptr);
  const std::vector<std::string> models = model_names();
  p.models = string_list(p.raw, "models", p.path, &models);
  p.regimes = string_list(p.raw, "regimes", p.path, &kRegimes);
  for (auto& k : {"defaults", "tasks_cfg", "models_cfg", "cells_cfg"})
    if (p.raw.contains(k) && !p.raw[k].is_object()) throw ConfigError(p.path + ": '" + k + "' must be an object");
  for (auto& [k, v] : p.raw.items()) {
    static const std::vector<std::string> top = {"description", "tasks", "models", "regimes", "defaults", "tasks_cfg", "models_cfg", "cells_cfg"};
    if (std::find(top.begin(), top.end(), k) == top.end())
      throw ConfigError(p.path + ": unknown top-level key '" + k + "' (known: description, tasks, models, regimes, defaults, tasks_cfg, models_cfg, cells_cfg)");
  }
  // validate every section now, so a typo fails before hours of training
  for (auto& t : p.tasks)
    for (auto& m : p.models)
      for (auto& r : p.regimes) resolve_cell(p, t, m, r, {});
  return p;
}

CellConfig resolve_cell(const Preset& p, const std::string& task, const std::string& model, const std::string& regime,
                        const std::vector<std::string>& overrides) {
  CellConfig c;
  c.task = task;
  c.model = model;
  c.regime = regime;
  const json& r = p.raw;
  if (r.contains("defaults")) c.apply(r["defaults"], p.path + " defaults");
  if (r.contains("tasks_cfg") && r["tasks_cfg"].contains(task)) c.apply(r["tasks_cfg"][task], p.path + " tasks_cfg." + task);
  if (r.contains("models_cfg") && r["models_cfg"].contains(model)) c.apply(r["models_cfg"][model], p.path + " models_cfg." + model);
  std::string tm = task + "/" + model;
  if (r.contains("cells_cfg") && r["cells_cfg"].contains(tm)) c.apply(r["cells_cfg"][tm], p.path + " cells_cfg." + tm);
  for (auto& o : overrides) {
    auto eq = o.find('=');
    if (eq == std::string::npos || eq == 0) throw ConfigError("--set '" + o + "': expected field=value");
    std::string k = o.substr(0, eq), v = o.substr(eq + 1);
    json val;
    try {
      val = json::parse(v);
    } catch (...) {
      val = v;  // bare words are strings: --set norm=batch
    }
    c.apply(json{{k, val}}, "--set " + o);
  }
  c.task = task;
  c.model = model;
  c.regime = regime;
  const std::vector<std::string> models = model_names();
  if (std::find(models.begin(), models.end(), model) == models.end()) {
    std::string known;
    for (auto& m : models) known += (known.empty() ? "" : ", ") + m;
    throw ConfigError("unknown model '" + model + "' (known: " + known + ")");
  }
  if (std::find(kRegimes.begin(), kRegimes.end(), regime) == kRegimes.end()) throw ConfigError("unknown regime '" + regime + "'");
  auto positive = [&](const char* name, double v) {
    if (v <= 0) throw ConfigError(c.key() + ": field '" + std::string(name) + "' must be > 0, found " + std::to_string(v));
  };
  positive("d_model", c.d_model), positive("layers", c.layers), positive("batch", c.batch), positive("steps", c.steps);
  positive("lr", c.lr);
  if (c.mask_prob <= 0 || c.mask_prob >= 1) throw ConfigError(c.key() + ": mask_prob must be in (0, 1)");
  if (c.schedule != "constant" && c.schedule != "linear" && c.schedule != "cosine")
    throw ConfigError(c.key() + ": schedule must be \"constant\", \"linear\" or \"cosine\", found \"" + c.schedule + "\"");
  if (c.pool != "mean" && c.pool != "last") throw ConfigError(c.key() + ": pool must be \"mean\" or \"last\", found \"" + c.pool + "\"");
  if (c.pos != "rotary" && c.pos != "sinusoidal" && c.pos != "learned" && c.pos != "none")
    throw ConfigError(c.key() + ": pos must be rotary, sinusoidal, learned or none, found \"" + c.pos + "\"");
  if (!c.layer_cfg.empty()) {
    try {
      if (!json::parse(c.layer_cfg).is_object()) throw ConfigError("");
    } catch (...) {
      throw ConfigError(c.key() + ": layer_cfg must be a JSON object in a string, e.g. \"{\\\"kernel_size\\\": 7}\", found " + c.layer_cfg);
    }
  }
  if (c.norm != "layer" && c.norm != "batch") throw ConfigError(c.key() + ": norm must be \"layer\" or \"batch\", found \"" + c.norm + "\"");
  if (c.model == "transformer" && c.d_model % c.heads != 0)
    throw ConfigError(c.key() + ": d_model " + std::to_string(c.d_model) + " is not divisible by heads " + std::to_string(c.heads));
  return c;
}

}  // namespace lra
