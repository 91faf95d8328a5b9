// nn/inspect.h - what a layer can show of itself to an inspection tool, in one described form per kind of picture.
//
// An inspection tool (apps/explain) walks a model's module tree and asks every module the capability hooks of
// nn/module.h (record_attention, conv_taps, record_conv_taps, ssm_kernel). A layer with something to picture answers
// with the forms below; the defaults answer "nothing here". So the tool never names a layer's type, and a new layer
// that answers a hook shows up in it with no change to the tool (tests/apps/test_explain.cpp has a test-only layer
// that does). What it is not: a way to change what a layer computes - the answers are read-only views.
// Shape letters: R rows (heads or channels), K taps, Cc kernel channels (1, or 2 when bidirectional), H channels,
// L length.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace dl::nn {

// A convolution's taps: y[t] = sum_k w[k] x[t + offsets[k]] (negative offsets read the past).
//   fixed taps      `taps` (R, K): the weights themselves, one row per head or channel
//   predicted taps  `taps` undefined: the layer computes a kernel at every position from its input, and records them
//                   during forward through Module::record_conv_taps as (B, L, R, K)
struct ConvTaps {
  std::string kind;  // a word for the reader ("lightweight", "dilated", "dynamic"); empty: no convolution
  int64_t kernel_size = 0, dilation = 1;
  bool causal = false;
  std::vector<int64_t> offsets;  // (K), ascending
  std::string row;               // what one row is: "head" or "channel"
  Tensor taps;                   // float32 (R, K) on the host, or undefined (predicted per position)
  std::string meaning;           // what a tap's value is, in words (a plot's axis label)
  bool defined() const { return !kind.empty(); }
};

// The offsets of K taps d apart: k d - pad, pad = (K - 1) d when causal (everything before t), (K - 1) d / 2 otherwise.
std::vector<int64_t> conv_tap_offsets(int64_t kernel_size, int64_t dilation, bool causal);

// A state space layer's convolution kernel, y = K * u + D u per channel (its impulse response), and its time scale.
struct SSMKernel {
  Tensor K;                     // float32 (Cc, H, L) on the host; undefined: the module is no state space layer
  std::vector<double> dt;       // its step sizes, one per channel (H) or one per mode; empty when it has none
  bool dt_per_channel = false;  // dt[h] belongs to channel h
  std::string dt_source;        // where dt comes from, in words ("exp(kernel.log_dt), one per channel")
};

}  // namespace dl::nn
