// apps/explain/subject.h - the model explain looks at, rebuilt from the file of the app that wrote it, with the one
// input it runs. Each app has one opener here; explain.cpp knows nothing else about the apps.
//
// Which app wrote a file: every app's cell saves model.safetensors through harness::save_cell_model, with the
// metadata "dl.app" = the app's name and "dl.config" = its CellConfig as JSON. Files written before "dl.app" existed
// are told apart by their configs' fields, which no other app's config has:
//   lra_benchmark      "ssm_lr"      (LraModel, apps/lra_benchmark/model.h; input: a test example of the task)
//   fpt                "arm"         (FptModel, apps/fpt/model.h; input: a test example of the task)
//   pretrained_convs   "max_src"     (Seq2SeqModel, nn/models/seq2seq.h; input: a test example, or --text: the
//                                     encoder, which is what reads the input, is run)
// The config is then parsed by the app's own from_json (which rejects unknown fields), the model built by the
// app's own constructor and the weights loaded strictly: a file whose tensors do not match is an error.
#pragma once
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autograd/variable.h"
#include "explain.h"
#include "nn/module.h"

namespace explain {

// One attention layer's weights for the input: (1, NH, T, S).
struct NamedWeights {
  std::string layer;
  dl::Var w;
  bool target_queries = false, target_keys = false;  // the decoder's positions, not the input's (seq2seq)
};

// What explain pictures is found by asking every module of `model` (nn/module.h's hooks, answered in nn/inspect.h's
// forms): the attention weights and predicted convolution taps it records while `run` runs, its fixed taps and its
// state space kernels. An opener knows its app's model and input; it never names a layer type.

struct Subject {
  std::string app, cell, input;  // the app, its cell key, what the input is (in words)
  std::shared_ptr<dl::nn::Module> model;
  int64_t length = 0;    // the input's length: the SSM kernels are shown at this length
  int64_t real_len = 0;  // real (unpadded) positions of the input; the maps are cut to them
  std::vector<std::string> labels;  // what each position holds ("[MAX", "7", a byte, a bit), where known
  std::vector<std::string> target_labels;  // seq2seq: what each decoder input position holds
  // One forward pass of the input (grad mode as the caller set it).
  std::function<dl::Var()> run;
  // Which axes of a layer's map are the decoder's positions (a seq2seq model), or null: every axis is the input's.
  std::function<void(NamedWeights&)> mark_axes;
};

// "lra_benchmark", "fpt", "pretrained_convs", or "" when the config is none of theirs.
std::string detect_app(const nlohmann::json& config);

// Opens `path` (a ConfigError naming the file if no app wrote it), rebuilds the model, loads it, picks the input.
Subject open_subject(const std::string& path, const Options& o);

// Runs the subject's input, writes <out_dir>/ (maps, kernels, explain.md) and returns what it showed
// (explain_model_file = open_subject, then this; a test gives it a model of its own).
Report explain_subject(Subject& s, const Options& o, const std::string& model_file, const std::string& out_dir);

}  // namespace explain
