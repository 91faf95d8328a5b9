// apps/studies - the questions the team studies beside the three papers, each a subcommand that writes a table, plots
// and the numbers behind them (docs/studies/*.md walks from each question to the code and the answer).
//
//   studies attention-approx [--out DIR] [--seeds 5] [--features 16,..,1024] [--lengths 256,1024,4096]
//                            [--cost-lengths 256,..,16384] [--no-cost] [--threads 2]
#include <CLI/CLI.hpp>
#include <iostream>
#include <omp.h>
#include <sstream>

#include "attention_approx.h"

static std::vector<int> ints(const std::string& s, const std::string& flag) {
  std::vector<int> v;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    try {
      size_t used = 0;
      v.push_back(std::stoi(item, &used));
      if (used != item.size() || v.back() < 1) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw CLI::ValidationError(flag, "'" + item + "' in \"" + s + "\" is not a positive integer");
    }
  }
  return v;
}

int main(int argc, char** argv) {
  CLI::App app{"studies: the attention, position and initialisation questions, each a runnable experiment"};
  app.require_subcommand(1);
  studies::ApproxOptions ao;
  std::string features, lengths, cost_lengths;
  bool no_cost = false;
  int threads = 2;
  CLI::App* aa = app.add_subcommand("attention-approx", "softmax vs linear attention vs Performer: error and cost");
  aa->add_option("--out", ao.out, "output folder")->capture_default_str();
  aa->add_option("--seeds", ao.seeds, "seeds per point")->capture_default_str()->check(CLI::PositiveNumber);
  aa->add_option("--features", features, "random-feature counts, e.g. 16,64,256");
  aa->add_option("--lengths", lengths, "lengths for the error against length");
  aa->add_option("--cost-lengths", cost_lengths, "lengths for time and memory");
  aa->add_flag("--no-cost", no_cost, "skip the time and memory measurements");
  aa->add_option("--threads", threads, "CPU threads")->capture_default_str();
  try {
    app.parse(argc, argv);
    if (!features.empty()) ao.features = ints(features, "--features");
    if (!lengths.empty()) ao.lengths = ints(lengths, "--lengths");
    if (!cost_lengths.empty()) ao.cost_lengths = ints(cost_lengths, "--cost-lengths");
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  ao.cost = !no_cost;
  omp_set_num_threads(threads);
  try {
    if (*aa) studies::run_attention_approx(ao);
  } catch (const std::exception& e) {
    std::cerr << "studies: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
