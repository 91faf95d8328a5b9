// apps/fpt - "Pretrained Transformers as Universal Computation Engines" (Lu, Grover, Abbeel, Mordatch 2021): a
// language-pretrained transformer with its attention and feed-forward frozen, against full training and an LSTM,
// on bit memory, bit XOR, ListOps and image patches.
//
//   fpt run      [--preset tiny|small|paper|FILE] [--tasks ..] [--arms ..] [--seeds 0,1,2] [--set k=v].. [--resume]
//   fpt cell     --task bit_xor --arm fpt [--preset ..] [--set k=v]..
//   fpt pretrain [--preset ..] [--set k=v]..     rebuild the cached language-pretrained transformer (pretrain.h)
//   fpt sweep-lr [--tasks ..] [--arms ..] [--lrs 1e-4,1e-3] [--seeds ..]    (sweep.h)
//   fpt attention --cell DIR [--example 0]      attention maps of a finished cell (attention.h)
//   fpt export   --cell DIR --onnx FILE [--batch 4] [--seed 0]   the cell's model as ONNX + check file (export.h)
//   fpt list
#include <CLI/CLI.hpp>
#include <iostream>

#include "app.h"
#include "attention.h"
#include "config.h"
#include "export.h"
#include "pretrain.h"
#include "sweep.h"

using namespace fpt;
namespace harness = dl::harness;

int main(int argc, char** argv) {
  harness::Experiment e = experiment();
  std::string preset = "tiny", cell_dir, device = "cpu";
  std::vector<std::string> sets;
  int example = 0;
  std::unique_ptr<SweepCommand> sweep;
  harness::ExportOptions export_opts;
  e.commands = [&](CLI::App& app) {
    CLI::App* pre = app.add_subcommand("pretrain", "rebuild the language-pretrained transformer of a preset (cached)");
    pre->add_option("--preset,--config", preset, "preset name or JSON file")->capture_default_str();
    pre->add_option("--set", sets, "override a config field (repeatable)");
    pre->add_option("--device", device, "cpu or cuda: where the LM trains")->capture_default_str();
    CLI::App* att = app.add_subcommand("attention", "attention maps of a finished cell on one test example");
    att->add_option("--cell", cell_dir, "the cell folder")->required();
    att->add_option("--example", example, "test example")->capture_default_str();
    sweep = std::make_unique<SweepCommand>(app, e);
    return std::vector<harness::Command>{{pre,
                                          [&] {
                                            harness::Preset p = load_preset(preset);
                                            CellConfig c = resolve_cell(p, p.values[0][0], "fpt", sets);
                                            harness::RunContext ctx;
                                            harness::check_device(device);
                                            ctx.device = device;
                                            PretrainedInfo info = pretrained_transformer("language", c, ctx, /*rebuild=*/true);
                                            std::cout << info.path << "\n" << info.info.dump(2) << "\n";
                                          }},
                                         {att, [&] { write_attention_maps(cell_dir, example); }},
                                         {sweep->command(), [&] { sweep->run(); }},
                                         harness::export_command(app, export_opts, export_cell)};
  };
  return harness::run_main(e, argc, argv);
}
