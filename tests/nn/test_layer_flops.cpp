// tests/nn/test_layer_flops.cpp - the FLOP counts the layers own (SequenceLayer::forward_flops, nn/sequence_layer.h's
// convention: a multiply-add is 2, products and FFTs count, elementwise work does not).
//   hand counts   a few layers, a residual block, two seq2seq models, the sequence backbone and GPT-2 at small shapes,
//                 each number worked out in the comment beside it from the layer's math, not from the code computing it
//   every layer   walks the registry, so a layer added without a count fails here by name: positive, affine in the
//                 batch (the SSM kernels are computed once per forward), and the growth in L its math has
//                 (quadratic for softmax attention and FNet, linear for the linear-time mixers, L log L for the SSMs)
#include <gtest/gtest.h>

#include "nn/attention/attention.h"
#include "nn/conv/conv_seq.h"
#include "nn/models/gpt2.h"
#include "nn/models/seq2seq.h"
#include "nn/models/sequence_backbone.h"
#include "nn/recurrent/lstm.h"
#include "nn/registry.h"
#include "nn/residual_block.h"
#include "nn/ssm/s4d.h"
#include "op_harness.h"

using namespace dl;
using namespace dl::nn;
using dl::test::error_of;

namespace {

std::shared_ptr<SequenceLayer> attention(int64_t d, int64_t heads, bool causal, int64_t window, Generator& g) {
  return make_layer("attention", d, {{"heads", heads}, {"causal", causal}, {"window", window}}, g);
}

}  // namespace

TEST(LayerFlops, AttentionByHand) {
  Generator g(1);
  // C = 8, 2 heads, B = 2, L = 5: projections q k v o 2 x (B L = 10 rows) x 8 x (4 x 8 = 32) = 5120;
  // each (query, key) pair q.k and p v: 2 x 2 x HS(4) x 2 heads = 32.
  EXPECT_EQ(attention(8, 2, false, 0, g)->forward_flops(2, 5), 5120 + 2 * 25 * 32);  // 25 pairs: 6720
  EXPECT_EQ(attention(8, 2, true, 0, g)->forward_flops(2, 5), 5120 + 2 * 15 * 32);   // 1 + 2 + 3 + 4 + 5 = 15 pairs
  // window 1, |t - s| <= 1: 2 + 3 + 3 + 3 + 2 = 13 pairs; causal with window 1: 1 + 2 + 2 + 2 + 2 = 9
  EXPECT_EQ(attention(8, 2, false, 1, g)->forward_flops(2, 5), 5120 + 2 * 13 * 32);
  EXPECT_EQ(attention(8, 2, true, 1, g)->forward_flops(2, 5), 5120 + 2 * 9 * 32);
}

TEST(LayerFlops, ConvolutionsLstmAndS4DByHand) {
  Generator g(2);
  // lightconv C = 8, K = 3, B = 1, L = 4 (4 rows): input_linear 2 x 4 x 8 x 16 = 1024, output_linear 2 x 4 x 8 x 8 = 512,
  // taps 2 x 4 x 8 x 3 = 192.
  EXPECT_EQ(make_layer("lightconv", 8, {{"kernel_size", 3}}, g)->forward_flops(1, 4), 1024 + 512 + 192);
  // dynamicconv, 2 heads: also weight_linear 8 -> 2 x 3 = 6, 2 x 4 x 8 x 6 = 384.
  EXPECT_EQ(make_layer("dynamicconv", 8, {{"kernel_size", 3}, {"num_heads", 2}}, g)->forward_flops(1, 4), 1024 + 512 + 192 + 384);
  // LSTM I = Hd = 4, B = 2, L = 3 (6 rows), two layers: per layer x W_ih^T and h W_hh^T, 2 x 6 x 4 x 16 = 768 each.
  EXPECT_EQ(make_layer("lstm", 4, {{"num_layers", 2}}, g)->forward_flops(2, 3), 4 * 768);
  // S4D H = 4, N = 8 (N2 = 4), causal, B = 1, L = 4. FFT length n = 8, a real FFT 2.5 x 8 x log2 8 = 60 FLOPs.
  // Per (b, h): u's FFT and the inverse 120, the spectra's product 5 complex products x 6 = 30; per h the kernel's
  // FFT 60: 4 x 150 + 4 x 60 = 840. output_linear H -> 2H: 2 x 4 x 4 x 8 = 256.
  // Kernel (Vandermonde): a complex multiply-add (8) per (c = 1, h = 4, n = 4, l = 4): 512.
  EXPECT_EQ(make_layer("s4d", 4, {{"d_state", 8}}, g)->forward_flops(1, 4), 840 + 256 + 512);
}

TEST(LayerFlops, ResidualBlockAddsItsFeedForward) {
  Generator g(3);
  ResidualBlockOptions o;
  o.ffn_hidden = 16;
  auto mixer = attention(8, 2, false, 0, g);
  ResidualBlock block(mixer, 8, o, g);
  // the attention's 6720 (above) and fc1, fc2: 2 x 2 x (10 rows) x 8 x 16 = 5120; the norms are not counted.
  EXPECT_EQ(block.forward_flops(2, 5), 6720 + 5120);
  o.ffn_hidden = 0;
  EXPECT_EQ(ResidualBlock(mixer, 8, o, g).forward_flops(2, 5), 6720);
}

TEST(LayerFlops, Seq2SeqByHand) {
  // C = 8, d_ff = 16, V = 300, 2 heads, one encoder and one decoder block, K = 3; B = 2, S = 6, T = 4.
  Seq2SeqConfig c;
  c.d_model = 8, c.d_ff = 16, c.num_layers = 1, c.num_decoder_layers = 1, c.num_heads = 2, c.kernel_sizes = {3};
  // Shared by both: the encoder's feed-forward 2 x 2 x 12 x 8 x 16 = 6144; the decoder's 2 x 2 x 8 x 8 x 16 = 4096;
  // the cross-attention q, o on 8 rows 2 x 8 x 8 x 16 = 2048, k, v on 12 rows 3072, 2 x 24 pairs x 32 = 1536;
  // the tied head 2 x 8 x 8 x 300 = 38400.
  const double shared = 6144 + 4096 + (2048 + 3072 + 1536) + 38400;
  Generator g(4);
  c.mixer = "lightconv";
  // lightconv on 12 rows 2 x 12 x 8 x (16 + 8 + 3) = 5184, on 8 rows 2 x 8 x 8 x 27 = 3456
  EXPECT_EQ(Seq2SeqModel(c, g).forward_flops(2, 6, 4), shared + 5184 + 3456);
  c.mixer = "transformer";
  // T5 attention: encoder q, o + k, v 2 x 12 x 8 x 32 = 6144 and 2 x 36 pairs x 32 = 2304; decoder 2 x 8 x 8 x 32 = 4096
  // and the causal 1 + 2 + 3 + 4 = 10 pairs, 2 x 10 x 32 = 640.
  EXPECT_EQ(Seq2SeqModel(c, g).forward_flops(2, 6, 4), shared + 6144 + 2304 + 4096 + 640);
}

// The backbone's count is its parts': the features' input projection and each block's own count (the blocks are the
// ResidualBlock of the test above, 6720 + 5120 each); the embedding lookup, positions, norms and pools are free.
TEST(LayerFlops, SequenceBackboneIsTheSumOfItsParts) {
  SequenceBackboneOptions o;
  o.features = 3, o.d_model = 8, o.layers = 2, o.block.ffn_hidden = 16;
  Generator g(5);
  const MixerFactory mixer = [](int64_t d, Generator& gg) { return attention(d, 2, false, 0, gg); };
  SequenceBackbone features(o, mixer, g);
  // in_proj on B L = 10 rows: 2 x 10 x 3 x 8 = 480
  EXPECT_EQ(features.forward_flops(2, 5), 480 + 2 * (6720 + 5120));
  o.vocab = 20, o.features = 0, o.positions = "learned", o.max_len = 5;  // a lookup instead: free
  SequenceBackbone tokens(o, mixer, g);
  EXPECT_EQ(tokens.forward_flops(2, 5), 2 * (6720 + 5120));
}

// GPT-2, C = 8, 2 heads, 2 blocks, V = 300, B = 2, T = 5 (B T = 10 rows). A block: c_attn 2 x 10 x 8 x 24 = 3840, the
// causal 15 pairs x 4 C = 480 per sequence (960), c_proj 2 x 10 x 8 x 8 = 1280, the MLP 2 x (2 x 10 x 8 x 32) = 10240:
// 16320. The tied head: 2 x 10 x 8 x 300 = 48000; wte and wpe are lookups.
TEST(LayerFlops, Gpt2ByHand) {
  GPT2Config c;
  c.vocab_size = 300, c.n_positions = 8, c.n_embd = 8, c.n_head = 2, c.n_layer = 2;
  Generator g(6);
  GPT2Model m(c, g);
  EXPECT_EQ(m.transformer->forward_flops(2, 5), 2 * 16320);
  EXPECT_EQ(m.forward_flops(2, 5), 2 * 16320 + 48000);
}

// Every registry layer has a count: a new layer without one fails here with its name (the default's message).
TEST(LayerFlops, EveryRegistryLayerCounts) {
  const int64_t L = 32;
  for (const LayerEntry& e : layer_registry()) {
    Generator g(5);
    LayerConfig cfg = LayerConfig::object();
    if (e.takes("max_len")) cfg["max_len"] = 4 * L;
    if (e.takes("d_state") && e.name != "ema") cfg["d_state"] = 8;
    auto layer = e.make(8, cfg, g);
    double f1 = 0, f2 = 0, f3 = 0, f2L = 0, f4L = 0;
    try {
      f1 = layer->forward_flops(1, L), f2 = layer->forward_flops(2, L), f3 = layer->forward_flops(3, L);
      f2L = layer->forward_flops(1, 2 * L), f4L = layer->forward_flops(1, 4 * L);
    } catch (const std::exception& ex) {
      ADD_FAILURE() << "layer '" << e.name << "' has no FLOP count: " << ex.what();
      continue;
    }
    EXPECT_GT(f1, 0) << e.name;
    // affine in the batch: the same increment per sequence (a kernel computed once per forward is the constant)
    EXPECT_GT(f2, f1) << e.name;
    EXPECT_EQ(f3 - f2, f2 - f1) << e.name;
    if (e.name == "attention" || e.name == "fnet") {  // a L + b L^2 with b > 0: f(4L) - 4 f(L) = 6 (f(2L) - 2 f(L))
      EXPECT_GT(f2L - 2 * f1, 0) << e.name;
      EXPECT_EQ(f4L - 4 * f1, 6 * (f2L - 2 * f1)) << e.name;
    } else if (e.name == "mixer") {  // token mixing runs over max_len positions whatever L is
      EXPECT_EQ(f2L, f1) << e.name;
    } else if (e.family == LayerFamily::state_space) {  // FFT convolution: L log L, between linear and quadratic
      EXPECT_GT(f2L, 2 * f1) << e.name;
      EXPECT_LT(f2L, 3 * f1) << e.name;
    } else {  // linear attention, performer, the convolutions, the LSTM: linear in L
      EXPECT_EQ(f2L, 2 * f1) << e.name;
    }
  }
}

// A layer without a count is named, never counted as zero.
TEST(LayerFlops, LayerWithoutCountIsNamed) {
  struct Uncounted : SequenceLayer {
    std::string type_name() const override { return "Uncounted"; }
    Var forward(const Var& x, const Tensor&) override { return x; }
  };
  Uncounted u;
  std::string msg = error_of([&] { u.forward_flops(1, 4); });
  EXPECT_NE(msg.find("layer 'Uncounted' has no FLOP count"), std::string::npos) << msg;
  // a model with such a mixer cannot report a count either
  ResidualBlockOptions o;
  Generator g(6);
  ResidualBlock block(std::make_shared<Uncounted>(), 4, o, g);
  msg = error_of([&] { block.forward_flops(1, 4); });
  EXPECT_NE(msg.find("'Uncounted'"), std::string::npos) << msg;
}

TEST(LayerFlops, FftAndTrainingConvention) {
  EXPECT_EQ(fft_flops(8), 5 * 8 * 3);
  EXPECT_EQ(rfft_flops(1024), 2.5 * 1024 * 10);
  EXPECT_EQ(fft_flops(1), 0);
  EXPECT_EQ(train_step_flops(10), 30);
  EXPECT_EQ(matmul_flops(2, 3, 4), 48);
}
