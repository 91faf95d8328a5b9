// autograd/slice_grad.h - an optional fast path of the backward engine for nodes whose gradient is dy placed
// in a slice of zeros (narrow, select).
//
// Such a node adds dy straight into the slice of its single input's pending gradient `g` (creating g as zeros
// when it is undefined; copying it first when it is not `owned`, i.e. may alias another tensor) instead of
// returning a zero tensor of the input's full shape for the engine to add. The sums are the same as apply()
// followed by the engine's add; the memory traffic is the slice's instead of the whole input's. It matters
// for recurrences: an LSTM selects each of its L steps from one (B, L, 4H) tensor, which was O(L^2) traffic.
#pragma once
#include "autograd/variable.h"

namespace dl {

struct SliceGradNode : Node {
  // Returns false when the fast path does not apply (then the engine calls apply()).
  virtual bool accumulate_slice(const Tensor& dy, Tensor& g, bool& owned) = 0;
};

}  // namespace dl
