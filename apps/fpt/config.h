// apps/fpt/config.h - the settings of one FPT cell (task, arm, seed) and the app's axes.
//
// Arms (Lu et al. 2021, "Pretrained Transformers as Universal Computation Engines"; which parameters train):
//   fpt         language-pretrained transformer, attention and feed-forward frozen; input, output, positions and
//               layer norms train (the paper's FPT)
//   full        the same architecture from random weights, everything trained (the paper's "Full transformer")
//   full_lang   the language-pretrained transformer, everything fine-tuned (Rothermel et al. 2021's strong arm)
//   lstm        a 3-layer LSTM with layer norm, everything trained (the paper's "Full LSTM")
//   random      random weights, frozen as FPT (the paper's Table 2 "Random")
//   bitmem      pretrained on bit memory, frozen as FPT (Table 2 "Bit memory")
//   out_only, out_in, out_in_pos      the parameter ablations: output; + input; + positions (fpt = + layer norms)
//   fpt_ff, fpt_attn                  FPT with the feed-forward, or the attention, unfrozen as well
//   fpt-L<k>, random-L<k>             fpt or random with a transformer of k layers (k in kDepths), each depth with
//                                     its own cached LM: the depth study (presets/depth.json). The arm's k wins over
//                                     a `layers` from the preset or --set.
// Presets (apps/fpt/presets/<name>.json) follow the harness's format with the axes task and arm.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "apps/common/config.h"

namespace fpt {

using dl::harness::ConfigError;
using json = nlohmann::json;

struct CellConfig {
  std::string task = "bit_xor", arm = "fpt";
  // data
  int train_size = 0, val_size = 0, test_size = 0;  // 0: the task's default
  int bits = 0, patterns = 0, patch = 0;            // bit tasks: n bits per string, strings, bits per token (0: default)
                                                    // digits: the patch side (0: 2, so 16 tokens of 2x2 pixels)
  int seq_len = 0;                                  // ListOps: longest sequence; homology: the window (0: default)
  std::string data_path;                            // official files where the task reads them; homology: HMM file/folder
  std::string families;                             // homology: comma-separated family names (empty: every one)
  // the transformer (must match the pretrained one) and the LSTM
  int layers = 4, d_model = 128, heads = 4, lstm_layers = 3;
  double dropout = 0.1;
  bool masked_readout = false;  // classification: read the last REAL token (the paper reads the last position)
  // fine-tuning
  int batch = 16, accum = 1, steps = 1000, eval_every = 250, eval_batches = 0, checkpoint_every = 250, seed = 0;
  double lr = 1e-3, clip = 1.0;
  // the language-pretrained transformer: a causal byte LM on packaged English text, built once and cached
  int lm_steps = 2000, lm_context = 128, lm_batch = 32;
  double lm_lr = 1e-3;
  std::string pretrained;  // a Hugging Face GPT-2 safetensors file to use instead of our own LM
  // the bit-memory-pretrained transformer (arm bitmem): steps of full training on bit memory, cached too
  int bitmem_steps = 1000;

  template <class C, class F> static void fields(C& c, F&& f) {
    f("task", c.task), f("arm", c.arm), f("train_size", c.train_size), f("val_size", c.val_size), f("test_size", c.test_size);
    f("bits", c.bits), f("patterns", c.patterns), f("patch", c.patch), f("seq_len", c.seq_len), f("data_path", c.data_path);
    f("families", c.families);
    f("layers", c.layers), f("d_model", c.d_model), f("heads", c.heads), f("lstm_layers", c.lstm_layers);
    f("dropout", c.dropout), f("masked_readout", c.masked_readout);
    f("batch", c.batch), f("accum", c.accum), f("steps", c.steps), f("eval_every", c.eval_every),
        f("eval_batches", c.eval_batches);
    f("checkpoint_every", c.checkpoint_every), f("seed", c.seed), f("lr", c.lr), f("clip", c.clip);
    f("lm_steps", c.lm_steps), f("lm_context", c.lm_context), f("lm_batch", c.lm_batch), f("lm_lr", c.lm_lr);
    f("pretrained", c.pretrained), f("bitmem_steps", c.bitmem_steps);
  }
  json to_json() const { return dl::harness::config_to_json(*this); }
  static CellConfig from_json(const json& j, const std::string& where);
  void validate() const;
  std::string key() const { return task + "/" + arm; }
};

extern const std::vector<std::string> kTasks;  // bit_memory, bit_xor, listops, image_patches, digits, homology
extern const std::vector<std::string> kArms;   // the arms without a depth (the list above)
extern const std::vector<int> kDepths;         // the depths an arm "<fpt|random>-L<k>" may name
// "fpt-L3" -> {"fpt", 3}; any other arm -> {arm, 0}.
std::pair<std::string, int> split_depth(const std::string& arm);
std::string presets_dir();
std::vector<dl::harness::Axis> axes();
// What the arm axis means beyond its field: an arm "<fpt|random>-L<k>" is arm fpt or random with k layers.
void depth_of_arm(CellConfig& c);
// The harness's typed resolver (apps/common/config.h) with these axes and depth_of_arm: a preset with every cell it
// names resolved, and one cell's config.
dl::harness::Preset load_preset(const std::string& name_or_path);
CellConfig resolve_cell(const dl::harness::Preset& p, const std::string& task, const std::string& arm,
                        const std::vector<std::string>& overrides);

}  // namespace fpt
