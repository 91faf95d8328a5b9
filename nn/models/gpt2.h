// nn/models/gpt2.h - GPT-2 (Radford et al. 2019) with Hugging Face GPT2LMHeadModel's state_dict names, so the
// released 124M weights load as they are (load_gpt2_hf).
//
// Shape letters: B batch, T time, C = n_embd, NH = n_head, HS = C / NH, V vocab.
//   x      = wte[idx] + wpe[0..T)  (or given embeddings + wpe)            (B, T, C)
//   block  x = x + attn(ln_1(x));  x = x + mlp(ln_2(x))               (pre-LN)
//          attn: q, k, v = split(c_attn(x)); causal softmax attention; c_proj  (f32 CPU: the packed
//          path, nn/fused/qkv_attention.h; the composed one when the weights are asked for)
//          mlp:  c_proj(gelu_tanh(c_fc(x)))                           (HF's "gelu_new")
//   logits = ln_f(x) wte^T                                            (B, T, V)   lm_head tied to wte
// Names: transformer.wte.weight, transformer.wpe.weight, transformer.h.<i>.{ln_1, attn.c_attn, attn.c_proj,
// ln_2, mlp.c_fc, mlp.c_proj}.{weight, bias}, transformer.ln_f.{weight, bias}. HF's Conv1D keeps its weight as
// (in, out) and computes x W + b; Conv1D below does the same, so nothing is transposed on load.
// lm_head.weight is the same tensor as wte (not a separate parameter); loading ignores it.
// Generation (GPT2Model::start_stream / step): one token at a time with a key/value cache per block (the keys and
// values of every position so far, (B, NH, t, HS)), so position t costs O(t) attention work instead of the O(t^2)
// of running forward over the whole prefix again; the logits equal forward's at every position (tested).
#pragma once
#include "nn/attention/attention.h"
#include "nn/sequence_layer.h"

namespace dl::nn {

struct GPT2Config {
  int64_t vocab_size = 50257, n_positions = 1024, n_embd = 768, n_layer = 12, n_head = 12;
  double dropout = 0.0, ln_eps = 1e-5;
  bool fused_attention = false;  // use nn/fused/fused_attention.h in the blocks
};

class Conv1D : public Module {  // HF's Conv1D: y = x W + b, W (in, out)
 public:
  Conv1D(int64_t in, int64_t out, Generator& g);
  std::string type_name() const override { return "Conv1D"; }
  Var forward(const Var& x) const;
  Var weight, bias;
};

class GPT2Attention : public Module {
 public:
  GPT2Attention(const GPT2Config& c, Generator& g);
  std::string type_name() const override { return "GPT2Attention"; }
  // (B, T, C), causal; weights: the softmax weights (B, NH, T, T) when asked (composed path)
  Var forward(const Var& x, Var* weights = nullptr);
  // One position (B, C) against the cache (K, V) of the earlier ones, which it extends; eval mode.
  Var step(const Var& x, Tensor& K, Tensor& V);
  // nn/module.h's hook: while set, forward takes the composed path and appends its weights (B, NH, T, T) here
  bool record_attention(std::vector<Var>* slot) override { return record_weights = slot, true; }
  std::shared_ptr<Conv1D> c_attn, c_proj;
  std::shared_ptr<Dropout> attn_dropout, resid_dropout;
  GPT2Config cfg;
  std::vector<Var>* record_weights = nullptr;
};

class GPT2MLP : public Module {
 public:
  GPT2MLP(const GPT2Config& c, Generator& g);
  std::string type_name() const override { return "GPT2MLP"; }
  Var forward(const Var& x) const;
  std::shared_ptr<Conv1D> c_fc, c_proj;
  std::shared_ptr<Dropout> dropout;
};

class GPT2Block : public Module {
 public:
  GPT2Block(const GPT2Config& c, Generator& g);
  std::string type_name() const override { return "GPT2Block"; }
  Var forward(const Var& x, Var* attention = nullptr);
  Var step(const Var& x, Tensor& K, Tensor& V);  // (B, C), the attention's cache
  std::shared_ptr<LayerNorm> ln_1, ln_2;
  std::shared_ptr<GPT2Attention> attn;
  std::shared_ptr<GPT2MLP> mlp;
};

class GPT2Transformer : public Module {  // HF's GPT2Model: the "transformer." prefix
 public:
  GPT2Transformer(const GPT2Config& c, Generator& g);
  std::string type_name() const override { return "GPT2Transformer"; }
  Var forward(const Var& idx);  // (B, T) i64 -> ln_f output (B, T, C)
  // HF's inputs_embeds: embeddings (B, T, C) instead of token ids (wte unused), as FPT feeds GPT-2; attention, if
  // given, receives each block's softmax weights (B, NH, T, T)
  Var forward_embeds(const Var& embeds, std::vector<Var>* attention = nullptr);
  // ONNX export of forward_embeds for T positions (docs/onnx.md): the graph value `embeds` (batch, T, C) -> the
  // ln_f output's value (batch, T, C); weights under prefix + the state_dict's names ("transformer." in GPT2Model).
  std::string export_embeds(onnx::Graph& g, const std::string& embeds, int64_t T, const std::string& prefix) const;
  // FLOPs of forward_embeds on (B, T) positions (nn/sequence_layer.h's convention): per block c_attn (2 B T C 3C),
  // the causal attention's T (T + 1) / 2 query-key pairs (4 C each), c_proj (2 B T C^2) and the MLP (2 x 2 B T C 4C)
  double forward_flops(int64_t batch, int64_t T) const;
  std::shared_ptr<Embedding> wte, wpe;
  std::shared_ptr<ModuleList<GPT2Block>> h;
  std::shared_ptr<LayerNorm> ln_f;
  std::shared_ptr<Dropout> drop;
  GPT2Config cfg;
};

class GPT2Model : public Module {  // HF's GPT2LMHeadModel
 public:
  GPT2Model(const GPT2Config& c, Generator& g);  // init as HF: N(0, 0.02), c_proj N(0, 0.02/sqrt(2 n_layer))
  std::string type_name() const override { return "GPT2Model"; }
  Var forward(const Tensor& idx);                            // logits (B, T, V)
  Var loss(const Var& logits, const Tensor& targets) const;  // mean cross entropy, ignore_index -100
  // FLOPs of forward on (B, T) ids: the transformer's, plus the tied head's product (2 B T C V); the lookups of wte
  // and wpe are free (nn/sequence_layer.h's convention). A training step is train_step_flops of it.
  double forward_flops(int64_t batch, int64_t T) const;
  // Generation: the cache of every block for a batch of B, then one token id per sequence (B) i64 -> the next
  // token's logits (B, V). Past n_positions a step throws, naming the limit.
  StreamState start_stream(int64_t batch) const;
  Var step(const Tensor& ids, StreamState& s);
  // ONNX export (nn/onnx/, docs/onnx.md) for T positions: adds the graph input "input_ids" (batch, T) int64 and the
  // output "logits" (batch, T, V), as forward(); weights under the state_dict's (HF's) names, the tied lm_head as
  // MatMul with wte transposed. T <= n_positions.
  void export_onnx(onnx::Graph& g, int64_t T);
  // The cached step as ONNX (docs/onnx.md, "GPT-2 files"), what step() does for any number of new tokens: inputs
  // "input_ids" (batch, new) int64 and per block i "past_key_values.<i>.key" / ".value" (batch, n_head, past, head
  // size), the keys and values of the positions before (past 0 on the first call: empty tensors); outputs "logits"
  // (batch, new, V) and "present.<i>.key" / ".value" (batch, n_head, past + new, head size), the next call's past.
  // The new tokens take positions past .. past + new - 1 and see every earlier position and each other causally;
  // past + new <= n_positions (ONNX Runtime fails on a position past wpe).
  void export_onnx_with_past(onnx::Graph& g);
  std::shared_ptr<GPT2Transformer> transformer;
  GPT2Config cfg;
};

// Reads n_layer, n_embd, vocab_size, n_positions from a HF safetensors file's shapes (n_head cannot be read
// from shapes: pass it; 12 for the 124M model).
GPT2Config gpt2_config_from_file(const std::string& path, int64_t n_head = 12);
// Loads a HF GPT-2 safetensors file: names with or without the "transformer." prefix; the causal-mask buffers
// (attn.bias, attn.masked_bias) and lm_head.weight (tied) are skipped. Strict otherwise: a missing, unexpected
// or wrong-shaped tensor throws CheckpointError listing it.
LoadReport load_gpt2_hf(GPT2Model& m, const std::string& path);

}  // namespace dl::nn
