// apps/lra_benchmark - "Never Train from Scratch" (Amos, Berant, Gupta 2023) on Long Range Arena:
// Transformer, S4, S4D and DLR trained from scratch vs. self-pretrained on the task's own training data.
//
//   lra_benchmark run   [--preset tiny|small|paper|FILE] [--tasks ..] [--models ..] [--regimes ..] [--set k=v].. [--resume]
//   lra_benchmark cell  --task listops --model s4d --regime spt-masked [--preset ..] [--set k=v]..
//   lra_benchmark eval  --cell runs/lra/cells/listops__s4d__scratch [--split test]
//   lra_benchmark list
//   lra_benchmark speed [--preset ..] [--tasks ..] [--models ..] [--set k=v].. [--steps 5]   (steps/s, speed.h)
// Results: <out>/results.{json,md}, metrics.csv, plots/, cells/<task>__<model>__<regime>/ (see report.h).
#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "config.h"
#include "nn/registry.h"
#include "report.h"
#include "speed.h"
#include "tasks/registry.h"
#include "tensor/safetensors.h"
#include "trainer.h"

using namespace lra;

static std::vector<std::string> pick(const std::vector<std::string>& chosen, const std::vector<std::string>& preset) {
  return chosen.empty() ? preset : chosen;
}

int main(int argc, char** argv) {
  CLI::App app{"LRA benchmark: scratch vs. self-pretrained Transformers and state-space models (Amos et al. 2023)"};
  app.require_subcommand(1);
  std::string preset = "tiny", out = "runs/lra", device = "cpu", cell_path, split = "test";
  std::vector<std::string> tasks_sel, models_sel, regimes_sel, sets;
  std::string task, model, regime = "scratch";
  bool resume = false, quiet = false;
  int threads = 2, seed = -1;

  auto common = [&](CLI::App* s) {
    s->add_option("--preset,--config", preset, "preset name (apps/lra_benchmark/presets) or a JSON file")->capture_default_str();
    s->add_option("--set", sets, "override a field: --set lr=3e-4 (repeatable)");
    s->add_option("--out", out, "output folder")->capture_default_str();
    s->add_option("--threads", threads, "CPU threads")->capture_default_str();
    s->add_option("--seed", seed, "seed (overrides the preset's)");
    s->add_option("--device", device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
    s->add_flag("--resume", resume, "continue: skip finished cells, resume half-done ones from their checkpoints");
    s->add_flag("--quiet", quiet, "no progress bar");
  };
  CLI::App* run = app.add_subcommand("run", "run a sweep: every task x model x regime of the preset");
  common(run);
  run->add_option("--tasks", tasks_sel, "only these tasks")->delimiter(',');
  run->add_option("--models", models_sel, "only these models")->delimiter(',');
  run->add_option("--regimes", regimes_sel, "only these regimes")->delimiter(',');
  CLI::App* cell = app.add_subcommand("cell", "run one task/model/regime");
  common(cell);
  cell->add_option("--task", task, "task")->required();
  cell->add_option("--model", model, "model")->required();
  cell->add_option("--regime", regime, "scratch, spt-causal or spt-masked")->capture_default_str();
  CLI::App* eval = app.add_subcommand("eval", "evaluate a finished cell's model.safetensors");
  eval->add_option("--cell", cell_path, "the cell folder (or its model.safetensors)")->required();
  eval->add_option("--split", split, "train, val or test")->capture_default_str();
  CLI::App* list = app.add_subcommand("list", "list tasks, models, regimes, presets and layers");
  SpeedCommand speed(app);  // lra_benchmark speed: training steps/s per cell (speed.h)
  CLI11_PARSE(app, argc, argv);
  if (speed.chosen()) return speed.run();

  try {
    if (*list) {
      std::cout << "tasks:\n";
      for (auto& t : dl::tasks::task_registry()) std::cout << "  " << t.name << "  - " << t.description << "\n";
      std::cout << "models (the paper's: transformer, s4, s4d, dlr; any registry layer works):";
      for (auto& m : model_names()) std::cout << " " << m;
      std::cout << "\nregimes: scratch, spt-causal, spt-masked\npresets:";
      for (auto& p : preset_names()) std::cout << " " << p;
      std::cout << "\nlayers (nn/registry.cpp):\n";
      for (auto& l : dl::nn::layer_registry()) std::cout << "  " << l.name << "  - " << l.summary << "\n";
      return 0;
    }
    if (*eval) {
      std::string path = std::filesystem::is_directory(cell_path) ? cell_path + "/model.safetensors" : cell_path;
      dl::TensorFile f = dl::load_safetensors(path);
      auto it = f.metadata.find("dl.config");
      if (it == f.metadata.end()) throw ConfigError(path + ": no dl.config metadata (not written by lra_benchmark)");
      CellConfig c;
      c.apply(json::parse(it->second), path + " metadata");
      double acc = evaluate_checkpoint(c, path, split);
      std::cout << c.key() << " " << split << " accuracy " << 100 * acc << "%\n";
      return 0;
    }
    if (device == "cuda")
      throw ConfigError("--device cuda: the CUDA backend covers matmul, elementwise, softmax and FFT convolution kernels "
                        "(docs/cuda.md) but not every op a training step needs yet; run on cpu");
    if (seed >= 0) sets.push_back("seed=" + std::to_string(seed));
    Preset p = load_preset(preset);
    RunOptions o{out, resume, quiet, threads};
    std::vector<CellConfig> cells;
    if (*cell) {
      cells.push_back(resolve_cell(p, task, model, regime, sets));
    } else {
      for (auto& t : pick(tasks_sel, p.tasks))
        for (auto& m : pick(models_sel, p.models))
          for (auto& r : pick(regimes_sel, p.regimes)) cells.push_back(resolve_cell(p, t, m, r, sets));
    }
    std::filesystem::create_directories(out);
    std::cerr << "lra_benchmark: preset " << p.name << ", " << cells.size() << " cell(s) -> " << out << "\n";
    for (auto& c : cells) {
      std::string done = cell_dir(out, c.task, c.model, c.regime) + "/result.json";
      if (resume && std::filesystem::exists(done)) {
        std::cerr << "[" << c.key() << "] finished earlier, skipped (--resume)\n";
        continue;
      }
      run_cell(c, o);
      write_reports(out, "LRA: scratch vs. self-pretraining (preset " + p.name + ")");
    }
    write_reports(out, "LRA: scratch vs. self-pretraining (preset " + p.name + ")");
    std::ifstream md(out + "/results.md");
    std::cout << md.rdbuf() << "\nwritten: " << out << "/results.{json,md}, metrics.csv"
              << (have_gnuplot() ? ", plots/" : "") << "\n";
  } catch (const std::exception& e) {
    std::cerr << "lra_benchmark: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
