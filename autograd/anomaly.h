// autograd/anomaly.h - anomaly mode: name the op that first produces a NaN or an infinity.
//
// A NaN in a loss says that something went wrong, not where. With anomaly mode on (PyTorch's detect_anomaly does
// the same for its backward), the graph recorder and the backward engine check every value they hand on:
//   forward : the output of every op that records a node (autograd/variable.h record()), as soon as it is computed;
//   backward: every gradient an op's backward returns for one of its inputs, before it is passed down.
// The first value with a NaN or an infinity in it throws an AnomalyError naming the op (its name as graph_string
// prints it), the pass, the output's shape and the first bad element. The training harness adds the step.
//
// Off by default. When off, the cost is one branch per recorded op and per backward node. When on, every recorded
// value is read once more (on the CPU): training is slower; docs/reliability.md gives the measured figure.
// What it is not: a check of ops that record no node (nothing requires grad, or grad mode is off - evaluation),
// nor of the adds that sum several contributions to one gradient.
#pragma once
#include <atomic>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "tensor/tensor.h"

namespace dl {

struct Node;

// Thrown by anomaly mode. op: the node's name; pass: "forward" or "backward"; shape: the bad tensor's.
struct AnomalyError : std::runtime_error {
  AnomalyError(const std::string& message, std::string op, std::string pass, Shape shape)
      : std::runtime_error(message), op(std::move(op)), pass(std::move(pass)), shape(std::move(shape)) {}
  std::string op, pass;
  Shape shape;
};

namespace detail {
inline std::atomic<bool> g_anomaly_mode{false};  // one flag for every thread (a training step may use several)
}

inline bool anomaly_mode() { return detail::g_anomaly_mode.load(std::memory_order_relaxed); }
inline void set_anomaly_mode(bool on) { detail::g_anomaly_mode.store(on, std::memory_order_relaxed); }

// RAII: anomaly mode on (or off) inside its scope, as it was before after it.
struct AnomalyModeGuard {
  explicit AnomalyModeGuard(bool on = true) : prev(anomaly_mode()) { set_anomaly_mode(on); }
  ~AnomalyModeGuard() { set_anomaly_mode(prev); }
  AnomalyModeGuard(const AnomalyModeGuard&) = delete;
  AnomalyModeGuard& operator=(const AnomalyModeGuard&) = delete;
  bool prev;
};

// "" when every element of t is finite (integer tensors always are), else what the first bad one is:
// "NaN at element 3 (2 of 5 elements not finite)".
std::string non_finite_summary(const Tensor& t);

// The two checks (called only when anomaly_mode() is on): throw AnomalyError when the value is not finite.
void check_forward_output(const Node& n, const Tensor& out);
void check_backward_gradient(const Node& n, const Tensor& dy, size_t input, const Tensor& grad);

}  // namespace dl
