// apps/lra_benchmark - "Never Train from Scratch" (Amos, Berant, Gupta 2023) on Long Range Arena:
// Transformer, S4, S4D and DLR trained from scratch vs. self-pretrained on the task's own training data.
//
//   lra_benchmark run   [--preset tiny|small|paper|FILE] [--tasks ..] [--models ..] [--regimes ..] [--set k=v]..
//                       [--seeds 0,1,2] [--resume]
//   lra_benchmark cell  --task listops --model s4d --regime spt-masked [--preset ..] [--set k=v]..
//   lra_benchmark eval  --cell runs/lra_benchmark/cells/listops__s4d__scratch__seed0 [--split test]
//   lra_benchmark predict --cell DIR (--text INPUT.. | --file FILE | --image PGM..)   (classes for your inputs, predict.h)
//   lra_benchmark list
//   lra_benchmark export --cell DIR --onnx FILE [--batch 4]   (the model as ONNX with a check file, export.h)
//   lra_benchmark speed [--preset ..] [--tasks ..] [--models ..] [--set k=v].. [--steps 5]   (steps/s, speed.h)
//   lra_benchmark data-scale [--preset ..] [--fractions 1,0.5,0.25,0.1] [--seeds ..]   (SPT gain vs size, data_scale.h)
// The harness (apps/common) runs the sweep; this app says what a cell is (cell.h), its model (model.h), its data
// and objectives (data.h) and its table (report.h); app.h hands them to the harness.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>

#include "app.h"
#include "cell.h"
#include "config.h"
#include "data.h"
#include "data_scale.h"
#include "export.h"
#include "predict.h"
#include "speed.h"
#include "tensor/safetensors.h"

using namespace lra;
namespace harness = dl::harness;

// `eval --cell DIR`: the cell's model file carries its config.
static void eval_cell(const std::string& cell_path, const std::string& split) {
  const std::string path = harness::cell_model_file(cell_path);
  dl::TensorFile f = dl::load_safetensors(path);
  const CellConfig c = harness::checked_config_in_metadata<CellConfig>(f.metadata, path, "lra_benchmark");
  const double v = evaluate_checkpoint(c, path, split);
  if (shape_of(task_data(c)).regression) std::cout << c.key() << " " << split << " RMSE " << v << "\n";
  else std::cout << c.key() << " " << split << " accuracy " << 100 * v << "%\n";
}

int main(int argc, char** argv) {
  harness::Experiment e = experiment();
  std::string cell_path, split = "test", predict_file;
  std::vector<std::string> predict_texts, predict_images;
  std::unique_ptr<SpeedCommand> speed;
  std::unique_ptr<DataScaleCommand> data_scale;
  harness::ExportOptions export_opts;
  e.commands = [&](CLI::App& app) {
    CLI::App* eval = app.add_subcommand("eval", "evaluate a finished cell's model.safetensors");
    eval->add_option("--cell", cell_path, "the cell folder (or its model.safetensors)")->required();
    eval->add_option("--split", split, "train, val or test")->capture_default_str();
    CLI::App* pr = app.add_subcommand("predict", "a finished cell's classes for your own inputs, a line each");
    pr->add_option("--cell", cell_path, "the cell folder (or its model.safetensors)")->required();
    pr->add_option("--text", predict_texts, "an input (repeatable): a ListOps expression, a text, two texts and a tab")
        ->allow_extra_args(false);  // taken as it is: CLI11 would split "[MAX 2 9 ]" as a bracketed list
    pr->add_option("--file", predict_file, "a file of inputs, one a line");
    pr->add_option("--image", predict_images, "an image (repeatable) for the pixel tasks: PGM or PPM")->allow_extra_args(false);
    speed = std::make_unique<SpeedCommand>(app);            // training steps/s per cell (speed.h)
    data_scale = std::make_unique<DataScaleCommand>(app);  // the SPT gain against the training-set size (data_scale.h)
    return std::vector<harness::Command>{{eval, [&] { eval_cell(cell_path, split); }},
                                         {pr, [&] { predict_cell(cell_path, predict_texts, predict_file, predict_images); }},
                                         {speed->command(), [&] { speed->run(); }},
                                         {data_scale->command(), [&] { data_scale->run(e); }},
                                         harness::export_command(app, export_opts, export_cell)};  // ONNX (export.h)
  };
  return harness::run_main(e, argc, argv);
}
