// nn/fused/lstm_kernels.h - the LSTM's hand-written nodes (the fast wing of nn/recurrent/lstm.h).
//
//   lstm_cell_fused   one step's pointwise part (gates -> h_t, c_t) as one Node, forward and backward written out
//                     (the formulas are in nn/recurrent/lstm.h). Twin: lstm_cell_composed (sigmoid/tanh/mul/add
//                     primitives), nn/recurrent/lstm.cpp; agreement: tests/nn/recurrent/test_lstm.cpp.
//   lstm_sequence     a whole layer as one Node (f32 CPU, no layer norm): one sgemm for the input projection of
//                     all steps, then per step the recurrent sgemm and a vectorised cell, the threads splitting
//                     the hidden units once for the whole loop. Twin: the per-step graph of LSTM::forward
//                     (LSTMOptions::sequence = false); agreement: tests/nn/fused/test_lstm_fast.cpp.
// Shape letters: B batch, L length, I input size, Hd hidden size. Gate order i, f, g, o as PyTorch.
#pragma once
#include "autograd/ops.h"

namespace dl::nn {

// x (B, L, I) -> h (B, L, Hd), zero initial states; f32 CPU only.
Var lstm_sequence(const Var& x, const Var& w_ih, const Var& w_hh, const Var& b_ih, const Var& b_hh);

// gates (B, 4Hd), c (B, Hd) -> (B, 2, Hd) holding [h_t, c_t].
Var lstm_cell_fused(const Var& gates, const Var& c);

}  // namespace dl::nn
