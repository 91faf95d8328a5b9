// optim/checkpoint.cpp - the checkpoint protocol of checkpoint.h (and docs/checkpoints.md).
#include "optim/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "tensor/safetensors.h"

namespace dl::optim {

namespace fs = std::filesystem;
using json = nlohmann::json;

static const char* kStateFormat = "dl.training_state/1";
static const char* kManifest = "checkpoint.json";

void TrainingState::restore_rng(const std::string& name, Generator& g) const {
  auto it = rng.find(name);
  if (it == rng.end()) {
    std::string have;
    for (auto& [n, s] : rng) have += (have.empty() ? "" : ", ") + n;
    throw CheckpointError("TrainingState: no saved state for generator '" + name + "' (saved: " + (have.empty() ? "none" : have) +
                          ")");
  }
  g.set_state_string(it->second);
}

static std::string random_hex(int n) {
  static thread_local std::mt19937_64 rng{std::random_device{}() ^ (uint64_t)::getpid()};
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < n; i++) s += digits[rng() % 16];
  return s;
}

static std::string fmt_double(double v) {
  if (std::isnan(v)) return "nan";
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

// Make the renames inside `dir` durable before the manifest names them.
static void fsync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

static json read_manifest(const std::string& dir) {
  std::string path = (fs::path(dir) / kManifest).string();
  std::ifstream in(path);
  if (!in) return json();
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    json j = json::parse(ss.str());
    (void)j.at("step").get<int64_t>();
    (void)j.at("id").get<std::string>();
    (void)j.at("model").get<std::string>();
    (void)j.at("state").get<std::string>();
    return j;
  } catch (const std::exception& e) {
    throw CheckpointError(path + ": the checkpoint manifest is corrupt: " + e.what());
  }
}

CheckpointInfo save_checkpoint(const std::string& dir, const nn::Module& model, const Optimizer& opt, const TrainingState& st,
                               const CheckpointOptions& o) {
  if (o.keep_last < 1) throw CheckpointError("save_checkpoint: keep_last must be >= 1");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw CheckpointError("save_checkpoint: cannot create folder " + dir + ": " + ec.message());
  json old = read_manifest(dir);

  char stepbuf[32];
  std::snprintf(stepbuf, sizeof stepbuf, "%08lld", (long long)st.step);
  std::string tag = random_hex(6);
  CheckpointInfo info;
  info.step = st.step;
  info.id = std::to_string(st.step) + "-" + random_hex(16);
  std::string model_name = std::string("model-") + stepbuf + "-" + tag + ".safetensors";
  std::string state_name = std::string("state-") + stepbuf + "-" + tag + ".safetensors";
  info.model_path = (fs::path(dir) / model_name).string();
  info.state_path = (fs::path(dir) / state_name).string();

  // 1. the training state
  OptimizerState os = opt.state_dict();
  std::map<std::string, std::string> md{{"format", kStateFormat},
                                        {"step", std::to_string(st.step)},
                                        {"checkpoint_id", info.id},
                                        {"model_file", model_name},
                                        {"optimizer", os.json},
                                        {"schedule_step", std::to_string(st.schedule_step)},
                                        {"epoch", std::to_string(st.epoch)},
                                        {"best_metric", fmt_double(st.best_metric)},
                                        {"data_position", st.data_position}};
  for (auto& [k, v] : st.rng) md["rng." + k] = v;
  for (auto& [k, v] : st.extra) md["extra." + k] = v;
  try {
    save_safetensors(info.state_path, os.tensors, md);
    // 2. the model, recording the same step and id
    std::map<std::string, std::string> mmd = o.model_metadata;
    mmd["format"] = "pt";
    mmd["dl.step"] = std::to_string(st.step);
    mmd["dl.checkpoint_id"] = info.id;
    model.save(info.model_path, mmd);
  } catch (const std::exception& e) {
    throw CheckpointError(std::string("save_checkpoint: ") + e.what() + " (the previous checkpoint in " + dir + " is untouched)");
  }
  fsync_dir(dir);

  // 3. the manifest, last: from here on the new pair is the checkpoint
  json entry = {{"step", st.step}, {"id", info.id}, {"model", model_name}, {"state", state_name}};
  json history = json::array({entry});
  if (old.is_object()) {
    history.push_back({{"step", old["step"]}, {"id", old["id"]}, {"model", old["model"]}, {"state", old["state"]}});
    if (old.contains("history") && old["history"].is_array())
      for (size_t i = 1; i < old["history"].size(); i++) history.push_back(old["history"][i]);
  }
  json kept = json::array(), dropped = json::array();
  for (size_t i = 0; i < history.size(); i++) (i < (size_t)o.keep_last ? kept : dropped).push_back(history[i]);
  json man = entry;
  man["format"] = "dl.checkpoint/1";
  man["history"] = kept;
  try {
    atomic_write_file((fs::path(dir) / kManifest).string(), man.dump(2) + "\n");
  } catch (const std::exception& e) {
    throw CheckpointError(std::string("save_checkpoint: ") + e.what() + " (the previous checkpoint in " + dir +
                          " is still the current one)");
  }
  fsync_dir(dir);

  // 4. tidy up: pairs that fell out of the history (never one the manifest names)
  for (auto& d : dropped)
    for (const char* k : {"model", "state"})
      if (d.contains(k) && d[k].is_string() && d[k] != model_name && d[k] != state_name)
        fs::remove(fs::path(dir) / d[k].get<std::string>(), ec);
  return info;
}

std::optional<CheckpointInfo> latest_checkpoint(const std::string& dir) {
  json m = read_manifest(dir);
  if (!m.is_object()) return std::nullopt;
  CheckpointInfo i;
  i.step = m["step"].get<int64_t>();
  i.id = m["id"].get<std::string>();
  i.model_path = (fs::path(dir) / m["model"].get<std::string>()).string();
  i.state_path = (fs::path(dir) / m["state"].get<std::string>()).string();
  return i;
}

std::vector<CheckpointInfo> checkpoint_history(const std::string& dir) {
  json m = read_manifest(dir);
  std::vector<CheckpointInfo> out;
  if (!m.is_object()) return out;
  json h = m.contains("history") && m["history"].is_array() ? m["history"] : json::array({m});
  for (auto& e : h) {
    try {
      CheckpointInfo i;
      i.step = e.at("step").get<int64_t>();
      i.id = e.at("id").get<std::string>();
      i.model_path = (fs::path(dir) / e.at("model").get<std::string>()).string();
      i.state_path = (fs::path(dir) / e.at("state").get<std::string>()).string();
      out.push_back(i);
    } catch (const std::exception& ex) {
      throw CheckpointError((fs::path(dir) / kManifest).string() + ": a history entry is corrupt: " + ex.what());
    }
  }
  return out;
}

TrainingState load_latest_good_checkpoint(const std::string& dir, nn::Module& model, Optimizer& opt,
                                          std::vector<std::string>* skipped, const nn::LoadOptions& mo) {
  std::vector<CheckpointInfo> h = checkpoint_history(dir);
  if (h.empty())
    throw CheckpointError("load_checkpoint: " + (fs::path(dir) / kManifest).string() +
                          " does not exist (no complete checkpoint has been written to " + dir + ")");
  std::string failures;
  for (auto& c : h) {
    try {
      return load_checkpoint_files(c.model_path, c.state_path, model, opt, mo);
    } catch (const CheckpointError& e) {
      const std::string line = "the checkpoint of step " + std::to_string(c.step) + " is damaged: " + e.what();
      if (skipped) skipped->push_back(line);
      failures += "\n  " + line;
    }
  }
  throw CheckpointError("load_checkpoint: no checkpoint in " + dir + " loads (" + std::to_string(h.size()) +
                        " kept):" + failures);
}

std::string set_aside_checkpoints(const std::string& dir) {
  std::vector<std::string> files;
  try {  // a manifest too damaged to list its files is moved alone
    for (auto& c : checkpoint_history(dir)) files.push_back(c.model_path), files.push_back(c.state_path);
  } catch (const CheckpointError&) {
  }
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", std::gmtime(&now));
  fs::path aside = fs::path(dir) / (std::string("damaged_") + stamp);
  for (int k = 2; fs::exists(aside); k++) aside = fs::path(dir) / (std::string("damaged_") + stamp + "_" + std::to_string(k));
  fs::create_directories(aside);
  files.push_back((fs::path(dir) / kManifest).string());
  for (const std::string& f : files) {
    std::error_code ec;
    if (fs::exists(f)) fs::rename(f, aside / fs::path(f).filename(), ec);
    if (ec) throw CheckpointError("set_aside_checkpoints: cannot move " + f + " to " + aside.string() + ": " + ec.message());
  }
  return aside.string();
}

TrainingState load_checkpoint(const std::string& dir, nn::Module& model, Optimizer& opt, const nn::LoadOptions& mo) {
  auto info = latest_checkpoint(dir);
  if (!info)
    throw CheckpointError("load_checkpoint: " + (fs::path(dir) / kManifest).string() +
                          " does not exist (no complete checkpoint has been written to " + dir + ")");
  return load_checkpoint_files(info->model_path, info->state_path, model, opt, mo);
}

static const std::string& meta(const TensorFile& f, const std::string& key, const std::string& what) {
  auto it = f.metadata.find(key);
  if (it == f.metadata.end()) throw CheckpointError(f.source + ": no '" + key + "' in its metadata (" + what + ")");
  return it->second;
}

static int64_t meta_int(const TensorFile& f, const std::string& key) {
  const std::string& v = meta(f, key, "a training-state field");
  try {
    size_t pos = 0;
    int64_t r = std::stoll(v, &pos);
    if (pos == v.size()) return r;
  } catch (const std::exception&) {
  }
  throw CheckpointError(f.source + ": metadata '" + key + "' is '" + v + "', not an integer");
}

TrainingState load_checkpoint_files(const std::string& model_path, const std::string& state_path, nn::Module& model,
                                    Optimizer& opt, const nn::LoadOptions& mo) {
  TensorFile mf, sf;
  try {
    sf = load_safetensors(state_path);
    mf = load_safetensors(model_path);
  } catch (const SafetensorsError& e) {
    throw CheckpointError(std::string("load_checkpoint: ") + e.what());
  }
  auto fmt = sf.metadata.find("format");
  if (fmt == sf.metadata.end() || fmt->second != kStateFormat)
    throw CheckpointError(state_path + ": not a training-state file (its metadata has no format '" + kStateFormat + "')");
  const std::string& sid = meta(sf, "checkpoint_id", "a training-state field");
  const std::string& mid =
      meta(mf, "dl.checkpoint_id", "the model file was not written by save_checkpoint; load bare weights with Module::load");
  int64_t sstep = meta_int(sf, "step");
  const std::string& mstep = meta(mf, "dl.step", "the model file was not written by save_checkpoint");
  if (sid != mid || std::to_string(sstep) != mstep)
    throw CheckpointError("load_checkpoint: refusing a mixed checkpoint: model file " + model_path + " records step " + mstep +
                          " (id " + mid + ") but training state " + state_path + " records step " + std::to_string(sstep) +
                          " (id " + sid + "); they were not written by the same save_checkpoint call");

  TrainingState st;
  st.step = sstep;
  st.schedule_step = meta_int(sf, "schedule_step");
  st.epoch = meta_int(sf, "epoch");
  const std::string& bm = meta(sf, "best_metric", "a training-state field");
  st.best_metric = bm == "nan" ? std::numeric_limits<double>::quiet_NaN() : std::strtod(bm.c_str(), nullptr);
  st.data_position = meta(sf, "data_position", "a training-state field");
  for (auto& [k, v] : sf.metadata) {
    if (k.rfind("rng.", 0) == 0) st.rng[k.substr(4)] = v;
    if (k.rfind("extra.", 0) == 0) st.extra[k.substr(6)] = v;
  }

  // Optimiser first (it validates before changing anything), then the model; undo the optimiser if the
  // model refuses, so a failed load leaves both as they were.
  OptimizerState backup = opt.state_dict();
  try {
    opt.load_state_dict({sf.tensors, meta(sf, "optimizer", "the optimiser state")});
  } catch (const CheckpointError&) {
    throw;
  } catch (const std::exception& e) {
    throw CheckpointError(state_path + ": " + e.what());
  }
  try {
    model.load_state_dict(mf.tensors, mo);
  } catch (const std::exception& e) {
    opt.load_state_dict(backup);
    throw CheckpointError(model_path + ": " + e.what());
  }
  return st;
}

}  // namespace dl::optim
