// apps/studies - the questions the team studies beside the three papers, each a subcommand that writes a table, plots
// and the numbers behind them (docs/studies/*.md walks from each question to the code and the answer).
//
//   studies mixers run     [--preset default] [--tasks listops] [--mixers s4d,fnet] [--seeds 0,1,2] [--resume] ...
//   studies positions run  [--preset default] [--tasks lookback] [--positions rotary,learned] [--set steps=300] ...
//   studies attention-approx [--out DIR] [--seeds 5] [--features 16,..,1024] ...
//
// A study on the harness (apps/common/experiment.h) takes its whole command line to harness::run_main: one line in
// kHarnessStudies below (its old command line is read through its LegacyFlags, cli.h). A study not yet on it adds a
// CLI11 subcommand (cli.h).
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli.h"
#include "cosent.h"
#include "exact.h"
#include "init_warmup.h"
#include "mixers.h"
#include "nsp_bert.h"
#include "positions.h"
#include "unilm.h"

namespace {

// A study on the harness: its experiment and the flags of its command line before the harness.
struct HarnessStudy {
  dl::harness::Experiment (*experiment)();
  const studies::LegacyFlags& (*legacy)();
};

const HarnessStudy kHarnessStudies[] = {
    {studies::mixers_experiment, studies::mixers_legacy_flags},
    {studies::positions_experiment, studies::positions_legacy_flags},
    {studies::init_warmup_experiment, studies::init_warmup_legacy_flags},
    {studies::cosent_experiment, studies::cosent_legacy_flags},
    {studies::exact_experiment, studies::exact_legacy_flags},
    {studies::nsp_bert_experiment, studies::nsp_bert_legacy_flags},
    {studies::unilm_experiment, studies::unilm_legacy_flags},
};

}  // namespace

int main(int argc, char** argv) {
  for (const HarnessStudy& s : kHarnessStudies)
    if (argc > 1 && s.experiment().command[0] == argv[1])
      return studies::harness_main(s.experiment(), s.legacy(), argc - 1, argv + 1);  // argv[0]: the study's name
  CLI::App app{"studies: the attention, position and initialisation questions, each a runnable experiment"};
  app.require_subcommand(1);
  for (auto add : {studies::add_attention_approx_command}) add(app);
  for (const HarnessStudy& s : kHarnessStudies) {  // listed in --help; main() hands them to harness_main above
    const dl::harness::Experiment e = s.experiment();
    const std::string what = e.description.substr(e.description.find(": ") + 2);  // "studies exact: EXACT ..."
    app.add_subcommand(e.command[0], what + " (on the harness: studies " + e.command[0] + " --help)")->allow_extras();
  }
  if (const std::string bad = dl::harness::unknown_command(app, argc, argv); !bad.empty()) {
    std::cerr << "studies: " << bad << "\n";
    return 2;
  }
  try {
    app.parse(argc, argv);  // the chosen study runs in its subcommand's callback
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "studies: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
