// nn/attention/positions.h - position information for attention: absolute (sinusoidal, learned) and rotary.
//
// Shape letters: B batch, T time, C channels (d_model), NH heads, HS head size (C = NH * HS).
//
//   sinusoidal (Vaswani et al. 2017)  pe[t, 2i] = sin(t w_i), pe[t, 2i+1] = cos(t w_i), w_i = 10000^(-2i/C);
//                                     y = x + pe[:T]          no parameters
//   learned (GPT-2's wpe)             y = x + weight[:T]      weight (max_len, C)
//   rotary, RoPE (Su et al. 2021)     interleaved pairs (x[2i], x[2i+1]) of each head vector rotated by the
//                                     angle (t + offset) theta_i, theta_i = 10000^(-2i/HS), i < HS/2:
//                                       y[2i]   = x[2i] cos - x[2i+1] sin
//                                       y[2i+1] = x[2i] sin + x[2i+1] cos
//                                     (as the SPT repository). A rotation keeps |x|, and R(s)^T R(t) = R(t - s),
//                                     so q_t . k_s depends on t - s only.
#pragma once
#include "autograd/ops.h"
#include "nn/module.h"

namespace dl::nn {

Tensor sinusoidal_table(int64_t T, int64_t C, DType dtype = DType::f32);  // (T, C)

class SinusoidalPositions : public Module {
 public:
  std::string type_name() const override { return "SinusoidalPositions"; }
  Var forward(const Var& x) const;  // (B, T, C) -> (B, T, C)
};

class LearnedPositions : public Module {
 public:
  LearnedPositions(int64_t max_len, int64_t dim, Generator& g, double std = 0.02);
  std::string type_name() const override { return "LearnedPositions"; }
  Var forward(const Var& x) const;  // (B, T, C) -> x + weight[:T]; T > max_len is an error
  Var weight;
  int64_t max_len, dim;
};

// x (B, NH, T, HS) with HS even -> the same shape, rotated as above (positions offset .. offset+T-1).
Var apply_rotary(const Var& x, int64_t offset = 0);

}  // namespace dl::nn
