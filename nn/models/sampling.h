// nn/models/sampling.h - choosing the next token from a language model's logits, as generation does it: temperature,
// top-k and top-p (nucleus) sampling, drawn from a Generator so that the same seed gives the same text.
//
//   p = softmax(logits / temperature)          temperature 0: the argmax (greedy), no draw
//   keep the top_k most probable (0: all), then the fewest most probable whose mass reaches top_p (1: all)
//   renormalise what is kept and draw one token with one uniform number from the Generator
// Ties are broken by the smaller token id, so the choice depends only on the logits, the options and the draw.
#pragma once
#include <cstdint>

#include "tensor/tensor.h"

namespace dl::nn {

struct SamplingOptions {
  double temperature = 1.0;  // >= 0; 0: greedy
  int64_t top_k = 0;         // >= 0; 0: no limit
  double top_p = 1.0;        // in (0, 1]
};

// Throws naming the field when an option is out of range.
void check_sampling(const SamplingOptions& o);
// logits: V floats (one row). Returns the token id.
int64_t sample_token(const float* logits, int64_t V, const SamplingOptions& o, Generator& g);

}  // namespace dl::nn
