// optim/checkpoint.h - save and resume a training run: model weights + optimiser state + training position.
//
// A checkpoint folder holds complete checkpoints and a manifest naming the current one:
//   checkpoint.json                           {"step", "id", "model", "state", "history"}  written LAST
//   model-<step>-<tag>.safetensors            Module::state_dict() under PyTorch names; metadata: format=pt,
//                                             dl.step, dl.checkpoint_id (so torch / HF load it as is)
//   state-<step>-<tag>.safetensors            optimiser buffers "<param name>.exp_avg" / ".exp_avg_sq" /
//                                             ".momentum_buffer"; metadata: dl.step, dl.checkpoint_id, the
//                                             optimiser JSON, schedule step, epoch, best metric, RNG states
//                                             ("rng.<name>"), the data position and free "extra.<key>" entries
// Every file is written atomically (temp file, fsync, rename), the two data files first, the manifest last,
// so a crash at any point leaves the manifest naming the previous complete pair. Each save gets fresh file
// names (<tag> is random), so a new file never overwrites one the manifest still names. Loading checks that
// the model and state files carry the same step and checkpoint id and refuses a mixed pair.
// The full protocol, the state_dict naming rules and partial loads: docs/checkpoints.md.
//
// What it is not: a model-only export (use Module::save / Module::load), or safe with two writers in one folder.
#pragma once
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nn/module.h"
#include "optim/optimizer.h"

namespace dl::optim {

using nn::CheckpointError;

struct TrainingState {
  int64_t step = 0;            // optimiser updates done
  int64_t schedule_step = -1;  // position of the lr schedule; < 0 means "equal to step"
  int64_t epoch = 0;
  double best_metric = std::numeric_limits<double>::quiet_NaN();  // NaN: none yet
  std::string data_position;                 // opaque: whatever the data pipeline needs to continue where it was
  std::map<std::string, std::string> rng;    // generator name -> Generator::state_string()
  std::map<std::string, std::string> extra;  // anything else (config hash, git commit, ...)

  void save_rng(const std::string& name, const Generator& g) { rng[name] = g.state_string(); }
  void restore_rng(const std::string& name, Generator& g) const;  // throws naming a generator that was not saved
  int64_t schedule_position() const { return schedule_step < 0 ? step : schedule_step; }
};

struct CheckpointOptions {
  int keep_last = 1;  // complete checkpoints kept in the folder; older pairs are deleted after the manifest moves on
  std::map<std::string, std::string> model_metadata;  // extra metadata for the model file (e.g. the config)
};

struct CheckpointInfo {
  int64_t step = 0;
  std::string id, model_path, state_path;
};

// Write a checkpoint of (model, optimiser, state) into `dir` (created if missing). Returns what was written.
CheckpointInfo save_checkpoint(const std::string& dir, const nn::Module& model, const Optimizer& opt, const TrainingState& st,
                               const CheckpointOptions& o = {});

// The checkpoint the manifest in `dir` names; nullopt when the folder has none.
std::optional<CheckpointInfo> latest_checkpoint(const std::string& dir);
// Every complete checkpoint the manifest still keeps (CheckpointOptions::keep_last of them), newest first.
std::vector<CheckpointInfo> checkpoint_history(const std::string& dir);

// Restore model weights (into their existing storage), optimiser state, and return the training state.
// Nothing is changed unless everything validates. `model_opts` allows an explicit partial model load.
TrainingState load_checkpoint(const std::string& dir, nn::Module& model, Optimizer& opt, const nn::LoadOptions& model_opts = {});
// The newest checkpoint of the history that loads: a damaged newest one (truncated, corrupt, a mixed pair) is
// skipped for the one before it, and `skipped` receives one line per checkpoint passed over, naming its files and
// what was wrong. Throws naming every failure when none loads; nothing is changed by a checkpoint that fails.
TrainingState load_latest_good_checkpoint(const std::string& dir, nn::Module& model, Optimizer& opt,
                                          std::vector<std::string>* skipped = nullptr, const nn::LoadOptions& model_opts = {});
// Move the manifest of `dir` and every file its history names into a new folder dir/damaged_<UTC time> and return
// that folder: what a resume does when no kept checkpoint loads (it starts the phase again, keeping the files to look at).
std::string set_aside_checkpoints(const std::string& dir);
// The same from an explicit (model file, state file) pair; refuses a pair from two different saves.
TrainingState load_checkpoint_files(const std::string& model_path, const std::string& state_path, nn::Module& model,
                                    Optimizer& opt, const nn::LoadOptions& model_opts = {});

}  // namespace dl::optim
