// apps/common/export_command.cpp - see export_command.h.
#include "apps/common/export_command.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "apps/common/phase.h"

namespace dl::harness {

Command export_command(CLI::App& app, ExportOptions& o, CellExporter exporter, const std::string& what) {
  CLI::App* cmd =
      app.add_subcommand("export", "write a finished cell's " + what + " as ONNX (opset 17), with a check file beside it");
  cmd->add_option("--cell", o.cell, "the cell folder (or its model.safetensors)")->required();
  cmd->add_option("--onnx", o.onnx, "the .onnx file to write (FILE.check.safetensors goes beside it)")->required();
  cmd->add_option("--batch", o.batch, "rows of the check file's example batch")->capture_default_str();
  cmd->add_option("--seed", o.seed, "seed of the example batch")->capture_default_str();
  return {cmd, [&o, exporter] { std::cout << exporter(cell_model_file(o.cell), o) << "\n"; }};
}

}  // namespace dl::harness
