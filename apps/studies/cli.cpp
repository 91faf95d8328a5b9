// apps/studies/cli.cpp - see cli.h: the old command lines of the studies on the harness, and the list parsers.
#include "cli.h"

#include <algorithm>
#include <iostream>
#include <limits>

namespace studies {

namespace harness = dl::harness;

// ---- studies on the harness: their old command lines ----

LegacyRule set_field(const std::string& field) {
  return [field](const std::string& v) { return std::vector<std::string>{"--set", field + "=" + v}; };
}

LegacyRule set_string_field(const std::string& field) {
  return [field](const std::string& v) { return std::vector<std::string>{"--set", field + "=" + harness::json(v).dump()}; };
}

// --seeds N (a count) -> "0-(N-1)"; a list ("0,2") or a range stays as it is.
static std::string seeds_of_count(const std::string& v) {
  const bool count = !v.empty() && v.find_first_not_of("0123456789") == std::string::npos && std::stoi(v) > 0;
  if (!count) return v;
  const std::string seeds = v == "1" ? "0" : "0-" + std::to_string(std::stoi(v) - 1);
  std::cerr << "studies: --seeds " << v << " (a count, as before) runs seeds " << seeds << "\n";
  return seeds;
}

std::vector<std::string> legacy_args(std::vector<std::string> args, const LegacyFlags& legacy) {
  if (args.empty()) return {"run"};  // `studies positions` alone ran the default before the harness, and still does
  if (!args[0].starts_with("--") || args[0] == "--help") return args;
  std::vector<std::string> out = {"run"};
  for (size_t i = 0; i < args.size(); i++) {
    std::string flag = args[i], value;
    const size_t eq = flag.find('=');
    if (eq != std::string::npos) value = flag.substr(eq + 1), flag.resize(eq);
    if (auto s = legacy.switches.find(flag); s != legacy.switches.end() && eq == std::string::npos) {
      std::vector<std::string> words = s->second;
      if (!words.empty() && !words[0].starts_with("--")) out[0] = words[0], words.erase(words.begin());
      out.insert(out.end(), words.begin(), words.end());
      continue;
    }
    const auto rule = legacy.with_value.find(flag);
    if ((flag != "--seeds" && rule == legacy.with_value.end()) || (eq == std::string::npos && i + 1 == args.size())) {
      out.push_back(args[i]);
      continue;
    }
    if (eq == std::string::npos) value = args[++i];
    const std::vector<std::string> words =
        flag == "--seeds" ? std::vector<std::string>{"--seeds", seeds_of_count(value)} : rule->second(value);
    out.insert(out.end(), words.begin(), words.end());
  }
  return out;
}

int harness_main(const harness::Experiment& e, const LegacyFlags& legacy, int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    args = legacy_args(args, legacy);
  } catch (const std::exception& ex) {
    std::cerr << "studies " << argv[0] << ": error: " << ex.what() << "\n";
    return 1;
  }
  args.insert(args.begin(), "studies " + std::string(argv[0]));  // the program's name in --help
  std::vector<char*> av;
  for (std::string& a : args) av.push_back(a.data());
  av.push_back(nullptr);
  return harness::run_main(e, (int)args.size(), av.data());
}

// ---- lists in old command lines and in attention-approx ----

std::vector<int> parse_ints(const std::string& s, const std::string& flag) {
  std::vector<int> v;
  for (int64_t x : harness::parse_int_list(s, flag)) {
    if (x > std::numeric_limits<int>::max()) throw harness::ConfigError(flag + ": " + std::to_string(x) + " is too large");
    v.push_back((int)x);
  }
  return v;
}

}  // namespace studies
