// apps/studies - the questions the team studies beside the three papers, each a subcommand that writes a table, plots
// and the numbers behind them (docs/studies/*.md walks from each question to the code and the answer).
//
//   studies attention-approx [--out DIR] [--seeds 5] [--features 16,..,1024] [--lengths 256,1024,4096]
//                            [--cost-lengths 256,..,16384] [--no-cost] [--threads 2]
//
//   studies mixers run [--preset default] [--tasks listops] [--mixers s4d,fnet] [--lrs 0.002] [--seeds 0,1,2] [--resume]
//
// Each study adds its own subcommand (cli.h): one line in the table below. A study that is an experiment on the
// harness (apps/common/experiment.h; so far mixers) takes its whole command line to harness::run_main instead.
#include <CLI/CLI.hpp>
#include <cstring>
#include <iostream>

#include "cli.h"
#include "mixers.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "mixers") == 0) return studies::mixers_main(argc - 1, argv + 1);
  CLI::App app{"studies: the attention, position and initialisation questions, each a runnable experiment"};
  app.require_subcommand(1);
  for (auto add : {studies::add_attention_approx_command, studies::add_cosent_command,
                    studies::add_init_warmup_command, studies::add_nsp_bert_command,
                    studies::add_positions_command,
                    studies::add_exact_command, studies::add_unilm_command,
                    studies::add_mixers_command}) add(app);
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
