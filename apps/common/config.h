// apps/common/config.h - an app's configuration: one flat struct of plain values, presets that set them per cell
// of a sweep, and `--set field=value` overrides, every value type-checked (nanoGPT's configurator, typed).
//
// The app's config struct lists its fields once, in a static template that visits them:
//   struct CellConfig {
//     int steps = 300; double lr = 1e-3; std::string schedule = "cosine"; int seed = 0; ...
//     template <class C, class F> static void fields(C& c, F&& f) { f("steps", c.steps), f("lr", c.lr), ...; }
//   };
// config_to_json / apply_config then read and write it; an unknown field or a value of the wrong type is a
// ConfigError naming where it came from (file and section, or the flag), the field, and the expected and found
// types. Field types: int, double, bool, std::string. Every app's config has an integer field "seed".
//
// A preset (apps/<app>/presets/<name>.json) sets the fields for the cells of a sweep. The app names its axes
// (LRA: task, model, regime); for each axis A the preset lists its values under "<A>s" and may hold per-value
// sections "<A>s_cfg": {value: {field: value}}:
//   { "description": "...", "tasks": [...], "models": [...], "regimes": [...], "seeds": [0, 1, 2],
//     "defaults": {...}, "tasks_cfg": {"listops": {...}}, "models_cfg": {...}, "regimes_cfg": {...},
//     "cells_cfg": {"listops/s4d": {...}, "listops/s4d/spt-masked": {...}} }
// Resolution, later wins: the struct's defaults < defaults < each axis's section in axis order < cells_cfg
// entries whose "/"-joined values match the cell's leading axes (fewer parts first) < `--set` (in order).
//
// resolve_cell<C> is the one typed cell resolver of every app and study: the axis values checked against their axes
// (only here), a --set of an axis's field refused, the resolution above, each axis value stored in its field (Axis::
// field), the app's AxisMeaning hook, C::validate(). typed_experiment.h carries its C to the app's run_cell.
#pragma once
#include <nlohmann/json.hpp>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace dl::harness {

using json = nlohmann::json;

struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---- typed fields ----
// Set one field from a JSON value; `where` and `key` name it in the error ("<where>: field 'lr' must be a number,
// found string ("fast")").
void set_field(int& field, const json& v, const std::string& key, const std::string& where);
void set_field(double& field, const json& v, const std::string& key, const std::string& where);
void set_field(bool& field, const json& v, const std::string& key, const std::string& where);
void set_field(std::string& field, const json& v, const std::string& key, const std::string& where);

template <class C> json config_to_json(const C& c) {
  json j = json::object();
  C::fields(c, [&](const char* k, const auto& v) { j[k] = v; });
  return j;
}

template <class C> std::vector<std::string> config_field_names() {
  std::vector<std::string> names;
  C c;
  C::fields(c, [&](const char* k, auto&) { names.push_back(k); });
  return names;
}

std::string join(const std::vector<std::string>& items, const std::string& sep = ", ");
// ---- comma-separated lists in a config field (or an old flag: `field` is then the flag, "--lengths") ----
// "a,b" -> {"a", "b"}, every item kept as it is ("" is one empty item).
std::vector<std::string> split_list(const std::string& text);
// "3,7,15" -> {3, 7, 15}; a ConfigError names the field and the first item that is not a positive integer.
std::vector<int64_t> parse_int_list(const std::string& text, const std::string& field);
// "0.001,0.003" -> {0.001, 0.003}: each item finite and > 0 (>= 0 with allow_zero); a ConfigError names the field and
// the item ("field 'lrs': 'x' in \"0.1,x\" is not a positive number").
std::vector<double> parse_real_list(const std::string& text, const std::string& field, bool allow_zero = false);
// "fixed,learned" -> {"fixed", "learned"}, each one of `known`; a ConfigError names the field, the item and `known`.
std::vector<std::string> parse_name_list(const std::string& text, const std::string& field,
                                         const std::vector<std::string>& known);
// "0.002" -> 0.002 for an axis value that is a positive real (a learning rate); a ConfigError names the field and
// the text, e.g. "lr '0.x': expected a positive number like 0.002".
double parse_positive_real(const std::string& text, const std::string& field);

template <class C> void apply_config(C& c, const json& j, const std::string& where) {
  if (!j.is_object()) throw ConfigError(where + ": expected an object of fields, found " + j.type_name());
  for (auto& item : j.items()) {
    const std::string& key = item.key();  // (named, not a structured binding: clang 14 cannot capture those)
    const json& val = item.value();
    bool found = false;
    C::fields(c, [&](const char* k, auto& field) {
      if (key != k) return;
      found = true;
      set_field(field, val, key, where);
    });
    if (!found) throw ConfigError(where + ": unknown field '" + key + "' (known fields: " + join(config_field_names<C>()) + ")");
  }
}

// A config struct read from JSON, every field checked as apply_config does.
template <class C> C config_from_json(const json& j, const std::string& where) {
  C c;
  apply_config(c, j, where);
  return c;
}

// A number as a person wrote it, for messages: 0, -1, 0.0003, 1e-09 (std::to_string gives "0.000000" for all of 0,
// 1e-9 and 4e-7). %.10g.
std::string number_text(double v);
// The check every app's validate() makes of its sizes and rates: "<key>: field 'lr' must be > 0, found 0".
void require_positive(const std::string& key, const char* field, double value);
// The same for a count or rate where 0 means none: "<key>: field 'clip' must be >= 0, found -1".
void require_non_negative(const std::string& key, const char* field, double value);
// A warmup that ends before training does: "<key>: field 'warmup' 30 must be in [0, steps 10)".
void require_warmup(const std::string& key, int64_t warmup, int64_t steps);

// JSON from outside bytes (a model file's dl.config metadata, a cache's info.json): the parsed value, or a ConfigError
// "<where>: not valid JSON (<why>)" - nlohmann's own parse_error or out_of_range (a number beyond a double) names no file.
json parse_json(const std::string& text, const std::string& where);

// A finished cell's config as its model file carries it: the "dl.config" entry of the safetensors metadata that every
// app's cell writes (lra_benchmark, fpt, pretrained_convs), parsed. A ConfigError naming `path` when the entry is
// missing ("not written by <app>") or not JSON, or when the file names another app as its writer ("dl.app": "a cell
// of lra_benchmark, not of fpt"; `app` may list several, as explain's "lra_benchmark, fpt or pretrained_convs"); the
// fields are checked by the app's CellConfig::from_json.
json config_in_metadata(const std::map<std::string, std::string>& metadata, const std::string& path, const std::string& app);

// An app's CellConfig read from JSON and then checked (C::from_json, C::validate): a ConfigError from validate() names
// the cell only, so it is prefixed with `where` (the file the config came from).
template <class C> C checked_config_from_json(const json& j, const std::string& where) {
  C c = C::from_json(j, where);
  try {
    c.validate();
  } catch (const ConfigError& e) {
    throw ConfigError(where + ": " + e.what());
  }
  return c;
}

// config_in_metadata and checked_config_from_json in one call: a finished cell's checked config from its model
// file's metadata (eval --cell, fpt attention), every error naming `path`.
template <class C>
C checked_config_in_metadata(const std::map<std::string, std::string>& metadata, const std::string& path,
                             const std::string& app) {
  return checked_config_from_json<C>(config_in_metadata(metadata, path, app), path + " dl.config");
}

// "field=value": the value is parsed as JSON, and a bare word that is not JSON is a string (--set norm=batch).
std::pair<std::string, json> parse_override(const std::string& kv);

template <class C> void apply_overrides(C& c, const std::vector<std::string>& overrides) {
  for (auto& o : overrides) {
    auto [k, v] = parse_override(o);
    apply_config(c, json{{k, v}}, "--set " + o);
  }
}

// ---- presets ----
struct Axis {
  std::string name;                // singular: "task"; the preset's list is "<name>s"
  std::vector<std::string> known;  // the values an app accepts (checked when the preset loads); empty: any
  // the config field a cell's value goes into; empty: the field named `name` (written `= ""` so that a two-member
  // Axis{name, known} is no -Wmissing-field-initializers warning)
  std::string field = "";

  const std::string& config_field() const { return field.empty() ? name : field; }
};

struct Preset {
  std::string name, path, description;
  std::vector<Axis> axes;
  std::vector<std::vector<std::string>> values;  // per axis, the preset's list
  std::vector<int> seeds;                        // the preset's "seeds" (may be empty)
  json raw;

  // Every section that applies to a cell with these axis values, in resolution order, each with where it is
  // ("<path> tasks_cfg.listops"), for apply_config.
  std::vector<std::pair<std::string, json>> sections_for(const std::vector<std::string>& cell_values) const;
};

// Presets are JSON files in `dir`; `name_or_path` is a name there or a path to a file (anything with a '/' or
// ending in .json). Unknown top-level keys, axis values outside Axis::known, and sections that are not objects
// are ConfigErrors naming the file.
Preset load_preset(const std::string& name_or_path, const std::string& dir, const std::vector<Axis>& axes);
// The same from a preset's text; `path` names it in errors (load_preset reads the file and calls this).
Preset parse_preset(const std::string& text, const std::string& path, const std::vector<Axis>& axes);
std::vector<std::string> preset_names(const std::string& dir);

// The config of one cell from the preset's sections, then the overrides (resolve_cell's middle step).
template <class C>
C resolve(const Preset& p, const std::vector<std::string>& cell_values, const std::vector<std::string>& overrides) {
  C c;
  for (auto& [where, section] : p.sections_for(cell_values)) apply_config(c, section, where);
  apply_overrides(c, overrides);
  return c;
}

// ---- the typed cell resolver: the one place a cell's config is made, for every app and study ----
// Every combination of the lists, one list per axis in axis order: {{a, b}, {x}} -> {a, x}, {b, x}.
std::vector<std::vector<std::string>> combinations(const std::vector<std::vector<std::string>>& lists);
// One value per axis, each one of the axis's known values where it names them: "unknown arm 'frozen' (known: fpt, ...)".
void check_axis_values(const std::vector<Axis>& axes, const std::vector<std::string>& values);
// A --set of a field that an axis sets is refused, naming the axes' flags:
// "--set arm=ce: task and arm are axes: --tasks / --arms (run), --task / --arm (cell)".
void refuse_axis_sets(const std::vector<Axis>& axes, const std::vector<std::string>& sets);

// An axis's value into its config field (Axis::field): a string as it is, a real as a positive number (an lr axis:
// "lr 'x': expected a positive number like 0.002"); a field of another type, or none, is the app's mistake.
template <class C> void set_axis_field(C& c, const Axis& axis, const std::string& value) {
  bool found = false;
  C::fields(c, [&](const char* k, auto& field) {
    using T = std::decay_t<decltype(field)>;
    if (axis.config_field() != k) return;
    found = true;
    if constexpr (std::is_same_v<T, std::string>) field = value;
    else if constexpr (std::is_same_v<T, double>) field = parse_positive_real(value, axis.name);
    else throw std::logic_error("axis '" + axis.name + "': its field must be a string or a real");
  });
  if (!found) throw std::logic_error("axis '" + axis.name + "': the config has no field '" + axis.config_field() + "'");
}

// What an axis's value means beyond its field (fpt: arm "fpt-L2" is arm "fpt" with 2 layers); may be empty.
template <class C> using AxisMeaning = std::function<void(C&)>;

// One cell's config as the app's struct C: its axis values checked (here and only here), a --set of an axis field
// refused, the struct's defaults < the preset's sections < the --set overrides, each axis's value stored in its field
// (whatever a section said), `meaning` applied, then C::validate(). Every error names where the bad value came from.
template <class C>
C resolve_cell(const Preset& p, const std::vector<std::string>& values, const std::vector<std::string>& sets,
               const AxisMeaning<C>& meaning = {}) {
  check_axis_values(p.axes, values);
  refuse_axis_sets(p.axes, sets);
  C c = resolve<C>(p, values, sets);
  for (size_t i = 0; i < values.size(); i++) set_axis_field(c, p.axes[i], values[i]);
  if (meaning) meaning(c);
  c.validate();
  return c;
}

// load_preset, then every cell the preset names resolved (so validated): a typo fails when the preset loads.
template <class C>
Preset load_checked_preset(const std::string& name_or_path, const std::string& dir, const std::vector<Axis>& axes,
                           const AxisMeaning<C>& meaning = {}) {
  Preset p = load_preset(name_or_path, dir, axes);
  for (const std::vector<std::string>& values : combinations(p.values)) resolve_cell<C>(p, values, {}, meaning);
  return p;
}

}  // namespace dl::harness
