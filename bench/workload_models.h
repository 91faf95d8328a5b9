// bench/workload_models.h - the models of bench_workloads.cpp, each the twin of the class of the same name in
// bench/torch_workloads.py (same shapes and parameter counts), so the training steps compared are the same work.
// Each counts its forward's FLOPs (forward_flops(B, L), nn/sequence_layer.h's convention) from its layers' own counts
// (MultiheadAttention, S4D, LSTM) and its linears' products; embedding lookups, norms and pooling are free.
#pragma once
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "nn/attention/attention.h"
#include "nn/attention/linear_attention.h"
#include "nn/fused/flash_attention.h"
#include "nn/fused/fused_attention.h"
#include "nn/fused/qkv_attention.h"
#include "nn/layers.h"
#include "nn/recurrent/lstm.h"
#include "nn/ssm/s4d.h"

namespace dl::nn::bench {

inline Tensor sinusoidal(int64_t T, int64_t D) {  // pe[t, 2i] = sin(t / 10000^(2i/D)), pe[t, 2i+1] = cos(...)
  std::vector<float> pe(T * D);
  for (int64_t t = 0; t < T; t++)
    for (int64_t i = 0; i < D; i += 2) {
      float ang = (float)t / std::pow(10000.0f, (float)i / (float)D);
      pe[t * D + i] = std::sin(ang);
      if (i + 1 < D) pe[t * D + i + 1] = std::cos(ang);
    }
  return from_vector(pe, {T, D});
}

// Self-attention on MultiheadAttention's parameters through one of the primitives on the packed projection: the
// same map as MultiheadAttention::forward without a mask (q, k, v = x in_proj^T + in_proj_bias, split heads,
// attention with dropout on the weights, merge heads, out_proj), with one sgemm for the three projections and no
// (B, NH, T, T) tensor: `packed` (nn/fused/qkv_attention.h) or `flash` (nn/fused/flash_attention.h). `layer` runs
// MultiheadAttention::forward itself, which takes the path its options and the length choose (choose_attention_path).
enum class Prim { layer, packed, flash };
struct SelfAttention : SequenceLayer {
  std::shared_ptr<MultiheadAttention> mha;
  Prim prim;
  Generator* gen;
  SelfAttention(int64_t d, const AttentionOptions& o, Prim prim, Generator& g) : prim(prim), gen(&g) {
    mha = register_module("mha", std::make_shared<MultiheadAttention>(d, o, g));
  }
  std::string type_name() const override { return "SelfAttention"; }
  Var forward(const Var& x, const Tensor& mask) override {
    if (prim == Prim::layer) return mha->forward(x, mask);
    Var qkv = linear(x, mha->in_proj_weight, mha->in_proj_bias);  // (B, T, 3C)
    const AttentionOptions& o = mha->opt;
    return mha->out_proj->forward(prim == Prim::flash ? flash_attention(qkv, o.heads, o.causal, o.dropout, is_training(), *gen)
                                                      : qkv_attention(qkv, o.heads, o.causal, o.dropout, is_training(), *gen));
  }
  double forward_flops(int64_t B, int64_t L) const override { return mha->forward_flops(B, L); }  // the same map
};

inline double linear_flops(const Linear& l, double rows) { return matmul_flops(rows, l.in_features, l.out_features); }

// best: the path MultiheadAttention itself takes (choose_attention_path: the blocked kernel from kFlashFrom on, the
// packed one below), what the apps run; packed: the packed kernel at every length; composed and fused as named.
enum class Attn { best, packed, composed, fused };

// torch.nn.TransformerEncoderLayer(d, heads, ffn, dropout, activation="gelu", batch_first=True, norm_first=True):
//   x = x + drop(self_attn(ln1(x)));  x = x + drop(linear2(drop(gelu(linear1(ln2(x))))))
struct EncoderLayer : Module {
  std::shared_ptr<SelfAttention> self_attn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<LayerNorm> norm1, norm2;
  std::shared_ptr<Dropout> drop;
  EncoderLayer(int64_t d, int64_t heads, int64_t ffn, double p, Attn attn, Generator& g) {
    AttentionOptions o;
    o.heads = heads;
    o.dropout = p;
    o.fused = attn == Attn::fused;  // MultiheadAttention uses it only where no dropout is involved
    o.packed = attn != Attn::composed;  // the layer's default is its packed path
    self_attn = register_module("self_attn",
                                std::make_shared<SelfAttention>(d, o, attn == Attn::packed ? Prim::packed : Prim::layer, g));  // best: the layer
    linear1 = register_module("linear1", std::make_shared<Linear>(d, ffn, g));
    linear2 = register_module("linear2", std::make_shared<Linear>(ffn, d, g));
    norm1 = register_module("norm1", std::make_shared<LayerNorm>(d));
    norm2 = register_module("norm2", std::make_shared<LayerNorm>(d));
    drop = register_module("dropout", std::make_shared<Dropout>(p, g));
  }
  std::string type_name() const override { return "EncoderLayer"; }
  Var forward(const Var& x) {
    Var h = x + drop->forward(self_attn->forward(norm1->forward(x), Tensor()));
    return h + drop->forward(feed_forward(*linear1, *drop, *linear2, norm2->forward(h)));  // nn/layers.h
  }
  double forward_flops(int64_t B, int64_t L) const {
    return self_attn->forward_flops(B, L) + linear_flops(*linear1, (double)B * L) + linear_flops(*linear2, (double)B * L);
  }
};

struct TransformerClassifier : Module {
  std::shared_ptr<Embedding> emb;
  Tensor pe;
  std::shared_ptr<ModuleList<EncoderLayer>> layers;
  std::shared_ptr<LayerNorm> ln;
  std::shared_ptr<Linear> head;
  TransformerClassifier(int64_t vocab, int64_t d, int64_t heads, int64_t nl, int64_t ffn, int64_t classes, int64_t T, double p,
                        Attn attn, Generator& g) {
    emb = register_module("emb", std::make_shared<Embedding>(vocab, d, g));
    pe = sinusoidal(T, d);
    layers = register_module("layers", std::make_shared<ModuleList<EncoderLayer>>());
    for (int64_t i = 0; i < nl; i++) layers->push_back(std::make_shared<EncoderLayer>(d, heads, ffn, p, attn, g));
    ln = register_module("ln", std::make_shared<LayerNorm>(d));
    head = register_module("head", std::make_shared<Linear>(d, classes, g));
  }
  std::string type_name() const override { return "TransformerClassifier"; }
  Var forward(const Tensor& x) {
    Var h = emb->forward(x) + Var(pe.narrow(0, 0, x.size(1)));  // (B, T, C)
    for (auto& l : layers->items()) h = l->forward(h);
    return head->forward(mean(ln->forward(h), {1}));  // (B, classes)
  }
  double forward_flops(int64_t B, int64_t L) const {
    double f = linear_flops(*head, (double)B);  // on the pooled (B, C)
    for (auto& l : layers->items()) f += l->forward_flops(B, L);
    return f;
  }
};

// S4DBlock: x + drop(glu(out(drop(gelu(ssm(norm(x))))))); our S4D layer holds ssm, gelu, dropout, output_linear, glu.
struct S4DBlock : Module {
  std::shared_ptr<LayerNorm> norm;
  std::shared_ptr<S4D> s4d;
  std::shared_ptr<Dropout> drop;
  S4DBlock(int64_t H, int64_t N, double p, Generator& g) {
    norm = register_module("norm", std::make_shared<LayerNorm>(H));
    S4DOptions o;
    o.kernel.d_state = N;
    o.dropout = p;
    s4d = register_module("s4d", std::make_shared<S4D>(H, o, g));
    drop = register_module("drop", std::make_shared<Dropout>(p, g));
  }
  std::string type_name() const override { return "S4DBlock"; }
  Var forward(const Var& x) { return x + drop->forward(s4d->forward(norm->forward(x), Tensor())); }
};

struct S4DClassifier : Module {
  std::shared_ptr<Embedding> emb;
  std::shared_ptr<ModuleList<S4DBlock>> layers;
  std::shared_ptr<LayerNorm> ln;
  std::shared_ptr<Linear> head;
  S4DClassifier(int64_t vocab, int64_t H, int64_t N, int64_t nl, int64_t classes, double p, Generator& g) {
    emb = register_module("emb", std::make_shared<Embedding>(vocab, H, g));
    layers = register_module("layers", std::make_shared<ModuleList<S4DBlock>>());
    for (int64_t i = 0; i < nl; i++) layers->push_back(std::make_shared<S4DBlock>(H, N, p, g));
    ln = register_module("ln", std::make_shared<LayerNorm>(H));
    head = register_module("head", std::make_shared<Linear>(H, classes, g));
  }
  std::string type_name() const override { return "S4DClassifier"; }
  Var forward(const Tensor& x) {
    Var h = emb->forward(x);
    for (auto& l : layers->items()) h = l->forward(h);
    return head->forward(mean(ln->forward(h), {1}));
  }
  double forward_flops(int64_t B, int64_t L) const {
    double f = linear_flops(*head, (double)B);
    for (auto& l : layers->items()) f += l->s4d->forward_flops(B, L);
    return f;
  }
};

struct LSTMBits : Module {
  std::shared_ptr<LSTM> lstm;
  std::shared_ptr<Linear> head;
  LSTMBits(int64_t in, int64_t hidden, int64_t classes, Generator& g) {
    lstm = register_module("lstm", std::make_shared<LSTM>(in, hidden, LSTMOptions{}, g));
    head = register_module("head", std::make_shared<Linear>(hidden, classes, g));
  }
  std::string type_name() const override { return "LSTMBits"; }
  Var forward(const Var& x) {
    Var h = lstm->forward(x, Tensor());  // (B, L, Hd)
    return head->forward(select(h, 1, x.size(1) - 1));
  }
  double forward_flops(int64_t B, int64_t L) const { return lstm->forward_flops(B, L) + linear_flops(*head, (double)B); }
};

// nanoGPT's block: x + drop(c_proj(attn(ln_1(x)))), x + drop(mlp_proj(gelu(c_fc(ln_2(x))))); causal, dropout on
// the attention weights.
struct GPTBlock : Module {
  std::shared_ptr<LayerNorm> ln_1, ln_2;
  std::shared_ptr<Linear> c_attn, c_proj, c_fc, mlp_proj;
  std::shared_ptr<Dropout> drop;
  int64_t heads;
  double p;
  Attn attn;
  Generator* gen;
  GPTBlock(int64_t d, int64_t heads, double p, Attn attn, Generator& g) : heads(heads), p(p), attn(attn), gen(&g) {
    ln_1 = register_module("ln_1", std::make_shared<LayerNorm>(d));
    ln_2 = register_module("ln_2", std::make_shared<LayerNorm>(d));
    c_attn = register_module("c_attn", std::make_shared<Linear>(d, 3 * d, g));
    c_proj = register_module("c_proj", std::make_shared<Linear>(d, d, g));
    c_fc = register_module("c_fc", std::make_shared<Linear>(d, 4 * d, g));
    mlp_proj = register_module("mlp_proj", std::make_shared<Linear>(4 * d, d, g));
    drop = register_module("drop", std::make_shared<Dropout>(p, g));
  }
  std::string type_name() const override { return "GPTBlock"; }
  // mlp_proj(gelu(c_fc(x))): autograd/feed_forward.h with no dropout between (one node under the bf16 products)
  Var mlp(const Var& x) const {
    return dl::feed_forward(x, c_fc->weight, c_fc->bias, mlp_proj->weight, mlp_proj->bias, 0.0, false, *gen);
  }
  Var forward(const Var& x) {
    const int64_t C = x.size(2);
    Var qkv = c_attn->forward(ln_1->forward(x));  // (B, T, 3C)
    if (attn == Attn::packed || attn == Attn::best) {  // best: the layer's choice of the two by length
      const bool flash = attn == Attn::best && x.size(1) >= kFlashFrom;
      Var y = flash ? flash_attention(qkv, heads, true, p, is_training(), *gen) : qkv_attention(qkv, heads, true, p, is_training(), *gen);
      Var h = x + drop->forward(c_proj->forward(y));
      return h + drop->forward(mlp(ln_2->forward(h)));
    }
    Var q = split_heads(narrow(qkv, 2, 0, C), heads), k = split_heads(narrow(qkv, 2, C, C), heads),
        v = split_heads(narrow(qkv, 2, 2 * C, C), heads);  // (B, NH, T, HS)
    Var y;
    if (attn == Attn::fused && !(is_training() && p > 0)) {
      y = fused_attention(q, k, v, Tensor(), true);
    } else {
      SDPAOptions o;
      o.causal = true;
      o.dropout = p;
      o.training = is_training();
      o.gen = gen;
      y = scaled_dot_product_attention(q, k, v, o);
    }
    Var h = x + drop->forward(c_proj->forward(merge_heads(y)));
    return h + drop->forward(mlp(ln_2->forward(h)));
  }
  // the linears, and the causal attention's T (T + 1) / 2 pairs at 4 C each (q.k and p v), as nn::GPT2Transformer
  double forward_flops(int64_t B, int64_t T) const {
    const double rows = (double)B * T, C = (double)c_proj->in_features;
    return linear_flops(*c_attn, rows) + linear_flops(*c_proj, rows) + linear_flops(*c_fc, rows) + linear_flops(*mlp_proj, rows) +
           4 * C * B * attention_pairs(T, true, 0);
  }
};

struct GPT : Module {
  std::shared_ptr<Embedding> wte, wpe;
  std::shared_ptr<ModuleList<GPTBlock>> h;
  std::shared_ptr<LayerNorm> ln_f;
  GPT(int64_t vocab, int64_t T, int64_t d, int64_t heads, int64_t nl, double p, Attn attn, Generator& g) {
    wte = register_module("wte", std::make_shared<Embedding>(vocab, d, g));
    wpe = register_module("wpe", std::make_shared<Embedding>(T, d, g));
    h = register_module("h", std::make_shared<ModuleList<GPTBlock>>());
    for (int64_t i = 0; i < nl; i++) h->push_back(std::make_shared<GPTBlock>(d, heads, p, attn, g));
    ln_f = register_module("ln_f", std::make_shared<LayerNorm>(d));
    wte->weight.mutable_data().copy_(normal({vocab, d}, 0.0, 0.02, g));
    wpe->weight.mutable_data().copy_(normal({T, d}, 0.0, 0.01, g));
  }
  std::string type_name() const override { return "GPT"; }
  Var forward(const Tensor& x) {
    const int64_t T = x.size(1);
    Var z = wte->forward(x) + wpe->forward(arange(T));  // (B, T, C)
    for (auto& b : h->items()) z = b->forward(z);
    return matmul(ln_f->forward(z), transpose(wte->weight, 0, 1));  // tied head: (B, T, vocab)
  }
  double forward_flops(int64_t B, int64_t T) const {
    double f = matmul_flops((double)B * T, wte->weight.size(1), wte->weight.size(0));  // the tied head
    for (auto& b : h->items()) f += b->forward_flops(B, T);
    return f;
  }
};

}  // namespace dl::nn::bench
