// fuzz/fuzz_models.h - the small models whose files the checkpoint and GPT-2 targets load (make_corpus.cpp writes
// the seeds from the same models, so the seeds are valid files for them).
#pragma once
#include <vector>

#include "nn/layers.h"
#include "nn/models/gpt2.h"

namespace fuzz {

// Two linear layers (weights 3x4, 2x3, with biases): small enough that mutations reach every field often.
struct TinyModel : dl::nn::Module {
  std::shared_ptr<dl::nn::Linear> fc1, fc2;
  explicit TinyModel(dl::Generator& g) {
    fc1 = register_module("fc1", std::make_shared<dl::nn::Linear>(4, 3, g));
    fc2 = register_module("fc2", std::make_shared<dl::nn::Linear>(3, 2, g));
  }
  std::string type_name() const override { return "TinyModel"; }
};

// A GPT-2 of 2 layers, width 8, 2 heads, 11 tokens, 6 positions.
inline dl::nn::GPT2Config tiny_gpt2() {
  dl::nn::GPT2Config c;
  c.vocab_size = 11, c.n_positions = 6, c.n_embd = 8, c.n_layer = 2, c.n_head = 2;
  return c;
}

inline std::vector<float> flat_weights(const dl::nn::Module& m) {
  std::vector<float> v;
  for (auto& [name, t] : m.state_dict()) {
    dl::Tensor c = t.contiguous();
    v.insert(v.end(), c.data<float>(), c.data<float>() + c.numel());
  }
  return v;
}

}  // namespace fuzz
