// optim/clip.h - global-norm gradient clipping and gradient accumulation.
//
// clip_grad_norm follows torch.nn.utils.clip_grad_norm_ (1.13/2.x):
//   total = ( sum over params of ||g_p||^q )^(1/q)         (q = norm_type; q = inf: max |g|)
//   coef  = min(1, max_norm / (total + 1e-6))
//   every g_p *= coef   (in place; a no-op when coef == 1)
// and returns `total`, the norm BEFORE clipping. Params without a gradient are ignored. The norm is summed
// in double (torch sums in float32; the difference is far below our fixture tolerance).
//
// Gradient accumulation: k micro-batches make one optimiser step. Gradients add up in .grad across
// backward calls (autograd/variable.h), so the only question is the scale. Two equivalent ways, when each
// micro-batch loss is a mean over equally many samples:
//   (a) scale each micro-batch's loss by 1/k before backward (GradAccumulation::loss_scale());
//   (b) backward the plain losses and call scale_grads(params, 1.0 / k) once before clipping and step().
// Either gives the gradient of the mean loss over all k micro-batches (up to float rounding), so clipping,
// the optimiser and the lr schedule see one step per k micro-batches. GradAccumulation counts micro-batches.
#pragma once
#include <limits>
#include <vector>

#include "autograd/variable.h"

namespace dl::optim {

double clip_grad_norm(const std::vector<Var>& params, double max_norm, double norm_type = 2.0, bool error_if_nonfinite = false);
// The total norm alone (no clipping), e.g. for logging.
double grad_norm(const std::vector<Var>& params, double norm_type = 2.0);
// g *= factor for every parameter that has a gradient.
void scale_grads(const std::vector<Var>& params, double factor);

class GradAccumulation {
 public:
  explicit GradAccumulation(int k);
  int k() const { return k_; }
  double loss_scale() const { return 1.0 / k_; }
  // Call once per micro-batch after its backward: true when k micro-batches are in, i.e. time to clip,
  // step() and zero_grad(). The counter then restarts.
  bool micro_batch_done();
  int pending() const { return pending_; }  // micro-batches accumulated since the last step (for checkpoints)
  void set_pending(int n);

 private:
  int k_, pending_ = 0;
};

}  // namespace dl::optim
