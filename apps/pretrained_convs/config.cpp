// apps/pretrained_convs/config.cpp - the cell's fields, their checks and the axes (see config.h).
#include "config.h"

#include <map>
#include <mutex>

#include "data.h"
#include "nn/registry.h"

namespace pconv {

namespace harness = dl::harness;

const std::vector<std::string> kTasks = {"sentiment", "topic", "questions", "compositional", "pair_edit", "textfile", "imdb"};
const std::vector<std::string> kRegimes = {"scratch", "pretrained"};

std::string presets_dir() { return std::string(DL_SOURCE_DIR) + "/apps/pretrained_convs/presets"; }
const std::vector<std::string>& models() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v = {"transformer"}, pair;
    for (auto& e : dl::nn::layer_registry()) v.push_back(e.name);
    for (auto& m : v) pair.push_back(m + "_xattn");
    v.insert(v.end(), pair.begin() + 1, pair.end());  // the pair block is the convolutions' fix: not for T5 itself
    return v;
  }();
  return names;
}

std::vector<harness::Axis> axes() { return {{"task", kTasks}, {"model", models()}, {"regime", kRegimes}}; }

// Whether a registry layer can be this shell's mixer: built once at a toy size as the encoder (bidirectional where it
// can be) and the decoder (causal) build it; the reason it cannot (the layer's or the shell's own error), or "".
static std::string mixer_problem(const std::string& mixer) {
  static std::mutex mu;
  static std::map<std::string, std::string> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(mixer);
  if (it != cache.end()) return it->second;
  dl::nn::Seq2SeqConfig s;
  s.vocab_size = 8, s.d_model = 8, s.d_ff = 4, s.num_layers = 1, s.num_decoder_layers = 1, s.num_heads = 2, s.mixer = mixer;
  std::string problem;
  try {
    dl::Generator g(0);
    dl::nn::Seq2SeqModel m(s, g);
  } catch (const std::exception& e) {
    problem = e.what();
  }
  return cache[mixer] = problem;
}

std::string CellConfig::mixer() const { return pair_attention() ? model.substr(0, model.size() - 6) : model; }

CellConfig CellConfig::from_json(const json& j, const std::string& where) {
  return harness::config_from_json<CellConfig>(j, where);
}

void CellConfig::validate() const {
  auto positive = [&](const char* name, double v) { harness::require_positive(key(), name, v); };
  positive("d_model", d_model), positive("d_ff", d_ff), positive("layers", layers), positive("decoder_layers", decoder_layers);
  positive("heads", heads), positive("batch", batch), positive("steps", steps), positive("lr", lr), positive("max_src", max_src);
  positive("pt_batch", pt_batch), positive("pt_len", pt_len), positive("pt_lr", pt_lr), positive("warmup", warmup);
  positive("pt_warmup", pt_warmup), positive("pt_windows", pt_windows), positive("eval_examples", eval_examples);
  if (d_model % heads)
    throw ConfigError(key() + ": d_model " + std::to_string(d_model) + " is not divisible by heads " + std::to_string(heads));
  if (pt_steps < 0) throw ConfigError(key() + ": field 'pt_steps' must be >= 0");
  if (density <= 0 || density >= 1)
    throw ConfigError(key() + ": field 'density' must be in (0, 1), found " + dl::harness::number_text(density));
  if (mean_span < 1) throw ConfigError(key() + ": field 'mean_span' must be >= 1, found " + dl::harness::number_text(mean_span));
  if (pt_len * density / mean_span > kSentinels - 1)
    throw ConfigError(key() + ": pt_len " + std::to_string(pt_len) + " at density " + dl::harness::number_text(density) +
                      " and mean_span " + dl::harness::number_text(mean_span) + " needs more than the " +
                      std::to_string(kSentinels) + " sentinels the vocabulary has");
  for (int64_t k : parse_int_list(kernel_sizes, "kernel_sizes"))
    if (k % 2 == 0)
      throw ConfigError(key() + ": field 'kernel_sizes': " + std::to_string(k) +
                        " is even; the encoder's convolutions are centred, so every kernel size must be odd");
  parse_int_list(dilations, "dilations");
  if (mixer() != "transformer")
    if (const std::string why = mixer_problem(mixer()); !why.empty())
      throw ConfigError(key() + ": layer '" + mixer() + "' cannot be the encoder-decoder's mixer: " + why);
  if ((task == "textfile" || task == "imdb") && data_path.empty())
    throw ConfigError(key() + ": task '" + task + "' reads its files from data_path (--set data_path=DIR)");
}

dl::nn::Seq2SeqConfig seq2seq_config(const CellConfig& c, const std::string& mixer, bool pair_attention) {
  dl::nn::Seq2SeqConfig s;
  s.vocab_size = vocab_size(), s.d_model = c.d_model, s.d_ff = c.d_ff, s.num_layers = c.layers;
  s.num_decoder_layers = c.decoder_layers, s.num_heads = c.heads, s.mixer = mixer;
  s.kernel_sizes = parse_int_list(c.kernel_sizes, "kernel_sizes"), s.dilations = parse_int_list(c.dilations, "dilations");
  s.pair_attention = pair_attention;
  return s;
}

CellConfig resolve_cell(const harness::Preset& p, const std::vector<std::string>& values,
                        const std::vector<std::string>& overrides) {
  return harness::resolve_cell<CellConfig>(p, values, overrides);
}

harness::Preset load_preset(const std::string& name_or_path) {
  return harness::load_checked_preset<CellConfig>(name_or_path, presets_dir(), axes());
}

}  // namespace pconv
