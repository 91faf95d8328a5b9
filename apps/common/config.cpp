// apps/common/config.cpp - typed fields, overrides and presets (see config.h).
#include "apps/common/config.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace dl::harness {

namespace fs = std::filesystem;

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string s;
  for (auto& i : items) s += (s.empty() ? "" : sep) + i;
  return s;
}

// "a,b,,c" -> {"a", "b", "", "c"}; "" -> {""} (so an empty list is one empty item, which no parser accepts).
std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> v;
  size_t a = 0;
  for (size_t b; (b = text.find(',', a)) != std::string::npos; a = b + 1) v.push_back(text.substr(a, b - a));
  v.push_back(text.substr(a));
  return v;
}

// The whole of `item` as a finite real, or false.
static bool read_real(const std::string& item, double& x) {
  size_t used = 0;
  try {
    x = std::stod(item, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used > 0 && used == item.size() && std::isfinite(x);
}

std::vector<int64_t> parse_int_list(const std::string& text, const std::string& field) {
  std::vector<int64_t> v;
  for (const std::string& item : split_list(text)) {
    size_t used = 0;
    long long x = 0;
    try {
      x = std::stoll(item, &used);
    } catch (...) {
      used = 0;
    }
    if (item.empty() || used != item.size() || x < 1)
      throw ConfigError("field '" + field + "': '" + item + "' in \"" + text + "\" is not a positive integer");
    v.push_back(x);
  }
  return v;
}

std::vector<double> parse_real_list(const std::string& text, const std::string& field, bool allow_zero) {
  std::vector<double> v;
  for (const std::string& item : split_list(text)) {
    double x = NAN;
    if (!read_real(item, x) || x < 0 || (x == 0 && !allow_zero))
      throw ConfigError("field '" + field + "': '" + item + "' in \"" + text + "\" is not a " +
                        (allow_zero ? "non-negative" : "positive") + " number");
    v.push_back(x);
  }
  return v;
}

std::vector<std::string> parse_name_list(const std::string& text, const std::string& field,
                                         const std::vector<std::string>& known) {
  const std::vector<std::string> v = split_list(text);
  for (const std::string& item : v)
    if (std::find(known.begin(), known.end(), item) == known.end())
      throw ConfigError("field '" + field + "': '" + item + "' in \"" + text + "\" is not one of " + join(known));
  return v;
}

double parse_positive_real(const std::string& text, const std::string& field) {
  double x = NAN;
  if (!read_real(text, x) || x <= 0) throw ConfigError(field + " '" + text + "': expected a positive number like 0.002");
  return x;
}

[[noreturn]] static void bad_type(const json& v, const std::string& key, const std::string& where, const char* want) {
  // (dump with replacement: a value's bytes need not be valid UTF-8 when they came from the command line)
  throw ConfigError(where + ": field '" + key + "' must be " + want + ", found " + v.type_name() + " (" +
                    v.dump(-1, ' ', false, json::error_handler_t::replace) + ")");
}

void set_field(int& field, const json& v, const std::string& key, const std::string& where) {
  if (!v.is_number_integer()) bad_type(v, key, where, "an integer");
  field = v.get<int>();
}
void set_field(double& field, const json& v, const std::string& key, const std::string& where) {
  if (!v.is_number()) bad_type(v, key, where, "a number");
  field = v.get<double>();
}
void set_field(bool& field, const json& v, const std::string& key, const std::string& where) {
  if (!v.is_boolean()) bad_type(v, key, where, "true or false");
  field = v.get<bool>();
}
std::string number_text(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.10g", v);
  return b;
}

void require_positive(const std::string& key, const char* field, double value) {
  if (value <= 0) throw ConfigError(key + ": field '" + std::string(field) + "' must be > 0, found " + number_text(value));
}

void require_non_negative(const std::string& key, const char* field, double value) {
  if (value < 0) throw ConfigError(key + ": field '" + std::string(field) + "' must be >= 0, found " + number_text(value));
}

void require_warmup(const std::string& key, int64_t warmup, int64_t steps) {
  if (warmup < 0 || warmup >= steps)
    throw ConfigError(key + ": field 'warmup' " + std::to_string(warmup) + " must be in [0, steps " + std::to_string(steps) +
                      ")");
}

void set_field(std::string& field, const json& v, const std::string& key, const std::string& where) {
  if (v.is_object()) {  // a field that holds JSON text (layer_cfg): `--set layer_cfg={"d_state":8}` as written
    field = v.dump();
    return;
  }
  if (!v.is_string()) bad_type(v, key, where, "a string");
  field = v.get<std::string>();
}

// The index of the first byte of `s` that does not belong to a well-formed UTF-8 sequence, or npos.
static size_t invalid_utf8_at(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = (unsigned char)s[i];
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size() || (n == 2 && c < 0xC2)) return i;
    for (size_t k = 1; k < n; k++)
      if (((unsigned char)s[i + k] >> 6) != 0x2) return i;
    i += n;
  }
  return std::string::npos;
}

json parse_json(const std::string& text, const std::string& where) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw ConfigError(where + ": not valid JSON (" + e.what() + ")");
  }
}

json config_in_metadata(const std::map<std::string, std::string>& metadata, const std::string& path, const std::string& app) {
  auto it = metadata.find("dl.config");
  if (it == metadata.end()) throw ConfigError(path + ": no dl.config metadata (not a finished cell written by " + app + ")");
  // a cell of another app: say whose it is (its config would fail on the first field this app lacks)
  if (auto by = metadata.find("dl.app"); by != metadata.end() && app.find(by->second) == std::string::npos)
    throw ConfigError(path + ": a cell of " + by->second + ", not of " + app + " (open it with " + by->second + ")");
  return parse_json(it->second, path + ": its dl.config metadata");
}

std::pair<std::string, json> parse_override(const std::string& kv) {
  // the config travels into JSON files (results, checkpoints), which hold UTF-8 only
  if (size_t bad = invalid_utf8_at(kv); bad != std::string::npos)
    throw ConfigError("--set: the text is not valid UTF-8 (byte " + std::to_string(bad) + " is 0x" +
                      "0123456789ABCDEF"[(unsigned char)kv[bad] >> 4] + "0123456789ABCDEF"[(unsigned char)kv[bad] & 15] + ")");
  auto eq = kv.find('=');
  if (eq == std::string::npos || eq == 0) throw ConfigError("--set '" + kv + "': expected field=value");
  std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
  json val;
  try {
    val = json::parse(v);
  } catch (const json::parse_error&) {
    val = v;                            // bare words are strings: --set norm=batch
  } catch (const json::exception& e) {  // e.g. a number too large for a double: lr=1e999
    throw ConfigError("--set '" + kv + "': " + e.what());
  }
  return {k, val};
}

std::vector<std::string> preset_names(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

static std::vector<std::string> string_list(const json& j, const std::string& key, const std::string& where, const Axis& axis) {
  if (!j.contains(key)) throw ConfigError(where + ": missing list '" + key + "'");
  if (!j[key].is_array()) throw ConfigError(where + ": '" + key + "' must be a list of strings, found " + j[key].type_name());
  std::vector<std::string> out;
  for (auto& v : j[key]) {
    if (!v.is_string()) throw ConfigError(where + ": '" + key + "' must be a list of strings, found an element " + v.dump());
    std::string s = v.get<std::string>();
    if (!axis.known.empty() && std::find(axis.known.begin(), axis.known.end(), s) == axis.known.end())
      throw ConfigError(where + ": unknown " + axis.name + " '" + s + "' (known: " + join(axis.known) + ")");
    out.push_back(s);
  }
  return out;
}

static std::vector<std::string> split_slash(const std::string& s) {
  std::vector<std::string> parts;
  size_t a = 0;
  for (size_t b; (b = s.find('/', a)) != std::string::npos; a = b + 1) parts.push_back(s.substr(a, b - a));
  parts.push_back(s.substr(a));
  return parts;
}

Preset load_preset(const std::string& name_or_path, const std::string& dir, const std::vector<Axis>& axes) {
  const bool is_path = name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".json");
  const std::string path = is_path ? name_or_path : dir + "/" + name_or_path + ".json";
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw ConfigError("preset '" + name_or_path + "' not found (looked for " + path +
                      "; known presets: " + join(preset_names(dir)) + ")");
  std::stringstream text;
  text << in.rdbuf();
  return parse_preset(text.str(), path, axes);
}

Preset parse_preset(const std::string& text, const std::string& path, const std::vector<Axis>& axes) {
  Preset p;
  p.axes = axes;
  p.path = path;
  try {
    p.raw = json::parse(text);
  } catch (const json::exception& e) {  // a syntax error, or a number out of range (out_of_range, not parse_error)
    throw ConfigError(p.path + ": not valid JSON: " + e.what());
  }
  if (!p.raw.is_object()) throw ConfigError(p.path + ": a preset must be a JSON object, found " + p.raw.type_name());
  p.name = fs::path(p.path).stem().string();
  std::vector<std::string> top = {"description", "seeds", "defaults", "cells_cfg"};
  for (auto& a : axes) top.insert(top.end(), {a.name + "s", a.name + "s_cfg"});
  for (auto& [k, v] : p.raw.items())
    if (std::find(top.begin(), top.end(), k) == top.end())
      throw ConfigError(p.path + ": unknown top-level key '" + k + "' (known: " + join(top) + ")");
  if (p.raw.contains("description") && !p.raw["description"].is_string())
    throw ConfigError(p.path + ": 'description' must be a string");
  p.description = p.raw.value("description", "");
  for (auto& a : axes) p.values.push_back(string_list(p.raw, a.name + "s", p.path, a));
  for (auto& k : top)
    if ((k == "defaults" || k.ends_with("_cfg")) && p.raw.contains(k) && !p.raw[k].is_object())
      throw ConfigError(p.path + ": '" + k + "' must be an object, found " + p.raw[k].type_name());
  // a section for a value no axis has is a typo that would silently do nothing
  auto check_value = [&](const Axis& a, const std::string& value, const std::string& sec) {
    if (!a.known.empty() && std::find(a.known.begin(), a.known.end(), value) == a.known.end())
      throw ConfigError(p.path + ": " + sec + ": unknown " + a.name + " '" + value + "' (known: " + join(a.known) + ")");
  };
  for (auto& a : axes)
    if (p.raw.contains(a.name + "s_cfg"))
      for (auto& [value, section] : p.raw[a.name + "s_cfg"].items()) check_value(a, value, a.name + "s_cfg");
  if (p.raw.contains("cells_cfg"))
    for (auto& [key, section] : p.raw["cells_cfg"].items()) {
      auto parts = split_slash(key);
      if (parts.size() > axes.size())
        throw ConfigError(p.path + ": cells_cfg key '" + key + "' has more parts than the axes (" + std::to_string(axes.size()) +
                          ")");
      for (size_t i = 0; i < parts.size(); i++) check_value(axes[i], parts[i], "cells_cfg key '" + key + "'");
    }
  if (p.raw.contains("seeds")) {
    if (!p.raw["seeds"].is_array() || p.raw["seeds"].empty())
      throw ConfigError(p.path + ": 'seeds' must be a non-empty list of integers");
    for (auto& s : p.raw["seeds"]) {
      if (!s.is_number_integer() || s.get<int>() < 0)
        throw ConfigError(p.path + ": 'seeds' must hold integers >= 0, found " + s.dump());
      p.seeds.push_back(s.get<int>());
    }
  }
  return p;
}

std::vector<std::vector<std::string>> combinations(const std::vector<std::vector<std::string>>& lists) {
  std::vector<std::vector<std::string>> out = {{}};
  for (const std::vector<std::string>& list : lists) {
    std::vector<std::vector<std::string>> longer;
    for (const std::vector<std::string>& head : out)
      for (const std::string& v : list) {
        longer.push_back(head);
        longer.back().push_back(v);
      }
    out = std::move(longer);
  }
  return out;
}

void check_axis_values(const std::vector<Axis>& axes, const std::vector<std::string>& values) {
  if (values.size() != axes.size())
    throw std::logic_error("a cell has " + std::to_string(values.size()) + " axis values, the app " +
                           std::to_string(axes.size()) + " axes");
  for (size_t i = 0; i < axes.size(); i++) {
    const std::vector<std::string>& known = axes[i].known;
    if (!known.empty() && std::find(known.begin(), known.end(), values[i]) == known.end())
      throw ConfigError("unknown " + axes[i].name + " '" + values[i] + "' (known: " + join(known) + ")");
  }
}

void refuse_axis_sets(const std::vector<Axis>& axes, const std::vector<std::string>& sets) {
  std::vector<std::string> names, runs, cells;
  for (const Axis& a : axes) names.push_back(a.name), runs.push_back("--" + a.name + "s"), cells.push_back("--" + a.name);
  if (names.empty()) return;
  const std::string last = names.back();
  names.pop_back();
  const std::string what = names.empty() ? last + " is an axis" : join(names) + " and " + last + " are axes";
  for (const std::string& s : sets)
    for (const Axis& a : axes)
      if (s.starts_with(a.config_field() + "="))
        throw ConfigError("--set " + s + ": " + what + ": " + join(runs, " / ") + " (run), " + join(cells, " / ") + " (cell)");
}

std::vector<std::pair<std::string, json>> Preset::sections_for(const std::vector<std::string>& v) const {
  std::vector<std::pair<std::string, json>> out;
  if (raw.contains("defaults")) out.push_back({path + " defaults", raw["defaults"]});
  for (size_t i = 0; i < axes.size() && i < v.size(); i++) {
    const std::string sec = axes[i].name + "s_cfg";
    if (raw.contains(sec) && raw[sec].contains(v[i])) out.push_back({path + " " + sec + "." + v[i], raw[sec][v[i]]});
  }
  if (raw.contains("cells_cfg")) {
    std::vector<std::pair<size_t, std::string>> hits;  // (number of parts, key)
    for (auto& [key, section] : raw["cells_cfg"].items()) {
      auto parts = split_slash(key);
      if (parts.size() > v.size()) continue;
      if (std::equal(parts.begin(), parts.end(), v.begin())) hits.push_back({parts.size(), key});
    }
    std::stable_sort(hits.begin(), hits.end(), [](auto& a, auto& b) { return a.first < b.first; });
    for (auto& [n, key] : hits) out.push_back({path + " cells_cfg." + key, raw["cells_cfg"][key]});
  }
  return out;
}

}  // namespace dl::harness
