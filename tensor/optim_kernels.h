// tensor/optim_kernels.h - the optimizer's per-element work as tensor ops, each with its CPU loop and its device
// branch in one place, so optim/ and the harness never call a backend themselves.
//
//   adam_step_(s, param, grad, m, v)   one Adam/AdamW update of param, m, v in place (contiguous, one shape, f32/f64):
//       g = grad (+ wd param for Adam's L2 form); param *= shrink (AdamW's decoupled decay); m = b1 m + (1 - b1) g;
//       v = b2 v + (1 - b2) g^2; param -= step_size m / (sqrt(v) / bc2_sqrt + eps)      (optim/adam.h has the math)
//   sum_of_squares(g)                  sum of g^2 in f64 over every element (the global gradient norm is made of it;
//                                      a NaN or an infinity in g makes it non-finite)
//   adam_steps_(s, params, grads, m, v), sum_of_squares_all(gs)   the same over lists of tensors (one step count and
//                                      dtype per call): on a device one launch (and for the sum one read back) for the
//                                      whole list, the multi-tensor form; on the CPU the loops above, tensor by tensor
#pragma once
#include <vector>

#include "tensor/tensor.h"

namespace dl {

// The host-side scalars of one Adam/AdamW step (optim/adam.h): step_size = lr / (1 - b1^t),
// bc2_sqrt = sqrt(1 - b2^t), shrink = 1 - lr wd; decoupled = AdamW.
struct AdamScalars {
  double beta1, beta2, eps, weight_decay, step_size, bc2_sqrt, shrink;
  bool decoupled;
};

void adam_step_(const AdamScalars& s, const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v);
double sum_of_squares(const Tensor& g);
void adam_steps_(const AdamScalars& s, const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                 const std::vector<Tensor>& m, const std::vector<Tensor>& v);
double sum_of_squares_all(const std::vector<Tensor>& gs);

}  // namespace dl
