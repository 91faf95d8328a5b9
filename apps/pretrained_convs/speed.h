// apps/pretrained_convs/speed.h - `pretrained_convs speed`: training steps/s and analytic FLOPs per step of every
// model against the input length (the paper's speed and FLOPs figures), measured side by side in one run.
//
// Workload: source length L in `lengths`, target length `target` (a classification-style output), batch
// tokens / L sequences (at least 1) so each step sees about the same number of source tokens; random byte ids.
// One warm-up step, then steps until `min_seconds` have passed (at least 2); the median step time is reported.
// FLOPs per training step = 3 x the forward's, the forward's counted by the model itself (nn::Seq2SeqModel::
// forward_flops, each mixer's SequenceLayer::forward_flops; the convention is nn/sequence_layer.h's: a multiply-add
// is 2, matrix products, attention pairs and convolution taps count, norms and elementwise work do not), so any
// registry mixer is counted with no formula here. Per encoder layer (L positions, C = d_model, F = d_ff, H heads,
// K taps), in multiply-adds:
//     transformer   4 L C^2 (q k v o) + 2 L^2 C (scores, weighted sum) + 2 L C F
//     lightconv     3 L C^2 (GLU in 2C, out C) + L C K + 2 L C F
//     dynamicconv   3 L C^2 + L C H K (kernel prediction) + L C K + 2 L C F
//     dilatedconv   4 L C^2 (+ pointwise) + L C K + 2 L C F
//   per decoder layer (T positions): the same with T for L (causal: T (T + 1) / 2 query-key pairs, not T^2), plus
//   cross-attention 2 T C^2 + 2 L C^2 + 2 T L C;  head: T C V
// Output: <out>/speed.json, speed.md, plots/speed_time.png and plots/speed_flops.png (log-log), and the slope of
// log(time) against log(L) per model over the lengths >= 256 (1: linear, 2: quadratic).
#pragma once
#include <string>
#include <vector>

#include "config.h"

namespace pconv {

struct SpeedOptions {
  std::vector<int> lengths = {64, 128, 256, 512, 1024, 2048, 4096};
  std::vector<std::string> models = {"transformer", "lightconv", "dynamicconv", "dilatedconv"};
  int tokens = 8192, target = 16;
  double min_seconds = 1.0;
  std::string out = "runs/pretrained_convs_speed";
};

// The training FLOPs of `model` built from c with feed-forward width d_ff, for B pairs of L source and T target
// positions: 3 x the model's own forward count (it builds the model to ask it; run_speed asks the model it times).
double train_flops(const CellConfig& c, const std::string& model, int64_t d_ff, int64_t B, int64_t L, int64_t T);
void run_speed(const CellConfig& base, const SpeedOptions& o);

}  // namespace pconv
