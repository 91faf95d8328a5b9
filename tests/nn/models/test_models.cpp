// tests/nn/models/test_models.cpp - whole models in the llm.c manner (tests/fixtures/nn_models.py): tiny GPT-2,
// a tiny Transformer classifier and a tiny T5 match PyTorch's logits, loss, every gradient and an AdamW loss
// trajectory; the HF GPT-2 loader; FPT-style freezing; the torch.nn encoder/decoder layers and the
// dual-encoder head; finite differences on float64 instances.
#include <cstdio>

#include "nn/models/gpt2.h"
#include "nn/models/t5.h"
#include "nn/models/transformer.h"
#include "nn/nn_test_util.h"
#include "optim/adam.h"

using namespace dl;
using namespace dl::test;
using namespace dl::nn;

namespace {

// A whole model's float32 rounding accumulates over layers: kFixtureLong (see tolerance.h).
constexpr Tol kModel = kFixtureLong;
// Ten optimiser steps amplify the per-step rounding differences once more; the trajectory is still a
// sharp check (losses move by ~1e-1 over the steps).
constexpr Tol kTrajectory{2e-3, 2e-4};

bool is_state_key(const std::string& n) {
  for (const char* p : {"input", "output", "gout", "grad.", "extra."})
    if (n.rfind(p, 0) == 0) return false;
  return true;
}

// the fixture's state minus names our modules deliberately lack (tied lm_head, HF's causal-mask buffers)
std::map<std::string, Tensor> model_state(const TensorFile& f) {
  std::map<std::string, Tensor> sd;
  for (auto& [n, t] : f.tensors) {
    if (!is_state_key(n) || n == "lm_head.weight") continue;
    if (n.size() > 10 && n.compare(n.size() - 10, 10, ".attn.bias") == 0) continue;
    sd[n] = t;
  }
  return sd;
}

GPT2Config tiny_gpt2() {
  GPT2Config c;
  c.vocab_size = 50, c.n_positions = 16, c.n_embd = 32, c.n_layer = 2, c.n_head = 2;
  return c;
}

// 10 AdamW steps as torch.optim.AdamW(lr=1e-2, wd=0.01); returns the loss before each step.
template <class LossFn> std::vector<double> adamw_trajectory(Module& m, LossFn loss_fn, int steps) {
  optim::AdamWOptions o;
  o.lr = 1e-2;
  o.weight_decay = 0.01;
  optim::AdamW opt(m.parameters(), o);
  std::vector<double> losses;
  for (int s = 0; s < steps; s++) {
    opt.zero_grad();
    Var l = loss_fn();
    losses.push_back(l.item());
    l.backward();
    opt.step();
  }
  return losses;
}

::testing::AssertionResult trajectory_matches(const std::vector<double>& ours, const Tensor& theirs) {
  return all_close(from_vector(ours, {(int64_t)ours.size()}), theirs, kTrajectory, "AdamW loss trajectory");
}

}  // namespace

// ---------------------------------------------------------------- GPT-2
TEST(GPT2, MatchesPyTorchLogitsLossGradientsAndTrajectory) {
  Generator g(0);
  GPT2Model m(tiny_gpt2(), g);
  TensorFile f = nn_fixture("gpt2_tiny");
  m.load_state_dict(model_state(f));
  Tensor idx = f.at("input"), tgt = f.at("input1");
  Var logits = m.forward(idx);
  EXPECT_TRUE(all_close(logits.data(), f.at("extra.logits"), kModel, "logits"));
  Var loss = m.loss(logits, tgt);
  EXPECT_TRUE(check_fixture(m, f, loss, {}, kModel));
  for (auto& [n, p] : m.named_parameters()) EXPECT_TRUE(f.has("grad." + n)) << n << " has no PyTorch gradient to compare";

  GPT2Model fresh(tiny_gpt2(), g);
  fresh.load_state_dict(model_state(f));
  auto losses = adamw_trajectory(
      fresh, [&] { return fresh.loss(fresh.forward(idx), tgt); }, 10);
  EXPECT_TRUE(trajectory_matches(losses, f.at("extra.losses")));
  EXPECT_LT(losses.back(), losses.front());
}

TEST(GPT2, FusedAttentionGivesTheSameModel) {
  Generator g(0);
  GPT2Config c = tiny_gpt2();
  c.fused_attention = true;
  GPT2Model m(c, g);
  TensorFile f = nn_fixture("gpt2_tiny");
  m.load_state_dict(model_state(f));
  Var loss = m.loss(m.forward(f.at("input")), f.at("input1"));
  EXPECT_TRUE(check_fixture(m, f, loss, {}, kModel));
}

TEST(GPT2, LoadsHuggingFaceFileLayout) {
  std::string path = fixture_path("nn/tiny_gpt2_hub.safetensors");  // hub layout: no "transformer.", attn.bias buffers
  GPT2Config c = gpt2_config_from_file(path, 2);
  EXPECT_EQ(c.n_layer, 2);
  EXPECT_EQ(c.n_embd, 32);
  EXPECT_EQ(c.vocab_size, 50);
  EXPECT_EQ(c.n_positions, 16);
  Generator g(1);
  GPT2Model m(c, g);
  LoadReport r = load_gpt2_hf(m, path);
  EXPECT_TRUE(r.ok()) << r.str();
  TensorFile f = nn_fixture("gpt2_tiny");
  NoGradGuard ng;
  EXPECT_TRUE(all_close(m.forward(f.at("input")).data(), f.at("extra.logits"), kModel, "logits after HF load"));
}

TEST(GPT2, WrongShapedTensorIsListed) {
  TensorFile hub = load_safetensors(fixture_path("nn/tiny_gpt2_hub.safetensors"));
  hub.tensors["h.1.mlp.c_fc.weight"] = zeros({128, 32});  // transposed: (out, in) instead of Conv1D's (in, out)
  std::string path = std::string(DL_BINARY_DIR) + "/bad_gpt2.safetensors";
  save_safetensors(path, hub.tensors);
  Generator g(1);
  GPT2Model m(tiny_gpt2(), g);
  try {
    load_gpt2_hf(m, path);
    FAIL() << "no error";
  } catch (const CheckpointError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("transformer.h.1.mlp.c_fc.weight"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[32, 128]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[128, 32]"), std::string::npos) << msg;
  }
  std::remove(path.c_str());
}

TEST(GPT2, FPTFreezingLeavesFrozenGradsUndefined) {
  Generator g(2);
  GPT2Model m(tiny_gpt2(), g);
  // FPT (Lu et al. 2021): freeze self-attention and feed-forward; train layer norms, positions, input/output
  m.set_requires_grad([](const std::string&) { return true; }, false);
  int trainable = m.set_requires_grad(
      [](const std::string& n) {
        return n.find(".ln_") != std::string::npos || n.find("wpe") != std::string::npos || n.find("wte") != std::string::npos;
      },
      true);
  EXPECT_EQ(trainable, 2 * 4 + 2 + 1 + 1);  // ln_1, ln_2 (w, b) per block, ln_f (w, b), wpe, wte
  Tensor idx = randint(0, 50, {2, 8}, g);
  m.loss(m.forward(idx), idx).backward();
  for (auto& [n, p] : m.named_parameters()) {
    if (p.requires_grad()) EXPECT_TRUE(p.grad().defined()) << n;
    else EXPECT_FALSE(p.grad().defined()) << n << " is frozen but has a gradient";
  }
}

// ---------------------------------------------------------------- Transformer classifier
namespace {
struct TinyClassifier : Module {
  TinyClassifier(Generator& g) {
    embed = register_module("embed", std::make_shared<Embedding>(20, 16, g));
    pos = register_module("pos", std::make_shared<Embedding>(16, 16, g));
    layers = register_module("layers", std::make_shared<ModuleList<TransformerEncoderLayer>>());
    for (int i = 0; i < 2; i++) layers->push_back(std::make_shared<TransformerEncoderLayer>(16, 2, 32, 0.0, true, g));
    norm = register_module("norm", std::make_shared<LayerNorm>(16));
    head = register_module("head", std::make_shared<Linear>(16, 3, g));
  }
  std::string type_name() const override { return "TinyClassifier"; }
  Var logits(const Tensor& idx, const Tensor& mask) {
    const int64_t B = idx.size(0), T = idx.size(1);
    Var x = embed->forward(idx) + narrow(pos->weight, 0, 0, T);  // (B, T, C)
    for (auto& l : layers->items()) x = l->forward(x, mask);
    x = norm->forward(x);
    Tensor m = mask.to(DType::f32).reshape({B, T, 1});
    return head->forward(sum(x * Var(m), {1}) / Var(sum(m, {1})));  // masked mean pool: (B, C) -> (B, 3)
  }
  std::shared_ptr<Embedding> embed, pos;
  std::shared_ptr<ModuleList<TransformerEncoderLayer>> layers;
  std::shared_ptr<LayerNorm> norm;
  std::shared_ptr<Linear> head;
};
}  // namespace

TEST(TransformerClassifier, MatchesPyTorchLogitsLossGradientsAndTrajectory) {
  Generator g(0);
  TinyClassifier m(g);
  TensorFile f = nn_fixture("classifier_tiny");
  m.load_state_dict(model_state(f));
  Tensor idx = f.at("input"), mask = f.at("input1"), labels = f.at("input2");
  Var logits = m.logits(idx, mask);
  EXPECT_TRUE(all_close(logits.data(), f.at("extra.logits"), kModel, "logits"));
  EXPECT_TRUE(check_fixture(m, f, cross_entropy(logits, labels), {}, kModel));
  TinyClassifier fresh(g);
  fresh.load_state_dict(model_state(f));
  auto losses = adamw_trajectory(
      fresh, [&] { return cross_entropy(fresh.logits(idx, mask), labels); }, 10);
  EXPECT_TRUE(trajectory_matches(losses, f.at("extra.losses")));
}

// ---------------------------------------------------------------- T5
namespace {
T5Config tiny_t5() {
  T5Config c;
  c.vocab_size = 30, c.d_model = 16, c.d_kv = 8, c.d_ff = 32, c.num_layers = 2, c.num_heads = 2, c.num_buckets = 8,
  c.max_distance = 16;
  return c;
}
}  // namespace

TEST(T5, RelativeBucketsAsHuggingFace) {
  // values of HF's _relative_position_bucket (num_buckets 32, max_distance 128)
  EXPECT_EQ(t5_relative_bucket(0, true, 32, 128), 0);
  EXPECT_EQ(t5_relative_bucket(3, true, 32, 128), 19);
  EXPECT_EQ(t5_relative_bucket(-3, true, 32, 128), 3);
  EXPECT_EQ(t5_relative_bucket(-20, true, 32, 128), 10);
  EXPECT_EQ(t5_relative_bucket(-1000, true, 32, 128), 15);
  EXPECT_EQ(t5_relative_bucket(5, false, 32, 128), 0);
  EXPECT_EQ(t5_relative_bucket(-5, false, 32, 128), 5);
  EXPECT_EQ(t5_relative_bucket(-1000, false, 32, 128), 31);
}

TEST(T5, TeacherForcingMatchesPyTorchAndGreedyDecodes) {
  Generator g(0);
  T5Model m(tiny_t5(), g);
  TensorFile f = nn_fixture("t5_tiny");
  m.load_state_dict(model_state(f));
  Tensor ids = f.at("input"), mask = f.at("input1"), labels = f.at("input2");
  auto out = m.forward(ids, mask, labels);
  EXPECT_TRUE(all_close(out.logits.data(), f.at("extra.logits"), kModel, "logits"));
  EXPECT_TRUE(check_fixture(m, f, out.loss, {}, kModel));
  Tensor greedy = m.greedy(ids, mask, 6);
  EXPECT_EQ(greedy.to_vector(), f.at("extra.greedy").to_vector());
  T5Model fresh(tiny_t5(), g);
  fresh.load_state_dict(model_state(f));
  auto losses = adamw_trajectory(
      fresh, [&] { return fresh.forward(ids, mask, labels).loss; }, 3);
  EXPECT_TRUE(trajectory_matches(losses, f.at("extra.losses")));
}

// ---------------------------------------------------------------- layers of torch.nn, Mixer, dual encoder
TEST(TransformerLayers, EncoderLayerPreAndPostLN) {
  for (bool nf : {false, true}) {
    Generator g(0);
    TransformerEncoderLayer l(8, 2, 16, 0.0, nf, g);
    TensorFile f = nn_fixture(nf ? "encoder_layer_pre" : "encoder_layer_post");
    load_fixture_state(l, f);
    Var x = fixture_input(f);
    EXPECT_TRUE(check_fixture(l, f, l.forward(x, f.at("input1")), {{"input", x}})) << (nf ? "pre-LN" : "post-LN");
  }
}

TEST(TransformerLayers, DecoderLayerWithCrossAttention) {
  Generator g(0);
  TransformerDecoderLayer l(8, 2, 16, 0.0, false, g);
  TensorFile f = nn_fixture("decoder_layer");
  load_fixture_state(l, f);
  Var x = fixture_input(f), mem = fixture_input(f, "input1");
  EXPECT_TRUE(check_fixture(l, f, l.forward(x, mem, f.at("input2")), {{"input", x}, {"input1", mem}}));
}

TEST(TransformerLayers, DualEncoderHead) {
  Generator g(0);
  DualEncoderHead h(6, 10, 3, g);
  TensorFile f2 = nn_fixture("dual_encoder_head");
  load_fixture_state(h, f2);
  Var a = fixture_input(f2), b = fixture_input(f2, "input1");
  EXPECT_TRUE(check_fixture(h, f2, h.forward(a, b), {{"input", a}, {"input1", b}}));
}

// ---------------------------------------------------------------- finite differences (float64)
TEST(TransformerGradcheck, Blocks) {
  Var x = randn_var({2, 3, 4}, 21);
  Tensor mask = ones({2, 3});
  mask.narrow(0, 1, 1).narrow(1, 2, 1).zero_();
  for (bool nf : {false, true}) {
    Generator g(1);
    TransformerEncoderLayer l(4, 2, 6, 0.0, nf, g);
    to_f64(l);
    EXPECT_TRUE(module_gradcheck(l, {x}, [&] { return l.forward(x, mask); })) << "encoder layer norm_first=" << nf;
  }
  {
    Generator g(2);
    TransformerDecoderLayer l(4, 2, 6, 0.0, true, g);
    to_f64(l);
    Var mem = randn_var({2, 2, 4}, 22);
    EXPECT_TRUE(module_gradcheck(l, {x, mem}, [&] { return l.forward(x, mem, Tensor()); })) << "decoder layer";
  }
  {
    Generator g(3);
    GPT2Config c;
    c.vocab_size = 7, c.n_positions = 4, c.n_embd = 4, c.n_layer = 1, c.n_head = 2;
    GPT2Block b(c, g);
    to_f64(b);
    EXPECT_TRUE(module_gradcheck(b, {x}, [&] { return b.forward(x); })) << "GPT2Block";
    GPT2Model m(c, g);
    to_f64(m);
    Tensor idx = randint(0, 7, {2, 3}, g);
    EXPECT_TRUE(module_gradcheck(m, {}, [&] { return m.forward(idx); })) << "GPT2Model";
  }
  {
    Generator g(4);
    DualEncoderHead h(4, 5, 2, g);
    to_f64(h);
    Var a = randn_var({3, 4}, 23), b = randn_var({3, 4}, 24);
    EXPECT_TRUE(module_gradcheck(h, {a, b}, [&] { return h.forward(a, b); })) << "DualEncoderHead";
  }
  {
    Generator g(5);
    T5Config c;
    c.vocab_size = 6, c.d_model = 4, c.d_kv = 2, c.d_ff = 5, c.num_layers = 1, c.num_heads = 2, c.num_buckets = 4,
    c.max_distance = 8;
    T5Model m(c, g);
    to_f64(m);
    Tensor ids = randint(0, 6, {2, 3}, g), dec = randint(0, 6, {2, 2}, g);
    EXPECT_TRUE(module_gradcheck(m, {}, [&] { return m.decode_logits(dec, m.encode(ids, mask), mask); })) << "T5";
  }
}

// GPT-2's attention runs the packed primitive unless its weights are asked for; both paths agree, and the weights
// are causal rows of a softmax.
TEST(GPT2, PackedAttentionEqualsComposedAndWeightsAreCausal) {
  Generator g(9);
  GPT2Config c;
  c.vocab_size = 11, c.n_positions = 8, c.n_embd = 8, c.n_layer = 2, c.n_head = 2;
  GPT2Transformer t(c, g);
  Var x(randn({2, 6, 8}, g), true), x2(x.data().clone(), true);
  std::vector<Var> att;
  Var packed = t.forward_embeds(x), composed = t.forward_embeds(x2, &att);
  EXPECT_TRUE(all_close(packed.data(), composed.data(), kAgreeF32, "forward"));
  Tensor gout = randn(packed.shape(), g);
  packed.backward(gout), composed.backward(gout);
  EXPECT_TRUE(all_close(x.grad(), x2.grad(), kAgreeF32, "d embeddings"));
  ASSERT_EQ(att.size(), 2u);
  Tensor w = att[1].data().contiguous();  // (B, NH, T, T)
  ASSERT_EQ(w.shape(), (Shape{2, 2, 6, 6}));
  for (int64_t t0 = 0; t0 < 6; t0++) {
    double row = 0;
    for (int64_t s = 0; s < 6; s++) {
      row += w.at({1, 1, t0, s});
      if (s > t0) EXPECT_EQ(w.at({1, 1, t0, s}), 0.0) << "query " << t0 << " sees key " << s;
    }
    EXPECT_NEAR(row, 1.0, 1e-5);
  }
}
