// autograd/anomaly.cpp - the NaN / infinity checks of anomaly mode (see anomaly.h).
#include "autograd/anomaly.h"

#include <bit>
#include <cmath>
#include <cstdint>

#include "autograd/variable.h"

namespace dl {

namespace {

// True when some element is NaN or +-Inf: exactly the floats whose exponent bits are all ones. Tested on the bits, so
// the loop is a plain integer OR that the compiler vectorises (most tensors are clean: this is the fast path).
template <class T, class Bits> bool any_non_finite(const T* p, int64_t n, Bits exponent) {
  Bits bad = 0;
  for (int64_t i = 0; i < n; i++) bad |= Bits((std::bit_cast<Bits>(p[i]) & exponent) == exponent);
  return bad != 0;
}

}  // namespace

std::string non_finite_summary(const Tensor& t) {
  if (!t.defined() || t.dtype() == DType::i64) return "";
  const Tensor c = (t.device() == Device::cpu ? t : t.to(Device::cpu)).contiguous();
  const bool clean = c.dtype() == DType::f32 ? !any_non_finite(c.data<float>(), c.numel(), uint32_t(0x7f800000u))
                                             : !any_non_finite(c.data<double>(), c.numel(), uint64_t(0x7ff0000000000000ull));
  if (clean) return "";
  int64_t first = -1, bad = 0;  // the slow path, for the message
  double value = 0;
  dispatch_float(c.dtype(), "non_finite_summary", [&]<class T>() {
    const T* p = c.data<T>();
    for (int64_t i = 0; i < c.numel(); i++)
      if (!std::isfinite(p[i])) {
        if (first < 0) first = i, value = p[i];
        bad++;
      }
  });
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
