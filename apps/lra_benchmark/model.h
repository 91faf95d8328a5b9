// apps/lra_benchmark/model.h - the LRA models: the framework's sequence backbone (nn/models/sequence_backbone.h) with
// the inputs, mixers and heads of the LRA tasks.
//
//   input    tokens (B, L) -> Embedding(vocab + 1, D)          (+1: the [mask] id used by masked SPT)
//            or features (B, L, F) -> Linear(F + 1, D)        (+1: the mask channel of masked SPT; 0 otherwise)
//            + sinusoidal or learned positions when the model is a Transformer with pos = sinusoidal/learned
//   blocks   N x nn::ResidualBlock: [ x = x + dropout(mixer(norm(x), mask)) ;  x = x + dropout(ffn(norm(x))) ]
//            (pre-norm; with prenorm = false the norm is applied after the residual sum instead)
//            mixer = a registry SequenceLayer: "attention" (Transformer), "s4", "s4d", "dlr", or any other
//            registry layer by name, built with the backbone's shared options (nn::backbone_config: dropout,
//            direction, d_state, heads, max_len, each where the layer takes it) and layer_cfg merged over them;
//            the ffn sub-block is left out where the layer does not want one (the state-space layers end in
//            their own GLU projection, as in the S4 repo's LRA models)
//   final    norm
//   heads    classify: masked mean pool (or last real position) -> Linear(D, classes)
//            regress (a regression task, TaskShape::regression): the same pool -> Linear(D, 1), the standardised target
//            retrieval (two sequences, one shared encoder): [a, b, a*b, a-b] -> Linear(4D, D) -> GELU -> Linear(D, classes)
//            pretrain: Linear(D, vocab) for token objectives, Linear(D, F) for continuous (L1) objectives
// Causal self-pretraining makes the mixers causal (attention with a causal mask, S4/DLR unidirectional) for
// both phases, so fine-tuning runs the architecture that was pretrained (Amos et al. 2023, Sec. 3).
// The pretraining head is named "pretrain_head.*" and is left out of the fine-tuning load explicitly.
#pragma once
#include <memory>

#include "config.h"
#include "nn/models/sequence_backbone.h"

namespace lra {

using dl::Generator;
using dl::Tensor;
using dl::Var;

struct TaskShape {
  int vocab = 0;     // token vocabulary (0 when continuous)
  int features = 0;  // per-position features (0 when tokens)
  int classes = 0;
  int max_len = 0;
  bool two_tower = false;  // retrieval
  // A regression task (tasks/regression.h: num_classes 0, one target per example): classes = 1, and the head predicts
  // (target - target_mean) / target_scale, the training split's mean and standard deviation.
  bool regression = false;
  double target_mean = 0, target_scale = 1;
};

struct Inputs {
  Tensor tokens;    // (B, L) i64, or undefined
  Tensor features;  // (B, L, F+1) f32, or undefined
  Tensor mask;      // (B, L) f32, 1 = real position
};

class LraModel : public dl::nn::SequenceBackbone {
 public:
  LraModel(const CellConfig& c, const TaskShape& t, bool causal, Generator& g);
  std::string type_name() const override { return "LraModel"; }

  Var encode(const Inputs& in);                              // (B, L, D) after the final norm
  Var classify(const Inputs& a, const Inputs* b = nullptr);  // (B, classes); b for two-tower tasks
                                                             // (a regression task: (B, 1), standardised)
  // FLOPs of classify on B sequences (B pairs for a two-tower task) of L positions, nn/sequence_layer.h's convention:
  // the backbone's own count (once per tower) plus the head's products on the pooled (B, D); the pretraining head is
  // not part of it. A training step is nn::train_step_flops of it.
  double forward_flops(int64_t batch, int64_t L) const;
  Var pretrain_logits(const Var& h);                                                 // (B, L, vocab) or (B, L, F)
  int64_t pretrain_head_params() const { return pretrain_head_->num_parameters(); }  // not part of the fine-tuned model

  CellConfig cfg;
  TaskShape shape;

 private:
  std::shared_ptr<dl::nn::Linear> head_, head2_, pretrain_head_;
};

}  // namespace lra
