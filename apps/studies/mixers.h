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
// The study is an experiment on the harness (apps/common/experiment.h), axes task x mixer x lr, seeds from the harness:
//   studies mixers run  [--preset default|large|FILE] [--tasks listops,text] [--mixers attention,s4d] [--lrs 0.001,0.002]
//                       [--seeds 0,1,2] [--set steps=40].. [--resume] [--jobs 2] [--threads 2] [--quiet] [--out DIR]
//   studies mixers cell --task listops --mixer s4d --lr 0.002 [--seed 0] ...
//   studies mixers list
//   mpirun -n 2 studies mixers run ...                              (each cell data-parallel over the ranks)
// The presets (apps/studies/presets/mixers/*.json) hold the settings (MixersConfig below) per task; `--set` changes
// any field. The old form `studies mixers --seeds 3 --steps 500 --lengths 128,256` still runs: an option first means
// `run`, and the three flags that changed are read as before (mixers_legacy_flags).
// One cell (task, mixer, lr, seed): train `steps` with AdamW (cosine schedule, the S4 parameter groups) on the
// harness's run_phase, checkpointing every eval_every steps; every eval_every steps the validation accuracy, and the
// model with the best validation accuracy so far is saved (<cell>/model.safetensors); the test accuracy is that
// model's ("validation-selected"). Then the cell times its training step (below). The cell's result.json holds it all.
// The report (results.md): per task x mixer, the lr with the best mean validation accuracy over seeds, and at that lr
// mean +- standard error over seeds (n - 1) of the validation and test accuracies.
// Speed: the median time of a full training step (forward, cross-entropy, backward, clip, AdamW) on random tokens,
// at the task's length and batch (ms/step, tokens/s = B L / step), and over a length sweep at a small batch
// (sweep_from, 2 sweep_from, .. sweep_to; the presets sweep in the ListOps cells only). Both are measured in each cell
// after its training (3 rounds of 3 steps after a warm-up, median) and the report takes the median over the chosen
// lr's seeds: a cell is timed alone, not interleaved with the other mixers as before the harness, so a change of the
// machine's load between cells falls on one mixer (and with --jobs the cells time each other's load: time with 1 job).
// Output: the harness's <out>/results.{md,json}, metrics.csv, cells/; plots accuracy (bars), time_vs_length,
// accuracy_vs_time.
// What it is not: a reproduction of any paper's numbers (d_model 64, 2 layers, a few hundred steps on stand-in
// data); it shows which differences stand out of the seed noise at this size.
#pragma once
#include <string>
#include <vector>

#include "apps/common/experiment.h"
#include "nn/models/sequence_backbone.h"

namespace studies {

// The six the presets compare: attention, mixer, fnet, s4d, lightconv, dynamicconv.
extern const std::vector<std::string> kMixers;
// What the mixer axis takes: every registry layer (a new one works here with no change to the study).
const std::vector<std::string>& mixer_names();

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

// The mixer of one block, by name (mixer_names()); an unknown name throws naming the known ones.
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

// One cell's settings: the preset's defaults and per-task sections, then --set. The axes fill task, mixer and lr
// (lr is an axis, "0.002", so that --lrs sweeps it and the report picks per mixer; --set lr is refused).
struct MixersConfig {
  std::string task = "listops", mixer = "attention";
  int seq_len = 256, steps = 150, seed = 0;
  int d_model = 64, layers = 2, heads = 4, ffn_mult = 2, d_state = 32, kernel_size = 15, token_hidden = 32;
  int batch = 16, eval_every = 50, train_size = 2000, val_size = 256, test_size = 512;
  double lr = 2e-3, ssm_lr = 1e-3, weight_decay = 0.01, clip = 1.0;
  int sweep_from = 128, sweep_to = 1024, sweep_batch = 4;  // step time at L = from, 2 from, .. <= to; sweep_to 0: none
  template <class C, class F> static void fields(C& c, F&& f) {
    f("task", c.task), f("mixer", c.mixer), f("seq_len", c.seq_len), f("steps", c.steps), f("seed", c.seed);
    f("d_model", c.d_model), f("layers", c.layers), f("heads", c.heads), f("ffn_mult", c.ffn_mult);
    f("d_state", c.d_state), f("kernel_size", c.kernel_size), f("token_hidden", c.token_hidden), f("batch", c.batch);
    f("eval_every", c.eval_every), f("train_size", c.train_size), f("val_size", c.val_size), f("test_size", c.test_size);
    f("lr", c.lr), f("ssm_lr", c.ssm_lr), f("weight_decay", c.weight_decay), f("clip", c.clip);
    f("sweep_from", c.sweep_from), f("sweep_to", c.sweep_to), f("sweep_batch", c.sweep_batch);
  }
  void validate() const;                   // a ConfigError naming the field
  std::vector<int> sweep_lengths() const;  // sweep_from, 2 sweep_from, .. <= sweep_to (empty when sweep_to is 0)
};

dl::harness::Experiment mixers_experiment();
// The flags of the command line before the harness (cli.h's legacy_args reads them; `--seeds N` is a count there):
// `--steps N` -> `--set steps=N`; `--lengths a,2a,..,b` -> `--set sweep_from=a --set sweep_to=b` (a ConfigError names
// a --lengths that is not a doubling list).
struct LegacyFlags;
const LegacyFlags& mixers_legacy_flags();

}  // namespace studies
