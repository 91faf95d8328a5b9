// apps/explain - a teaching tool: open a model any app of this project wrote and show what is inside it on one
// input (explain.h): parameters per module, the op graph, every attention head's map, every state-space kernel and
// its frequency response, and <out>/explain.md that says how to read each picture.
//
//   explain --model-file runs/lra_benchmark/cells/<cell>/model.safetensors [--example 0] [--out DIR]
//           [--text "a sentence"] [--graph-lines 60] [--depth 3] [--channels 4] [--no-plots]
#include <CLI/CLI.hpp>
#include <iostream>

#include "explain.h"

int main(int argc, char** argv) {
  CLI::App app{"explain: what is inside a model an app of this project wrote, on one input"};
  std::string file;
  explain::Options o;
  bool no_plots = false;
  app.add_option("--model-file", file, "a cell's model.safetensors (lra_benchmark, fpt or pretrained_convs)")->required();
  app.add_option("--example", o.example, "test example to run")->capture_default_str();
  app.add_option("--text", o.text, "byte-level models (pretrained_convs): run this text instead of an example");
  app.add_option("--out", o.out, "output folder (default: <model file's folder>/explain)");
  app.add_option("--graph-lines", o.graph_lines, "op-graph lines to print, 0 = all")->capture_default_str();
  app.add_option("--depth", o.depth, "module-tree depth to print")->capture_default_str();
  app.add_option("--channels", o.kernel_channels, "SSM channels to plot per layer")->capture_default_str();
  app.add_flag("--no-plots", no_plots, "write the .dat and .gp files but do not run gnuplot");
  CLI11_PARSE(app, argc, argv);
  o.plots = !no_plots;
  try {
    if (o.graph_lines < 0) throw std::runtime_error("--graph-lines " + std::to_string(o.graph_lines) + ": must be >= 0");
    if (o.depth < 0) throw std::runtime_error("--depth " + std::to_string(o.depth) + ": must be >= 0");
    if (o.kernel_channels < 1) throw std::runtime_error("--channels " + std::to_string(o.kernel_channels) + ": must be >= 1");
    std::cout << explain::explain_model_file(file, o).text;
  } catch (const std::exception& e) {
    std::cerr << "explain: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
