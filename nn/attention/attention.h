// nn/attention/attention.h - multi-head scaled dot-product attention as a readable composition of primitives.
//
// Shape letters: B batch, T query time, S key time (S = T for self-attention), C channels (d_model),
// NH heads, HS head size, C = NH * HS.
//
//   q, k, v = x Wq^T + bq, m Wk^T + bk, m Wv^T + bv     (B, T, C), (B, S, C)    m = x, or the memory
//   split heads                                        (B, NH, T, HS), (B, NH, S, HS)
//   [rotary]  q, k = R q, R k                          (positions.h)
//   scores  = q k^T / sqrt(HS) [+ bias]                (B, NH, T, S)
//   allowed = key_mask[b, s] != 0  and  (causal: s <= t)  and  (window w: |t - s| <= w)
//             prefix-LM (UniLM): causal replaced by  (s < prefix[b]  or  s <= t)
//   scores  = allowed ? scores : -1e9                  (a large finite value, so a row with nothing allowed
//                                                       stays finite: it averages v instead of giving NaN)
//   weights = softmax(scores, over S)                  returned on request
//   weights = dropout(weights)                         training only
//   y       = weights v                                (B, NH, T, HS)
//   out     = merge_heads(y) Wo^T + bo                 (B, T, C)
//
// Parameters as torch.nn.MultiheadAttention: in_proj_weight (3C, C) = [Wq; Wk; Wv], in_proj_bias (3C),
// out_proj.weight (C, C), out_proj.bias (C). key_mask is (B, S): 1 for real positions, 0 for padding
// (the opposite sign of torch's key_padding_mask).
//
// Local (windowed) attention for long sequences (Path-X): each query t attends to keys |t - s| <= w. The
// sequence is cut into blocks of w; block i's queries need only keys in blocks i-1, i, i+1, so scores are
// (B, NH, T/w, w, 3w): memory O(T w) instead of O(T^2). It equals full attention with a band mask
// (tests/nn/attention/test_attention.cpp).
//
// Prefix-LM mask (UniLM, Dong et al. 2019, arXiv 1905.03197; the seq2seq mask of SimBERT / RoFormer-Sim): a per-example
// prefix length P_b (an i64 tensor (B), 0 <= P_b <= S). The first P_b positions ("[CLS] A [SEP]") see one another in
// both directions; every later position sees the whole prefix and itself and the positions before it, never a later
// one. Nobody in the prefix sees past it, so the prefix's outputs equal those of the prefix encoded alone. P_b = 0 is
// the causal mask, P_b = T is full attention. Because allowed keys are s < max(P_b, t + 1), the row is still a
// contiguous run of keys and the fused and packed primitives support it (see the path table below).
//
//        s: 0 1 2 3 4 5        P = 3 (x = allowed)
//   t = 0   x x x . . .
//   t = 1   x x x . . .
//   t = 2   x x x . . .
//   t = 3   x x x x . .
//   t = 4   x x x x x .
//   t = 5   x x x x x x
//
// The fused twin (one primitive, online softmax, no T x S matrix) is nn/fused/fused_attention.h; both agree in tests.
// The fast paths for f32 CPU self-attention are nn/fused/qkv_attention.h and nn/fused/flash_attention.h (table below).
#pragma once
#include "nn/attention/attention_ops.h"
#include "nn/layers.h"
#include "nn/sequence_layer.h"

namespace dl::nn {

Var split_heads(const Var& x, int64_t heads);  // (B, T, C) -> (B, NH, T, HS)
Var merge_heads(const Var& x);                 // (B, NH, T, HS) -> (B, T, C)

struct SDPAOptions {
  Tensor key_mask;      // (B, S), 1 = real, or undefined
  bool causal = false;  // s <= t (T == S)
  int64_t window = 0;   // > 0: |t - s| <= window (band mask; full T x S matrix)
  Var bias;             // added to the scores, broadcast to (B, NH, T, S) (T5's relative bias), or undefined
  Tensor prefix;        // (B) i64, the prefix-LM mask (replaces causal: s < prefix[b] or s <= t), or undefined
  bool scale = true;    // divide by sqrt(HS) (T5 does not)
  double dropout = 0;   // on the weights, when training
  bool training = false;
  Generator* gen = nullptr;
};
// q (B, NH, T, HS), k/v (B, NH, S, HS) -> (B, NH, T, HS); *weights = softmax weights (B, NH, T, S) if asked.
Var scaled_dot_product_attention(const Var& q, const Var& k, const Var& v, const SDPAOptions& o, Var* weights = nullptr);

// Block-wise local attention (see above): q, k, v (B, NH, T, HS), key_mask (B, T) or undefined.
Var local_attention(const Var& q, const Var& k, const Var& v, const Tensor& key_mask, int64_t window, bool causal);
// Generation's attention: one query position q (B, NH, 1, HS) against a key/value cache. Appends k, v (B, NH, 1, HS)
// to K, V (undefined at the first position), keeps the last window + 1 positions when window > 0 (|t - s| <= w), and
// attends to every cached position (all at or before the query: no mask, no dropout) -> (B, NH, 1, HS).
Var attend_to_cache(const Var& q, const Var& k, const Var& v, Tensor& K, Tensor& V, int64_t window = 0);

// The allowed-mask as 0/1 of dtype `dt`, shape (B or 1, 1, T, S); validates key_mask's and prefix's shapes (names `op`).
// prefix (B) i64 or undefined: the prefix-LM mask, which replaces `causal`.
Tensor attention_allowed(const Tensor& key_mask, int64_t B, int64_t T, int64_t S, bool causal, int64_t window, DType dt,
                         const char* op, const Tensor& prefix = Tensor());

// prefix_lengths (the prefix-LM mask's check, shared with nn/fused/): attention_ops.h

// The length from which the blocked online-softmax kernel (nn/fused/flash_attention.h) is faster than the packed one
// on this machine, measured with bench_workloads scaling (docs/performance.md "Scaling table"): a whole training step
// of a d 128, 4-head block is as fast or faster on the packed kernel at T = 32 and 64 (the blocked one pads to
// 48 x 128 tiles), on the blocked one from T = 96 on (1.1x at 96, 1.2x at 128, 1.9-3.5x from 512).
inline constexpr int64_t kFlashFrom = 96;

struct AttentionOptions {
  int64_t heads = 1;
  double dropout = 0;  // on attention weights
  bool causal = false;
  bool rotary = false;  // RoPE on q and k (self-attention)
  int64_t window = 0;   // > 0: local attention, keys |t - s| <= window (the flash kernel's band; else block-wise)
  bool fused = false;   // use nn/fused/fused_attention.h when no weights, dropout, window or bias are involved
  bool packed = true;   // otherwise use nn/fused/qkv_attention.h (sgemm per head, no T x T tensor kept) for f32 CPU
                        // self-attention without returned weights (the flash kernel with a window); false: the
                        // composed path (the windowed one with a window)
  int64_t flash_from = kFlashFrom;  // from this length T on, that self-attention runs on the blocked kernel instead
};

// Which implementation computes the attention; all compute the same map (each agreement test names its twin):
//   path       runs when                                                     why
//   flash      self-attention, f32 on the CPU, no weights asked,              blocked online softmax, tiles in
//              option packed (default), fused not chosen, T >= flash_from     L1/L2, O(T) memory: at long T the
//              or window > 0 (any T)                                          packed path's T x T scratch falls
//                                                                             out of cache; with a window only
//                                                                             the band's key blocks: O(T w) work
//                                                                             (nn/fused/flash_attention.h)
//              or the same on a device, any T or window, head size <= 128     the backend's attention primitive
//                                                                             (cuda/ops/attention_tc.cuh): O(T) memory
//   packed     the same with T < flash_from and no window                     sgemm per head on the packed
//                                                                             projection; the T x T scores
//                                                                             never outlive one (b, h)
//                                                                             (nn/fused/qkv_attention.h)
//   windowed   self-attention with window > 0 not taking the flash path       O(T w) memory (local_attention);
//              (packed = false, float64, a device's head > 128), no prefix    no attention dropout
//   fused      option fused, on the CPU, no weights asked, no dropout while   online softmax, one primitive
//              training                                                       (nn/fused/fused_attention.h)
//   composed   everything else: cross-attention, returned weights, float64,   the readable reference:
//              a device's head size > 128, packed = false                     scaled_dot_product_attention
// flash and packed take the same inputs (key padding, causal, prefix lengths, the same hash dropout mask), so the
// switch at flash_from changes speed, not results (beyond float32 rounding). kFlashFrom is measured, not guessed:
// docs/performance.md's scaling table times all paths at each length.
// A prefix-LM mask (forward_prefix) runs on the flash, packed and fused paths (the primitives take the prefix lengths)
// and on the composed one; with window > 0 off the flash path it goes to the composed path (band and prefix masks on
// the full T x T matrix), since the block-wise local attention has no prefix.
// Until 2026-12-06 every window took the windowed path, which applies no attention dropout; on the flash path a
// window gets the same hash dropout as full attention (the LRA presets with a window have dropout 0: no change there).
enum class AttentionPath { flash, packed, windowed, fused, composed };
// length: the sequence length T (0 = unknown: packed rather than flash); head_size: d_model / heads (0 = unknown: the
// composed path on a device).
AttentionPath choose_attention_path(const AttentionOptions& o, bool self, bool want_weights, bool training, DType dtype,
                                    Device device, bool prefix = false, int64_t length = 0, int64_t head_size = 0);

// The (query, key) pairs self-attention over T positions computes: T^2, T (T + 1) / 2 when causal, and with a window
// w > 0 only |t - s| <= w. A FLOP count's unit (nn/sequence_layer.h): each pair costs 4 HS FLOPs per head.
double attention_pairs(int64_t T, bool causal, int64_t window);

class MultiheadAttention : public SequenceLayer {
 public:
  MultiheadAttention(int64_t d_model, const AttentionOptions& opt, Generator& g);
  // registry "attention": heads [4], dropout [0], rotary [false], causal [false], window [0], fused [false],
  // packed [true]
  static std::shared_ptr<MultiheadAttention> from_config(int64_t d_model, const LayerConfig& c, Generator& g);
  static std::vector<std::string> config_keys();
  std::string type_name() const override { return "MultiheadAttention"; }
  std::string extra_repr() const override;
  bool is_causal() const override { return opt.causal; }
  // Self-attention: x (B, T, C), key_mask (B, T) or undefined -> (B, T, C).
  Var forward(const Var& x, const Tensor& key_mask) override;
  // The same, also returning the attention weights (B, NH, T, T) (composed path; no window).
  Var forward_with_weights(const Var& x, const Tensor& key_mask, Var* weights);
  // Self-attention under the prefix-LM mask: prefix (B) i64, 0 <= prefix[b] <= T (see above; opt.causal is ignored,
  // the mask already is causal after the prefix). weights: (B, NH, T, T) if asked (composed path).
  Var forward_prefix(const Var& x, const Tensor& key_mask, const Tensor& prefix, Var* weights = nullptr);
  // Cross-attention: queries from x (B, T, C), keys/values from memory (B, S, C), memory_mask (B, S).
  Var cross(const Var& x, const Var& memory, const Tensor& memory_mask, Var* weights = nullptr);
  // Streaming (causal self-attention, nn/sequence_layer.h): a key/value cache. The state holds the keys and values
  // so far (B, NH, t, HS), rotated at their positions; a step projects the new position, appends its key and value,
  // and attends from its query to the cache (the last window + 1 keys with a window). O(t) per step, as it must be.
  Var step(const Var& x, StreamState& s) override;  // (B, C) -> (B, C)
  // ONNX export (nn/onnx/): the composed path as standard operators, scores = Where(allowed, q k^T / sqrt(HS), -1e9)
  // with allowed = key mask x causal x band (window) as the composed path has them; RoPE with tables for the length.
  std::string export_onnx(onnx::Graph& g, const onnx::Sequence& in, const std::string& prefix) override;
  // The projections q, k, v, o (8 L C^2) and the scores and weighted sums over attention_pairs (4 C per pair)
  double forward_flops(int64_t batch, int64_t L) const override;  // nn/sequence_layer.h's convention

  Var in_proj_weight, in_proj_bias;
  std::shared_ptr<Linear> out_proj;
  AttentionOptions opt;
  // When set, forward() takes the composed path and appends its weights (B, NH, T, T) here, so an inspection tool
  // (apps/explain) can read every layer's map from a whole model's forward without threading a pointer through it.
  std::vector<Var>* record_weights = nullptr;
  bool record_attention(std::vector<Var>* slot) override { return record_weights = slot, true; }  // nn/module.h
  int64_t d_model;

 private:
  Var attend(const Var& x, const Var& memory, const Tensor& mask, bool self, Var* weights, const Tensor& prefix = Tensor());
  Var packed_self_attention(const Var& x, const Tensor& mask, const Tensor& prefix, bool flash);
  Generator* gen_;
};

}  // namespace dl::nn
