// tests/cuda/train_step.h - one full training step of a tiny sequence classifier on the device against the same step
// on the CPU: the loss, and every parameter after clipping and an AdamW step, agree.
//
// Shared by tests/cuda/test_cuda_train.cpp (a real GPU; skips without one) and tests/cuda_logic/test_device_paths.cpp
// (the host twin of the backend, on every machine), so the first GPU session runs exactly the check that passes here.
// The model: Embedding(V = 13, H = 16) -> ResidualBlock(a registry mixer, layer norm, feed-forward, dropout 0.1)
// -> masked mean over L -> Linear(H, 3), on (B, L) = (3, 8) tokens with padding in two rows. Both copies are built
// from one seed, and their dropout layers draw from generators in the same state, so the device and the CPU drop the
// same elements (the counter-based masks agree bit for bit). "attention" runs with packed=false: the composed path on
// both; "attention_packed" is the default attention, the packed kernel on the CPU against the device's flash primitive
// (both draw one seed per call and use the same counter-hash mask on the weights).
#pragma once
#include <map>
#include <memory>
#include <string>

#include "nn/layers.h"
#include "nn/registry.h"
#include "nn/residual_block.h"
#include "optim/adam.h"
#include "optim/clip.h"
#include "tensor/ops.h"

namespace dl::test {

class TinySequenceClassifier : public nn::Module {
 public:
  // g must outlive the model: its dropout layers keep drawing from it.
  TinySequenceClassifier(const std::string& layer, Generator& g) {
    const nn::LayerEntry& e = nn::find_layer(layer == "attention_packed" ? "attention" : layer);
    nn::BackboneOptions bo;
    bo.dropout = 0.1, bo.max_len = 8, bo.d_state = 8, bo.heads = 2;
    nn::LayerConfig cfg = nn::backbone_config(e, bo);
    if (layer == "attention") cfg["packed"] = false;
    auto mixer = e.make(16, cfg, g);
    embed = register_module("embed", std::make_shared<nn::Embedding>(13, 16, g));
    nn::ResidualBlockOptions ro;
    ro.dropout = 0.1, ro.ffn_hidden = 32;
    block = register_module("block", std::make_shared<nn::ResidualBlock>(mixer, 16, ro, g));
    head = register_module("head", std::make_shared<nn::Linear>(16, 3, g));
  }
  std::string type_name() const override { return "TinySequenceClassifier"; }

  // tokens (B, L) i64, mask (B, L) f32 on the host (the ops that take them move them) -> logits (B, 3)
  Var forward(const Tensor& tokens, const Tensor& mask) {
    Var h = block->forward(embed->forward(tokens), mask);  // (B, L, H)
    Tensor m = mask.to(h.data().device()).unsqueeze(2);    // (B, L, 1)
    return head->forward(div(sum(mul(h, Var(m)), {1}), Var(sum(m, {1}))));  // (B, H) -> (B, 3)
  }

  std::shared_ptr<nn::Embedding> embed;
  std::shared_ptr<nn::ResidualBlock> block;
  std::shared_ptr<nn::Linear> head;
};

struct StepResult {
  double loss = 0, grad_norm = 0;
  std::map<std::string, Tensor> params;  // after the update, on the host
};

// Build (seed 7), move every parameter to `dev`, one forward / backward / clip(0.5) / AdamW(lr 1e-2, wd 0.1) step.
// The layers tested: "attention" and "attention_packed" (the Transformer's mixer), "s4", "s4d", "dlr", "lstm", the convs.
inline StepResult train_one_step(const std::string& layer, Device dev) {
  Generator g(7);
  TinySequenceClassifier m(layer, g);
  for (auto& [name, v] : m.named_parameters()) v.mutable_data() = v.data().to(dev);
  m.move_buffers(dev);
  // eps 1e-3, not 1e-8: attention's key bias has a zero gradient up to rounding (softmax ignores a shift shared by a
  // row's scores), and Adam's g / (|g| + eps) would turn that rounding noise, different on each device, into a full step
  optim::AdamWOptions ao;
  ao.lr = 1e-2, ao.weight_decay = 0.1, ao.eps = 1e-3;
  optim::AdamW opt(m.parameters(), ao);
  Tensor tokens = from_vector(std::vector<int64_t>{1, 5, 7, 2, 12, 0, 3, 3,  //
                                                   4, 4, 9, 11, 6, 1, 0, 0,  //
                                                   8, 2, 10, 5, 0, 0, 0, 0},
                              {3, 8});
  Tensor mask = from_vector(std::vector<float>{1, 1, 1, 1, 1, 1, 1, 1,  //
                                               1, 1, 1, 1, 1, 1, 0, 0,  //
                                               1, 1, 1, 1, 0, 0, 0, 0},
                            {3, 8});
  Tensor labels = from_vector(std::vector<int64_t>{0, 2, 1}, {3});
  Var loss = cross_entropy(m.forward(tokens, mask), labels);  // the labels follow the logits to the device
  loss.backward();
  StepResult r;
  r.loss = loss.item();
  r.grad_norm = optim::clip_grad_norm(m.parameters(), 0.5);
  opt.step();
  for (auto& [name, v] : m.named_parameters()) r.params[name] = v.data().to(Device::cpu);
  return r;
}

}  // namespace dl::test
