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
#include <cstring>
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

struct HarnessStudy {
  const char* name;
  int (*main)(int argc, char** argv);  // argv[0] is the study's name
  const char* help;                    // for `studies --help`
};

const HarnessStudy kHarnessStudies[] = {
    {"mixers", studies::mixers_main, "attention vs MLP-Mixer vs FNet vs S4D vs conv as the token mixer of one backbone"},
    {"positions", studies::positions_main, "sinusoidal vs learned vs rotary positions, trained short, tested long"},
    {"init-warmup", studies::init_warmup_main, "post-LN vs pre-LN: gradient norms at init, warmup, init std, MLM head"},
    {"cosent", studies::cosent_main, "CoSENT vs SBERT softmax vs cosine-MSE for sentence encoders (Spearman)"},
    {"exact", studies::exact_main, "EXACT (expected accuracy) vs cross-entropy: accuracy and calibration"},
    {"nsp-bert", studies::nsp_bert_main, "NSP-BERT: a small BERT's next-sentence head as a zero-shot classifier"},
    {"unilm", studies::unilm_main, "SimBERT in miniature: the UniLM prefix mask, generation + retrieval in one encoder"},
};

}  // namespace

int main(int argc, char** argv) {
  for (const HarnessStudy& s : kHarnessStudies)
    if (argc > 1 && std::strcmp(argv[1], s.name) == 0) return s.main(argc - 1, argv + 1);
  CLI::App app{"studies: the attention, position and initialisation questions, each a runnable experiment"};
  app.require_subcommand(1);
  for (auto add : {studies::add_attention_approx_command})
    add(app);
  for (const HarnessStudy& s : kHarnessStudies)  // listed in --help; main() hands them to their own mains above
    app.add_subcommand(s.name, std::string(s.help) + " (on the harness: studies " + s.name + " --help)")->allow_extras();
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
