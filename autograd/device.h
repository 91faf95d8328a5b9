// autograd/device.h - a Var moved to another device, as a differentiable op.
//
//   to_device(x, d)   y = x copied to device d          dx = dy copied back to x's device
//
// For the small computations that have no device kernel and run on the host beside a model on the device: their
// inputs come to the host and their result goes back, and gradients flow through both copies (the S4D kernel's
// Vandermonde products, nn/ssm/ssm_ops.cpp). A no-op (the same Var) when x is on d already.
#pragma once
#include "autograd/variable.h"

namespace dl {

Var to_device(const Var& x, Device d);

}  // namespace dl
