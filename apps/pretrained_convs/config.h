// apps/pretrained_convs/config.h - the settings of one cell (task, model, regime, seed) and the app's axes.
//
// Models (nn/models/seq2seq.h, one encoder-decoder shell, the mixer by name):
//   transformer                 T5: self-attention with relative position bias
//   lightconv, dynamicconv, dilatedconv   the convolutional seq2seq models of Tay et al. 2021 (GLU projection,
//                               softmax-normalised depthwise convolution; the decoder's convolutions are causal and
//                               it keeps cross-attention to the encoder)
//   any other registry layer    (nn/registry.h) by its name, e.g. s4d, ema, lstm: the same shell with that mixer; a
//                               layer that cannot run causally (fnet) or needs a fixed length (mixer) is refused
//                               when the cell is resolved, with the reason
//   <layer>_xattn               the same with one pair-attention block on top of the encoder (segments attend to
//                               each other): the paper's fix for tasks that relate two sequences
// With match_params (default on) a convolutional model's d_ff is chosen so that its parameter count equals the
// Transformer's of the same depth and width (within one d_ff step); the counts are printed and stored.
// Regimes: scratch (fine-tune from random weights), pretrained (T5 span corruption on packaged English text first,
// built once per model and configuration and cached: pretrain.h).
#pragma once
#include <string>
#include <vector>

#include "apps/common/config.h"
#include "nn/models/seq2seq.h"

namespace pconv {

using dl::harness::ConfigError;
using json = nlohmann::json;

struct CellConfig {
  std::string task = "sentiment", model = "lightconv", regime = "scratch";
  // data
  int train_size = 0, val_size = 0, test_size = 0;  // 0: all the task has (capped by the task's default)
  int max_src = 128;                                // input bytes kept (with eos)
  std::string data_path;                            // textfile / imdb
  // model
  int d_model = 128, d_ff = 512, layers = 2, decoder_layers = 2, heads = 4;
  std::string kernel_sizes = "7", dilations = "1,2,4,8";  // per layer, the last repeats
  bool match_params = true;
  // fine-tuning (AdamW, inverse square root after warmup)
  int batch = 32, steps = 600, warmup = 100, eval_every = 200, checkpoint_every = 200, eval_examples = 200, seed = 0;
  double lr = 1e-3, weight_decay = 0.01, clip = 1.0;
  // pretraining: T5 span corruption on packaged English text (tasks/english.h)
  int pt_steps = 1000, pt_batch = 32, pt_len = 128, pt_warmup = 200, pt_windows = 40000;
  double pt_lr = 1e-3, density = 0.15, mean_span = 3.0;
  std::string pretrained;  // a file to fine-tune from instead of the cached pretraining

  template <class C, class F> static void fields(C& c, F&& f) {
    f("task", c.task), f("model", c.model), f("regime", c.regime), f("train_size", c.train_size), f("val_size", c.val_size);
    f("test_size", c.test_size), f("max_src", c.max_src), f("data_path", c.data_path), f("d_model", c.d_model);
    f("d_ff", c.d_ff), f("layers", c.layers), f("decoder_layers", c.decoder_layers), f("heads", c.heads);
    f("kernel_sizes", c.kernel_sizes), f("dilations", c.dilations), f("match_params", c.match_params);
    f("batch", c.batch), f("steps", c.steps), f("warmup", c.warmup), f("eval_every", c.eval_every);
    f("checkpoint_every", c.checkpoint_every), f("eval_examples", c.eval_examples), f("seed", c.seed), f("lr", c.lr);
    f("weight_decay", c.weight_decay), f("clip", c.clip), f("pt_steps", c.pt_steps), f("pt_batch", c.pt_batch);
    f("pt_len", c.pt_len), f("pt_warmup", c.pt_warmup), f("pt_windows", c.pt_windows), f("pt_lr", c.pt_lr);
    f("density", c.density), f("mean_span", c.mean_span), f("pretrained", c.pretrained);
  }
  json to_json() const { return dl::harness::config_to_json(*this); }
  static CellConfig from_json(const json& j, const std::string& where);
  void validate() const;
  std::string key() const { return task + "/" + model + "/" + regime; }
  std::string mixer() const;  // the model without "_xattn"
  bool pair_attention() const { return model.ends_with("_xattn"); }
};

extern const std::vector<std::string> kTasks, kRegimes;
// The model axis: "transformer", every registry layer, and each layer's "_xattn" twin.
const std::vector<std::string>& models();
std::string presets_dir();
std::vector<dl::harness::Axis> axes();
// The harness's typed resolver (apps/common/config.h) with these axes: a preset with every cell it names resolved, and
// one cell's config (values: task, model, regime).
dl::harness::Preset load_preset(const std::string& name_or_path);
CellConfig resolve_cell(const dl::harness::Preset& p, const std::vector<std::string>& values,
                        const std::vector<std::string>& overrides);

using dl::harness::parse_int_list;  // "3,7,15" -> {3, 7, 15} (apps/common/config.h)
// The model of a cell (d_ff as given: model.h applies match_params).
dl::nn::Seq2SeqConfig seq2seq_config(const CellConfig& c, const std::string& mixer, bool pair_attention);

}  // namespace pconv
