// autograd/device.cpp - the device move node (see device.h).
#include "autograd/device.h"

namespace dl {

namespace {

struct ToDeviceNode : Node {
  Device from;
  const char* name() const override { return "to_device"; }
  std::vector<Tensor> apply(const Tensor& dy) override { return {dy.to(from)}; }  // in the forward: y = x.to(d)
};

}  // namespace

Var to_device(const Var& x, Device d) {
  if (!x.defined() || x.data().device() == d) return x;
  Tensor y = x.data().to(d);
  if (!any_requires_grad({x})) return Var(y);
  auto n = std::make_shared<ToDeviceNode>();
  n->from = x.data().device();
  return record(n, y, {x});
}

}  // namespace dl
