// nn/attention/attention_ops.h - the contract the attention family shares with its fast kernels in nn/fused/ (which
// may include a family's *_ops.h, not its modules: scripts/check_layers.sh): the prefix-LM mask's lengths.
//
// Prefix-LM (UniLM) mask: query t may attend key s iff s < prefix[b] or s <= t (the prefix reads itself both ways,
// the rest is causal). Defined in attention.cpp.
#pragma once
#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace dl::nn {

// Checks a prefix-length tensor: i64 of shape (B) with 0 <= prefix[b] <= S; fails naming `op` otherwise.
std::vector<int64_t> prefix_lengths(const Tensor& prefix, int64_t B, int64_t S, const char* op);

}  // namespace dl::nn
