// nn/inspect.cpp - the helpers of nn/inspect.h.
#include "nn/inspect.h"

namespace dl::nn {

std::vector<int64_t> conv_tap_offsets(int64_t kernel_size, int64_t dilation, bool causal) {
  const int64_t pad = causal ? (kernel_size - 1) * dilation : (kernel_size - 1) * dilation / 2;
  std::vector<int64_t> off;
  for (int64_t k = 0; k < kernel_size; k++) off.push_back(k * dilation - pad);
  return off;
}

}  // namespace dl::nn
