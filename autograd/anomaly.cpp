// autograd/anomaly.cpp - the NaN / infinity checks of anomaly mode (see anomaly.h).
#include "autograd/anomaly.h"

#include <cmath>

#include "autograd/variable.h"

namespace dl {

std::string non_finite_summary(const Tensor& t) {
  if (!t.defined() || t.dtype() == DType::i64) return "";
  const Tensor c = (t.device() == Device::cpu ? t : t.to(Device::cpu)).contiguous();
  int64_t first = -1, bad = 0;
  double value = 0;
  dispatch_float(c.dtype(), "non_finite_summary", [&]<class T>() {
    const T* p = c.data<T>();
    for (int64_t i = 0; i < c.numel(); i++)
      if (!std::isfinite(p[i])) {
        if (first < 0) first = i, value = p[i];
        bad++;
      }
  });
  if (bad == 0) return "";
  const std::string what = std::isnan(value) ? "NaN" : value > 0 ? "+Inf" : "-Inf";
  return what + " at element " + std::to_string(first) + " (" + std::to_string(bad) + " of " + std::to_string(c.numel()) +
         " elements not finite)";
}

void check_forward_output(const Node& n, const Tensor& out) {
  const std::string bad = non_finite_summary(out);
  if (bad.empty()) return;
  throw AnomalyError(std::string("anomaly mode: the forward of op '") + n.name() + "' produced " + bad +
                         " in its output of shape " + shape_str(out.shape()),
                     n.name(), "forward", out.shape());
}

void check_backward_gradient(const Node& n, const Tensor& dy, size_t input, const Tensor& grad) {
  const std::string bad = non_finite_summary(grad);
  if (bad.empty()) return;
  throw AnomalyError(std::string("anomaly mode: the backward of op '") + n.name() + "' (output of shape " +
                         shape_str(dy.shape()) + ") produced " + bad + " in the gradient for its input " +
                         std::to_string(input) + " of shape " + shape_str(grad.shape()),
                     n.name(), "backward", grad.shape());
}

}  // namespace dl
