// apps/common/export_command.h - `<app> export --cell DIR --onnx FILE [--batch N] [--seed S]`: the subcommand every
// app with an ONNX export shares (docs/onnx.md). The options are read here; the app gives what only it knows, how to
// rebuild its cell's model from the model file and write it (its export.h).
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "apps/common/experiment.h"

namespace dl::harness {

struct ExportOptions {
  std::string cell;   // the cell folder, or its model.safetensors
  std::string onnx;   // the .onnx file to write; FILE.check.safetensors goes beside it
  int64_t batch = 4;  // rows of the check file's example batch
  uint64_t seed = 0;  // seed of the example batch
};

// Writes the ONNX file and its check file for the model in model_file; returns the line to print ("<cell>: wrote ...").
using CellExporter = std::function<std::string(const std::string& model_file, const ExportOptions& o)>;

// Adds `export` to app; the returned Command runs `exporter` on cell_model_file(o.cell). `o` must outlive the parse
// (CLI11 keeps pointers to its fields). `what` names the model in the help ("model", "encoder-decoder").
Command export_command(CLI::App& app, ExportOptions& o, CellExporter exporter, const std::string& what = "model");

}  // namespace dl::harness
