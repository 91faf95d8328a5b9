// apps/studies/cli.h - what the studies share: the table of studies on the harness, the old command lines they still
// read, and the parsing of comma-separated lists ("16,64,256") in those command lines and attention-approx's.
//
// A study on the harness (apps/common/experiment.h; mixers, positions, ...) is an Experiment: its arms and settings
// are axes and a preset, its cells train on run_phase, and `studies <study> run|cell|list` goes to harness::run_main
// (main.cpp's table). Its command line from before the harness (an option right after the study's name) is read as
// `run` through a LegacyFlags table: each old flag says what it is now (mostly `--set field=value`).
// attention-approx, which trains nothing (it measures approximation error and cost), keeps its own CLI11 subcommand:
// add_attention_approx_command below, one line in main.cpp.
#pragma once
#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "apps/common/experiment.h"

namespace studies {

// ---- studies on the harness: their old command lines ----
// What one old flag with a value becomes (words of the harness's command line).
using LegacyRule = std::function<std::vector<std::string>(const std::string& value)>;
struct LegacyFlags {
  std::map<std::string, LegacyRule> with_value;              // e.g. "--train-len" -> set_field("train_len")
  std::map<std::string, std::vector<std::string>> switches;  // flags without a value, e.g. "--large" -> --preset large;
                                                             // a first word without "--" replaces `run` (a subcommand)
};
LegacyRule set_field(const std::string& field);         // v -> --set field=v
LegacyRule set_string_field(const std::string& field);  // v -> --set field="v" (a list "32,64" or one item "64")
// The flags of a study's config C: `fields` are the fields whose old flag is their name with '-' for '_'
// ("--fashion-steps v" -> --set fashion_steps=v; a string field's value quoted, set_string_field); `other` the flags
// that say something else, `switches` the flags without a value. A name that is not a field of C is a logic_error.
template <class C>
LegacyFlags legacy_flags(const std::vector<std::string>& fields, std::map<std::string, LegacyRule> other = {},
                         std::map<std::string, std::vector<std::string>> switches = {}) {
  const dl::harness::json defaults = dl::harness::config_to_json(C{});
  for (const std::string& field : fields) {
    if (!defaults.contains(field)) throw std::logic_error("legacy_flags: '" + field + "' is not a config field");
    std::string flag = "--" + field;
    std::replace(flag.begin(), flag.end(), '_', '-');
    other[flag] = defaults[field].is_string() ? set_string_field(field) : set_field(field);
  }
  return {std::move(other), std::move(switches)};
}
// The old command line as the harness's: `run` first; `--seeds N` (a count, as every study had it) -> --seeds 0-(N-1)
// (a list stays a list); the flags in `legacy` as they say (`--flag value` or `--flag=value`); anything else as it is.
// No arguments at all is `run` (the default preset). A command line that starts with a word (run, cell, list) or is
// `--help` is the harness's, unchanged.
std::vector<std::string> legacy_args(std::vector<std::string> args, const LegacyFlags& legacy);
// `studies <study> ...` (argv[0] the study's name): the old command line read through `legacy`, then run_main.
int harness_main(const dl::harness::Experiment& e, const LegacyFlags& legacy, int argc, char** argv);

// ---- lists in old command lines and in attention-approx (real numbers: harness::parse_real_list) ----
// "16,64,256" -> {16, 64, 256} (harness::parse_int_list: a ConfigError names `flag` and the item that is not a
// positive integer).
std::vector<int> parse_ints(const std::string& s, const std::string& flag);

void add_attention_approx_command(CLI::App& app);  // attention_approx.cpp

}  // namespace studies
