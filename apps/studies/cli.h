// apps/studies/cli.h - what every study's subcommand shares: the list of studies and the parsing of
// comma-separated lists ("16,64,256").
//
// Adding a study: write apps/studies/<study>.{h,cpp} with `void add_<study>_command(CLI::App& app)` that adds the
// subcommand, its options and a callback that runs it; declare it below and add one line to main.cpp's table.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace studies {

// "16,64,256" -> {16, 64, 256}; a non-positive or non-integer item is a CLI::ValidationError naming `flag`.
std::vector<int> parse_ints(const std::string& s, const std::string& flag);
// "a,b" -> {"a", "b"}, each one of `known`; anything else is a CLI::ValidationError naming `flag` and the choices.
std::vector<std::string> parse_names(const std::string& s, const std::string& flag, const std::vector<std::string>& known);
// The same for real numbers ("0.02,0.1"); items must be finite and > 0 unless allow_zero.
std::vector<double> parse_reals(const std::string& s, const std::string& flag, bool allow_zero = false);

// One line per study (defined in <study>.cpp).
void add_attention_approx_command(CLI::App& app);
void add_cosent_command(CLI::App& app);
void add_init_warmup_command(CLI::App& app);
void add_nsp_bert_command(CLI::App& app);
void add_exact_command(CLI::App& app);
void add_unilm_command(CLI::App& app);
void add_mixers_command(CLI::App& app);
void add_positions_command(CLI::App& app);

}  // namespace studies
