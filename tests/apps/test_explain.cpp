// tests/apps/test_explain.cpp - apps/explain on a tiny model of each app, saved as the app's cell saves it (the
// config in the "dl.config" metadata): the parameter counts it prints equal the model's and a hand count, every
// attention map it plots has rows that sum to 1, the S4D kernel it plots is the layer's response to a unit impulse
// and the diagonal-SSM formula computed here by hand, the frequency response of a 4-tap kernel is the hand DFT, a
// file from no app is an error naming the file; a layer explain has never heard of is shown through the capability
// hooks it answers (nn/module.h); and a miniature run of the executable on a cell the app trained.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app_test_util.h"
#include "apps/common/results.h"
#include "apps/explain/explain.h"
#include "apps/explain/subject.h"
#include "apps/fpt/data.h"
#include "apps/fpt/model.h"
#include "apps/lra_benchmark/data.h"
#include "apps/lra_benchmark/model.h"
#include "autograd/linalg.h"
#include "apps/pretrained_convs/data.h"
#include "apps/pretrained_convs/model.h"
#include "nn/ssm/s4d.h"

namespace fs = std::filesystem;
using dl::Tensor;
using dl::Var;

namespace {

explain::Options quiet_options(const std::string& out) {
  explain::Options o;
  o.out = out, o.plots = false;  // the numbers, not the pictures: gnuplot is not needed here
  return o;
}

lra::CellConfig tiny_lra(const std::string& model, const std::string& regime) {
  lra::CellConfig c;
  c.task = "listops", c.model = model, c.regime = regime;
  c.d_model = 4, c.layers = 1, c.heads = 2, c.ffn_mult = 2, c.d_state = 2, c.dropout = 0;
  c.seq_len = 32, c.train_size = 16, c.val_size = 4, c.test_size = 4;
  return c;
}

// Saves a fresh model as the apps' cells did before "dl.app": weights + its config in the metadata.
template <class M, class C> std::string save_cell(const M& m, const C& c, const std::string& dir) {
  const std::string path = dir + "/model.safetensors";
  m.save(path, {{"format", "pt"}, {"dl.cell", c.key()}, {"dl.config", c.to_json().dump()}});
  return path;
}

void expect_rows_sum_to_one(const explain::Report& r) {
  ASSERT_FALSE(r.heads.empty());
  for (const explain::HeadMap& h : r.heads)
    for (size_t q = 0; q < h.w.size(); q++) {
      double s = 0;
      for (double v : h.w[q]) {
        EXPECT_GE(v, 0.0);
        s += v;
      }
      EXPECT_NEAR(s, 1.0, 1e-5) << h.layer << " head " << h.head << " row " << q;
    }
}

std::string thousands(int64_t n) {  // as explain prints counts
  std::string s = std::to_string(n);
  for (int i = (int)s.size() - 3; i > 0; i -= 3) s.insert((size_t)i, ",");
  return s;
}

}  // namespace

// A 1-layer Transformer whose parameters we count by hand: D = 4, ffn 8, vocab V, 10 classes.
TEST(Explain, LraTransformerCountsAndAttentionRows) {
  const std::string d = dl::test::app_temp_dir("explain_lra_tf");
  lra::CellConfig c = tiny_lra("transformer", "scratch");
  const dl::tasks::TaskData& data = lra::task_data(c);
  lra::TaskShape shape = lra::shape_of(data);
  dl::Generator g(0);
  lra::LraModel m(c, shape, false, g);
  const std::string path = save_cell(m, c, d);
  explain::Report r = explain::explain_model_file(path, quiet_options(d + "/out"));

  const int64_t D = 4, F = 8, V = shape.vocab, K = shape.classes;
  const int64_t attention = 3 * D * D + 3 * D + D * D + D;  // in_proj (3D, D) + bias, out_proj (D, D) + bias
  const int64_t block = attention + 2 * D + 2 * D + (D * F + F) + (F * D + D);  // + norm1, norm2, fc1, fc2
  const int64_t hand = (V + 1) * D + block + 2 * D + (D * K + K) + (D * V + V);  // embed, final norm, head, pretrain head
  EXPECT_EQ(r.total_params, hand);
  EXPECT_EQ(r.total_params, m.num_parameters());
  EXPECT_EQ(r.modules.at(0).params, hand);
  for (const explain::ModuleCount& mc : r.modules) {
    if (mc.path == "blocks.0.mixer") {
      EXPECT_EQ(mc.params, attention);
    }
    if (mc.path == "blocks.0") {
      EXPECT_EQ(mc.params, block);
    }
  }
  EXPECT_NE(r.text.find("total " + thousands(hand) + " parameters"), std::string::npos) << r.text;
  EXPECT_EQ(r.app, "lra_benchmark");
  // one map per head, the example's length square; softmax rows
  ASSERT_EQ(r.heads.size(), 2u);
  const size_t T = data.test.examples[0].tokens.size();
  EXPECT_EQ(r.heads[0].w.size(), T);
  EXPECT_EQ(r.heads[0].w[0].size(), T);
  expect_rows_sum_to_one(r);
  // the graph reaches every parameter: one AccumulateGrad per tensor the forward uses (all but the pretrain head)
  EXPECT_NE(r.graph.find("accumulate_grad blocks.0.mixer.in_proj_weight [12, 4]"), std::string::npos) << r.graph;
  EXPECT_EQ(r.graph.find("pretrain_head"), std::string::npos);
  const std::string md = dl::harness::read_text(d + "/out/explain.md");
  EXPECT_NE(md.find("(" + r.heads[1].png + ")"), std::string::npos);
  EXPECT_TRUE(fs::exists(d + "/out/" + r.heads[1].png.substr(0, r.heads[1].png.size() - 4) + ".dat"));
}

// A causal (spt-causal) S4D with N = 2: one complex mode per channel, so K can be computed here by hand, and the
// layer's own convolution of a unit impulse must give it back: y = K * delta + D delta = K + D delta.
TEST(Explain, S4dKernelIsTheImpulseResponseAndTheHandFormula) {
  const std::string d = dl::test::app_temp_dir("explain_s4d");
  lra::CellConfig c = tiny_lra("s4d", "spt-causal");
  const dl::tasks::TaskData& data = lra::task_data(c);
  dl::Generator g(0);
  lra::LraModel m(c, lra::shape_of(data), true, g);
  const std::string path = save_cell(m, c, d);
  explain::Report r = explain::explain_model_file(path, quiet_options(d + "/out"));
  ASSERT_EQ(r.kernels.size(), 1u);
  const explain::KernelInfo& k = r.kernels[0];
  EXPECT_EQ(k.type, "S4D");
  ASSERT_EQ(k.K.size(0), 1);  // causal: one direction
  const int64_t H = k.K.size(1), L = k.K.size(2);
  EXPECT_EQ(H, 4);

  auto& s4d = dynamic_cast<dl::nn::S4D&>(m.block(0).mixer());
  // the layer on a unit impulse at position 0 (no output projection: ssm() is y = K * u + D u)
  Tensor u = dl::zeros({1, L, H});
  for (int64_t h = 0; h < H; h++) u.data<float>()[h] = 1;
  Tensor y;
  {
    dl::NoGradGuard ng;
    y = s4d.ssm(Var(u)).data().contiguous();  // (1, L, H)
  }
  // the kernel as plotted: read back the numbers of the .dat file explain wrote
  std::ifstream dat(d + "/out/kernel_blocks_0_mixer.dat");
  std::vector<std::vector<double>> plotted(1);
  for (std::string line; std::getline(dat, line);) {
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (!plotted.back().empty()) plotted.emplace_back();
      continue;
    }
    std::istringstream f(line);
    double l, v;
    f >> l >> v;
    plotted.back().push_back(v);
  }
  ASSERT_EQ(plotted.size(), k.channels.size());
  const Tensor Dp = s4d.D.data().contiguous();
  auto& kern = *s4d.kernel;
  for (size_t i = 0; i < k.channels.size(); i++) {
    const int64_t h = k.channels[i];
    ASSERT_EQ((int64_t)plotted[i].size(), L);
    // by hand: A = -exp(inv_A_real) + i A_imag, dt = exp(log_dt), ZOH: Abar = exp(dt A), Bbar = (Abar - 1)/A B,
    // K[l] = 2 Re(C Bbar Abar^l)
    using cplx = std::complex<double>;
    const double dt = std::exp(kern.log_dt.data().data<float>()[h]);
    const cplx A(-std::exp(kern.inv_A_real.data().data<float>()[h]), kern.A_imag.data().data<float>()[h]);
    const float* Bp = kern.B.data().data<float>() + 2 * h;  // (H, 1, 2)
    const float* Cp = kern.C.data().data<float>() + 2 * h;  // (1, H, 1, 2)
    const cplx B(Bp[0], Bp[1]), C(Cp[0], Cp[1]), Abar = std::exp(dt * A), Bbar = (Abar - 1.0) / A * B;
    for (int64_t l = 0; l < L; l++) {
      const double impulse = y.data<float>()[l * H + h] - (l == 0 ? Dp.data<float>()[h] : 0.0f);
      const double hand = 2 * std::real(C * Bbar * std::pow(Abar, (double)l));
      EXPECT_NEAR(plotted[i][l], impulse, 1e-5) << "channel " << h << " lag " << l;
      EXPECT_NEAR(plotted[i][l], hand, 1e-5) << "channel " << h << " lag " << l;
    }
  }
  // the dt range printed is the layer's own
  Tensor ldt = kern.log_dt.data().contiguous();
  double lo = 1e9, hi = 0;
  for (int64_t h = 0; h < H; h++) lo = std::min(lo, std::exp((double)ldt.data<float>()[h])), hi = std::max(hi, std::exp((double)ldt.data<float>()[h]));
  EXPECT_NEAR(k.dt_min, lo, 1e-9);
  EXPECT_NEAR(k.dt_max, hi, 1e-9);
  EXPECT_EQ(r.total_params, m.num_parameters());
}

// |DFT| of K = [1, 1, 0, 0] by hand: f = 0: |1 + 1| = 2; f = 1/4: |1 + e^{-i pi/2}| = |1 - i| = sqrt 2; f = 1/2: |1 - 1| = 0.
TEST(Explain, FrequencyResponseOfFourTapsIsTheHandDft) {
  // not written as the literal {1, 1, 0, 0}: GCC 12.2 at -O2 -march=native (znver3) builds that constant as a
  // broadcast of 1.0 into all four lanes (vpbroadcastq), i.e. {1, 1, 1, 1}; element stores are compiled correctly
  std::vector<double> k(4, 0.0);
  k[0] = 1, k[1] = 1;
  std::vector<double> f = explain::frequency_response(k);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_NEAR(f[0], 2.0, 1e-12);
  EXPECT_NEAR(f[1], std::sqrt(2.0), 1e-12);
  EXPECT_NEAR(f[2], 0.0, 1e-12);
}

// FPT's GPT-2 body: causal, so every map is lower-triangular, and its rows are softmaxes.
TEST(Explain, FptAttentionIsCausalAndRowsSumToOne) {
  const std::string d = dl::test::app_temp_dir("explain_fpt");
  fpt::CellConfig c;
  c.task = "bit_xor", c.arm = "random", c.layers = 2, c.d_model = 8, c.heads = 2, c.dropout = 0;
  c.train_size = 8, c.val_size = 4, c.test_size = 4;
  const fpt::FptTask& t = fpt::fpt_task(c);
  dl::Generator g(0);
  fpt::FptModel m(c, t, g);
  m.freeze();
  const std::string path = save_cell(m, c, d);
  explain::Report r = explain::explain_model_file(path, quiet_options(d + "/out"));
  EXPECT_EQ(r.app, "fpt");
  EXPECT_EQ(r.total_params, m.num_parameters());
  EXPECT_EQ(r.modules.at(0).trainable, m.num_parameters(true));  // the arm's freezing, which the file does not hold
  EXPECT_LT(r.modules.at(0).trainable, r.total_params);
  ASSERT_EQ(r.heads.size(), 4u);  // 2 layers x 2 heads
  expect_rows_sum_to_one(r);
  // causal: row 0 can read only position 0, so a head's weight on position 0 is at least 1/T
  for (const explain::HeadMap& h : r.heads) EXPECT_GE(h.on_first, 1.0 / h.w.size() - 1e-9);
  for (const explain::HeadMap& h : r.heads)
    for (size_t q = 0; q < h.w.size(); q++)
      for (size_t s = q + 1; s < h.w[q].size(); s++) EXPECT_LT(h.w[q][s], 1e-6) << h.layer << " sees the future";
}

// pretrained_convs' Transformer: the encoder's maps on a given text, one row per byte (and eos).
pconv::CellConfig tiny_pconv(const std::string& model) {
  pconv::CellConfig c;
  c.task = "sentiment", c.model = model, c.d_model = 8, c.d_ff = 16, c.layers = 2, c.decoder_layers = 1;
  c.heads = 2, c.max_src = 32, c.train_size = 8, c.val_size = 4, c.test_size = 4;
  c.kernel_sizes = "3,5", c.dilations = "1,2";
  return c;
}

// The encoder's maps over the given text, the decoder's causal self-attention over its input (the model's greedy
// answer shifted right) and its cross-attention from the decoder's positions to the text's.
TEST(Explain, Seq2SeqMapsOnAGivenTextIncludeTheDecoder) {
  const std::string d = dl::test::app_temp_dir("explain_pconv");
  pconv::CellConfig c = tiny_pconv("transformer");
  c.layers = 1;
  dl::Generator g(0);
  dl::nn::Seq2SeqModel m(pconv::plan_model(c).cfg, g);
  const std::string path = save_cell(m, c, d);
  explain::Options o = quiet_options(d + "/out");
  o.text = "good film";
  explain::Report r = explain::explain_model_file(path, o);
  EXPECT_EQ(r.app, "pretrained_convs");
  EXPECT_EQ(r.total_params, m.num_parameters());
  ASSERT_EQ(r.heads.size(), 6u);  // encoder self-attention, decoder self-attention, decoder cross-attention: 2 heads each
  expect_rows_sum_to_one(r);
  int enc = 0, dec_self = 0, cross = 0;
  size_t T = 0;
  for (const explain::HeadMap& h : r.heads) {
    if (h.layer.starts_with("encoder.")) {
      enc++;
      EXPECT_FALSE(h.cross);
      EXPECT_EQ(h.w.size(), 10u);  // 9 bytes + eos
      EXPECT_EQ(h.w[0].size(), 10u);
    } else if (h.cross) {
      cross++;
      EXPECT_EQ(h.w[0].size(), 10u) << "cross-attention reads the input's 10 positions";
      T = h.w.size();
    } else {
      dec_self++;
      ASSERT_EQ(h.w.size(), h.w[0].size());
      for (size_t q = 0; q < h.w.size(); q++)
        for (size_t k = q + 1; k < h.w.size(); k++) EXPECT_EQ(h.w[q][k], 0.0) << "the decoder reads a later position";
    }
  }
  EXPECT_EQ(enc, 2);
  EXPECT_EQ(dec_self, 2);
  EXPECT_EQ(cross, 2);
  EXPECT_GE(T, 1u);
  for (const explain::HeadMap& h : r.heads)
    if (h.layer.starts_with("decoder.")) EXPECT_EQ(h.w.size(), T) << "every decoder map has the decoder's length";
  EXPECT_TRUE(r.convs.empty());
}

dl::Tensor param_of(const dl::nn::Module& m, const std::string& name) {
  for (auto& [n, p] : m.named_parameters())
    if (n == name) return p.data().to(dl::DType::f64).contiguous();
  ADD_FAILURE() << "no parameter " << name;
  return dl::Tensor();
}

// A fresh pconv model of `mixer`, saved as its cell would be, explained on a short text.
struct ExplainedPconv {
  std::unique_ptr<dl::nn::Seq2SeqModel> model;
  explain::Report report;
};
ExplainedPconv explain_fresh_pconv(const std::string& mixer, uint64_t seed) {
  pconv::CellConfig c = tiny_pconv(mixer);
  dl::Generator g(seed);
  ExplainedPconv e{std::make_unique<dl::nn::Seq2SeqModel>(pconv::plan_model(c).cfg, g), {}};
  const std::string dir = dl::test::app_temp_dir("explain_conv_" + mixer);
  explain::Options o = quiet_options(dir + "/out");
  o.text = "a fine day";  // 10 bytes + eos
  e.report = explain::explain_model_file(save_cell(*e.model, c, dir), o);
  return e;
}

// Lightweight: the plotted rows are softmax of the layer's own weight, by hand; its decoder layer is causal (offsets
// <= 0). Dilated: the taps at offsets k d - pad are the depthwise weights. Dynamic: one map per head whose rows are
// the input's positions, each a softmax.
TEST(Explain, ConvolutionKernelsAreTheLayersOwn) {
  {
    ExplainedPconv e = explain_fresh_pconv("lightconv", 1);
    const dl::nn::Seq2SeqModel& m = *e.model;
    const explain::Report& r = e.report;
    ASSERT_EQ(r.convs.size(), 3u);  // 2 encoder layers, 1 decoder layer
    for (const explain::ConvKernelInfo& k : r.convs) {
      EXPECT_EQ(k.type, "lightweight");
      const bool dec = k.layer.starts_with("decoder.");
      EXPECT_EQ(k.causal, dec) << k.layer;
      const int64_t K = k.layer.starts_with("encoder.1") ? 5 : 3;  // kernel_sizes "3,5" per layer
      ASSERT_EQ(k.kernel_size, K) << k.layer;
      ASSERT_EQ(k.offsets.size(), (size_t)K);
      EXPECT_EQ(k.offsets.front(), dec ? -(K - 1) : -(K - 1) / 2) << k.layer;
      EXPECT_EQ(k.offsets.back(), dec ? 0 : (K - 1) / 2) << k.layer;
      dl::Tensor w = param_of(m, k.layer + ".weight");  // (H, 1, K)
      ASSERT_EQ(k.rows.size(), 2u);
      for (int64_t h = 0; h < 2; h++) {
        double z = 0;
        for (int64_t j = 0; j < K; j++) z += std::exp(w.data<double>()[h * K + j]);
        for (int64_t j = 0; j < K; j++) EXPECT_NEAR(k.rows[h][j], std::exp(w.data<double>()[h * K + j]) / z, 1e-6);
      }
    }
  }
  {
    ExplainedPconv e = explain_fresh_pconv("dilatedconv", 2);
    const dl::nn::Seq2SeqModel& m = *e.model;
    const explain::Report& r = e.report;
    ASSERT_EQ(r.convs.size(), 3u);
    const explain::ConvKernelInfo& k = r.convs[1];  // encoder layer 1: K 5, dilation 2, centred: offsets -4 -2 0 2 4
    EXPECT_EQ(k.layer, "encoder.1.mixer.conv");
    EXPECT_EQ(k.dilation, 2);
    EXPECT_EQ(k.offsets, (std::vector<int64_t>{-4, -2, 0, 2, 4}));
    dl::Tensor w = param_of(m, k.layer + ".depthwise.weight");  // (C, 1, K)
    ASSERT_EQ(k.rows.size(), 4u);  // kernel_channels
    for (size_t ch = 0; ch < k.rows.size(); ch++)
      for (int64_t j = 0; j < 5; j++) EXPECT_FLOAT_EQ(k.rows[ch][j], w.data<double>()[ch * 5 + j]);
    EXPECT_EQ(r.convs[2].offsets.back(), 0) << "the decoder's dilated conv is causal";
  }
  {
    ExplainedPconv e = explain_fresh_pconv("dynamicconv", 3);
    const explain::Report& r = e.report;
    ASSERT_EQ(r.convs.size(), 3u);
    for (const explain::ConvKernelInfo& k : r.convs) {
      EXPECT_EQ(k.type, "dynamic");
      ASSERT_EQ(k.maps.size(), 2u) << "one map per head";
      if (k.layer.starts_with("encoder.")) EXPECT_EQ(k.maps[0].size(), 11u) << "a kernel per input position";
      for (const auto& map : k.maps)
        for (const auto& row : map) {
          double s = 0;
          for (double v : row) s += v;
          EXPECT_NEAR(s, 1.0, 1e-5) << k.layer;
        }
      EXPECT_EQ(k.pngs.size(), 2u);
    }
  }
}

// A layer explain has never heard of, defined only here: it answers every capability hook of nn/module.h, so explain
// must show its attention map, its taps and its kernel with no change to explain. Its forward is y = W x with W the
// causal mean (w[q][k] = 1 / (q + 1) for k <= q), which it records as attention weights (1, 1, T, T).
struct ToyMixer : dl::nn::SequenceLayer {
  std::vector<Var>* slot = nullptr;
  std::string type_name() const override { return "ToyMixer"; }
  Var forward(const Var& x, const Tensor&) override {  // x (1, T, H)
    const int64_t T = x.size(1);
    Tensor w = dl::zeros({T, T});
    for (int64_t q = 0; q < T; q++)
      for (int64_t k = 0; k <= q; k++) w.data<float>()[q * T + k] = 1.0f / (float)(q + 1);
    if (slot) slot->push_back(Var(w.reshape({1, 1, T, T})));
    return dl::matmul(Var(w.reshape({1, T, T})), x);  // (1, T, H)
  }
  bool record_attention(std::vector<Var>* s) override {
    slot = s;
    return true;
  }
  dl::nn::ConvTaps conv_taps() const override {
    dl::nn::ConvTaps t;
    t.kind = "toy", t.kernel_size = 3, t.dilation = 2, t.causal = true, t.offsets = dl::nn::conv_tap_offsets(3, 2, true);
    t.row = "channel", t.meaning = "a tap", t.taps = dl::zeros({2, 3});
    for (int64_t i = 0; i < 6; i++) t.taps.data<float>()[i] = (float)i;
    return t;
  }
  dl::nn::SSMKernel ssm_kernel(int64_t L) override {  // K[h][l] = 0.5^l (h + 1), dt 0.1 and 0.2
    dl::nn::SSMKernel k{dl::zeros({1, 2, L}), {0.1, 0.2}, true, "a toy"};
    for (int64_t h = 0; h < 2; h++)
      for (int64_t l = 0; l < L; l++) k.K.data<float>()[h * L + l] = (float)(std::pow(0.5, (double)l) * (h + 1));
    return k;
  }
};

struct ToyModel : dl::nn::Module {
  std::shared_ptr<ToyMixer> toy = register_module("toy", std::make_shared<ToyMixer>());
  std::string type_name() const override { return "ToyModel"; }
};

TEST(Explain, ALayerOfItsOwnIsShownThroughTheHooksItAnswers) {
  const std::string d = dl::test::app_temp_dir("explain_toy");
  auto m = std::make_shared<ToyModel>();
  explain::Subject s;
  s.app = "test", s.cell = "toy", s.input = "ones", s.model = m, s.length = 5, s.real_len = 5;
  s.run = [m] { return m->toy->forward(Var(dl::ones({1, 5, 2})), Tensor()); };
  explain::Report r = explain::explain_subject(s, quiet_options(d), "(in memory)", d);
  ASSERT_EQ(r.heads.size(), 1u);
  EXPECT_EQ(r.heads[0].layer, "toy");
  for (size_t q = 0; q < 5; q++)
    for (size_t k = 0; k < 5; k++) EXPECT_NEAR(r.heads[0].w[q][k], k <= q ? 1.0 / (q + 1) : 0.0, 1e-7) << q << " " << k;
  ASSERT_EQ(r.convs.size(), 1u);
  EXPECT_EQ(r.convs[0].type, "toy");
  EXPECT_EQ(r.convs[0].offsets, (std::vector<int64_t>{-4, -2, 0}));
  ASSERT_EQ(r.convs[0].rows.size(), 2u);
  EXPECT_EQ(r.convs[0].rows[1], (std::vector<double>{3, 4, 5}));
  EXPECT_EQ(r.convs[0].row_names[1], "channel 1");
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].type, "ToyMixer");
  EXPECT_EQ(r.kernels[0].K.size(2), 5);
  EXPECT_DOUBLE_EQ(r.kernels[0].dt_min, 0.1);
  EXPECT_DOUBLE_EQ(r.kernels[0].dt_max, 0.2);
  EXPECT_FLOAT_EQ(r.kernels[0].K.data<float>()[5 + 2], 0.5f);  // channel 1, lag 2: 0.25 x 2
  const std::string md = dl::harness::read_text(d + "/explain.md");
  for (const char* part : {"## Attention maps", "## State-space kernels", "## Convolution kernels"})
    EXPECT_NE(md.find(part), std::string::npos) << part;
}

// A file from no app, a file that is no safetensors, a config of no app, and an example beyond the split.
TEST(Explain, FilesFromNoAppAreClearErrorsNamingTheFile) {
  const std::string d = dl::test::app_temp_dir("explain_errors");
  dl::save_safetensors(d + "/plain.safetensors", {{"w", dl::zeros({2, 2})}});
  std::string e = dl::test::error_of([&] { explain::explain_model_file(d + "/plain.safetensors", quiet_options(d)); });
  EXPECT_NE(e.find(d + "/plain.safetensors"), std::string::npos) << e;
  EXPECT_NE(e.find("no dl.config"), std::string::npos) << e;

  dl::save_safetensors(d + "/other.safetensors", {{"w", dl::zeros({2})}}, {{"dl.config", R"({"lr": 1})"}});
  e = dl::test::error_of([&] { explain::explain_model_file(d + "/other.safetensors", quiet_options(d)); });
  EXPECT_NE(e.find(d + "/other.safetensors"), std::string::npos) << e;
  EXPECT_NE(e.find("no config of lra_benchmark"), std::string::npos) << e;

  std::ofstream(d + "/text.safetensors") << "not a tensor file";
  e = dl::test::error_of([&] { explain::explain_model_file(d + "/text.safetensors", quiet_options(d)); });
  EXPECT_NE(e.find(d + "/text.safetensors"), std::string::npos) << e;

  lra::CellConfig c = tiny_lra("s4d", "scratch");
  lra::CellConfig bad = c;  // a doctored config: named by the file and the field, not a crash in the model it builds
  bad.d_model = 0;
  dl::save_safetensors(d + "/bad.safetensors", {{"w", dl::zeros({2})}}, {{"dl.config", bad.to_json().dump()}});
  e = dl::test::error_of([&] { explain::explain_model_file(d + "/bad.safetensors", quiet_options(d)); });
  EXPECT_NE(e.find(d + "/bad.safetensors dl.config: listops/s4d/scratch: field 'd_model' must be > 0"), std::string::npos) << e;
  dl::save_safetensors(d + "/cut.safetensors", {{"w", dl::zeros({2})}}, {{"dl.config", c.to_json().dump().substr(0, 40)}});
  e = dl::test::error_of([&] { explain::explain_model_file(d + "/cut.safetensors", quiet_options(d)); });
  EXPECT_NE(e.find(d + "/cut.safetensors: its dl.config metadata: not valid JSON"), std::string::npos) << e;

  // a file that names an app explain has no opener for: refused, naming the app (its config is never guessed at)
  dl::save_safetensors(d + "/classify.safetensors", {{"w", dl::zeros({2})}}, {{"dl.app", "classify"}, {"dl.config", c.to_json().dump()}});
  e = dl::test::error_of([&] { explain::explain_model_file(d + "/classify.safetensors", quiet_options(d)); });
  EXPECT_NE(e.find(d + "/classify.safetensors: written by classify, whose models explain does not open"), std::string::npos) << e;

  dl::Generator g(0);
  lra::LraModel m(c, lra::shape_of(lra::task_data(c)), false, g);
  const std::string path = save_cell(m, c, d);  // no dl.app (as files from before it): told by the config's fields
  explain::Options o = quiet_options(d);
  o.example = 99;
  e = dl::test::error_of([&] { explain::explain_model_file(path, o); });
  EXPECT_NE(e.find("--example 99: the listops test split has 4 examples"), std::string::npos) << e;
}

// The executable on a cell lra_benchmark trained for 2 steps: exit 0, the counts printed, explain.md and the maps.
TEST(Explain, MiniatureRunOfTheExecutable) {
  const std::string d = dl::test::app_temp_dir("explain_cli");
  const std::string bin = std::string(DL_BINARY_DIR);
  const std::string sets =
      " --set d_model=8 --set layers=1 --set heads=2 --set d_state=4 --set steps=2 --set warmup=1 --set eval_every=2"
      " --set checkpoint_every=2 --set seq_len=32 --set train_size=16 --set val_size=4 --set test_size=4 --set batch=4";
  ASSERT_EQ(std::system((bin + "/lra_benchmark cell --task listops --model transformer --regime scratch --seed 0 --threads 1"
                         " --quiet --out " + d + "/run" + sets + " > " + d + "/train.log 2>&1").c_str()),
            0);
  const std::string cell = d + "/run/cells/listops__transformer__scratch__seed0";
  ASSERT_EQ(std::system((bin + "/explain --model-file " + cell + "/model.safetensors --example 1 > " + d + "/out.txt 2>&1").c_str()), 0)
      << dl::harness::read_text(d + "/out.txt");
  const std::string out = dl::harness::read_text(d + "/out.txt");
  EXPECT_NE(out.find("listops/transformer/scratch (written by lra_benchmark)"), std::string::npos) << out;
  // the file names its app (harness::save_cell_model), so explain need not guess it from the config's fields
  EXPECT_EQ(dl::load_safetensors(cell + "/model.safetensors").metadata.at("dl.app"), "lra_benchmark");
  EXPECT_NE(out.find("total "), std::string::npos);
  EXPECT_NE(out.find("1 attention layers, 2 head maps"), std::string::npos) << out;
  EXPECT_TRUE(fs::exists(cell + "/explain/explain.md"));
  EXPECT_TRUE(fs::exists(cell + "/explain/attn_blocks_0_mixer_head1.dat"));
  if (dl::harness::have_gnuplot()) {
    EXPECT_TRUE(fs::exists(cell + "/explain/attn_blocks_0_mixer_head1.png"));
  }
  // a bad file: exit 1 and the message names it
  EXPECT_NE(std::system((bin + "/explain --model-file " + d + "/train.log > " + d + "/bad.txt 2>&1").c_str()), 0);
  EXPECT_NE(dl::harness::read_text(d + "/bad.txt").find(d + "/train.log"), std::string::npos);
}
