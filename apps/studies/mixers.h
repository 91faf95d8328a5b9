// apps/studies/mixers.h - `studies mixers`: softmax attention, MLP-Mixer token mixing, FNet, S4D and lightweight /
// dynamic convolution as the token mixer of ONE backbone, at (nearly) equal parameter counts, on the same tasks:
// accuracy, and what a training step costs (the "MLP / conv / attention" cycle of Su Jianlin's blog: once MLP-Mixer
// and FNet mixed tokens without attention, the mixer became an interchangeable part).
//
// The backbone (MixerNet), B batch, L length, D = d_model, F = ffn_hidden (per mixer, see below):
//   x = Embedding(vocab, D)[tokens] + P[:L]                         P (max_len, D) learned positions, for every mixer
//   x = x + mixer(LN(x), mask);  x = x + ffn(LN(x))                 x layers (nn::ResidualBlock, pre-norm, the same
//                                                                   norm placement for every mixer; ffn = D -> F -> D)
//   logits = Linear(D, classes)(masked_mean_L(LN(x)))
// The mixers (B, L, D) -> (B, L, D); the registry layers are built by name (nn/registry.cpp) as every backbone does:
//   attention    nn::MultiheadAttention: softmax(Q K^T / sqrt(d)) V over heads; 4 D^2 + 4 D parameters
//   mixer        TokenMlp below: MLP-Mixer's token-mixing half, y = (W2 gelu(W1 x^T + b1) + b2)^T over the position
//                axis (W1 (t, max_len), W2 (max_len, t)); 2 max_len t + t + max_len parameters. The registry's
//                MixerBlock also carries its own channel MLP and residuals; here the backbone's FFN is that half.
//   fnet         nn::FNet: y = Re(FFT_L(FFT_D(x))); no parameters
//   s4d          nn::S4D (bidirectional, d_state N): y = GLU(W (gelu(K * u + D u))); 2 D^2 + 4 D + 4 D N parameters.
//                It ends in its own GLU projection (no FFN of its own in the LRA models); wrapped here so the block
//                has the same FFN as every other mixer.
//   lightconv    nn::GLUConvBlock "lightconv": GLU(W_in x) -> softmax-normalised depthwise conv (heads, K taps)
//                -> W_out; 3 D^2 + 3 D + heads K
//   dynamicconv  the same with the kernel predicted per position (Linear(D, heads K)); 3 D^2 + 3 D + (D + 1) heads K
// Equal parameters: the reference is the attention model with F = ffn_mult D; every other mixer gets the FFN width
// F that brings its total closest to that reference (one unit of F is layers (2 D + 1) parameters, so all totals
// fall within half of that of the reference unless a mixer alone is larger). FNet, with no mixer parameters, gets
// the widest FFN. The table reports every count and F.
// Accuracy: for each task, mixer, lr and seed: train `steps` with AdamW (cosine schedule, the S4 parameter groups)
// on the harness's run_phase; every eval_every steps the validation accuracy, and the test accuracy of the
// checkpoint with the best validation accuracy so far ("validation-selected"). With several lrs, each mixer's lr is
// the one with the best mean validation accuracy over seeds. Mean +- standard error over seeds (n - 1).
// Speed: the median time of a full training step (forward, cross-entropy, backward, clip, AdamW) on random tokens,
// at each task's length and batch (ms/step, tokens/s = B L / step), and over a length sweep at a small batch.
// Output: <out>/mixers.{md,json}; plots accuracy (bars), time_vs_length, accuracy_vs_time.
// What it is not: a reproduction of any paper's numbers (d_model 64, 2 layers, a few hundred steps on stand-in
// data); it shows which differences stand out of the seed noise at this size.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "nn/models/sequence_backbone.h"

namespace studies {

extern const std::vector<std::string> kMixers;  // attention, mixer, fnet, s4d, lightconv, dynamicconv

struct MixerNetConfig {
  std::string mixer = "attention";
  int64_t vocab = 0, classes = 0, max_len = 0;
  int64_t d_model = 64, layers = 2, ffn_hidden = 128;
  int64_t heads = 4;         // attention heads, convolution heads
  int64_t d_state = 32;      // S4D state size N
  int64_t kernel_size = 15;  // convolution taps K
  int64_t token_hidden = 32; // MLP-Mixer token MLP width t
};

// MLP-Mixer token mixing (see the header box): pads to max_len, zeroes padded positions, mixes along L.
class TokenMlp : public dl::nn::SequenceLayer {
 public:
  TokenMlp(int64_t max_len, int64_t hidden, dl::Generator& g);
  std::string type_name() const override { return "TokenMlp"; }
  dl::Var forward(const dl::Var& x, const dl::Tensor& mask) override;  // (B, T, D), T <= max_len
  std::shared_ptr<dl::nn::Mlp> mlp;
  int64_t max_len;
};

// The mixer of one block, by name (kMixers); an unknown name throws naming the known ones.
std::shared_ptr<dl::nn::SequenceLayer> make_mixer(const MixerNetConfig& c, dl::Generator& g);

// The framework's sequence backbone (nn/models/sequence_backbone.h: learned positions, pre-norm LayerNorm blocks,
// a final LayerNorm) with a linear head on the masked mean.
class MixerNet : public dl::nn::SequenceBackbone {
 public:
  MixerNet(const MixerNetConfig& c, dl::Generator& g);
  std::string type_name() const override { return "MixerNet"; }
  dl::Var forward(const dl::Tensor& tokens, const dl::Tensor& mask);  // (B, L) i64, (B, L) f32 -> (B, classes)

  MixerNetConfig cfg;
  std::shared_ptr<dl::nn::Linear> head;
};

int64_t count_parameters(const MixerNetConfig& c);  // of the model c builds
// The FFN width F >= 0 whose model's count is closest to `target` (the count is linear in F).
int64_t matched_ffn_hidden(MixerNetConfig c, int64_t target);

// The median time in ms of `reps` full training steps (after `warmup` untimed ones) on random (B, L) tokens.
double train_step_ms(const MixerNetConfig& c, int batch, int L, int warmup = 1, int reps = 3);

struct MixersOptions {
  std::vector<std::string> mixers = kMixers;
  std::vector<std::string> tasks = {"listops", "text"};
  std::map<std::string, int> seq_len = {{"listops", 128}, {"text", 256}};  // other tasks: 256
  std::map<std::string, int> steps = {{"listops", 250}, {"text", 150}};    // other tasks: 150
  int seeds = 3;
  int d_model = 64, layers = 2, heads = 4, ffn_mult = 2, d_state = 32, kernel_size = 15, token_hidden = 32;
  int batch = 16, eval_every = 50, train_size = 2000, val_size = 256, test_size = 512;
  std::vector<double> lrs = {2e-3};
  double ssm_lr = 1e-3, weight_decay = 0.01, clip = 1.0;
  std::vector<int> lengths = {128, 256, 512, 1024};  // the step-time sweep
  int sweep_batch = 4;
  std::string out = "runs/studies/mixers";
  bool quiet = false;
};
MixersOptions large_mixers_options();  // --preset large
void run_mixers(const MixersOptions& o);

}  // namespace studies
