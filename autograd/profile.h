// autograd/profile.h - where a training step's time goes, op by op (`--profile` in every app).
//
// While profiling is on, the graph recorder and the backward engine time every op by its name (the name
// graph_string prints):
//   forward : the wall time from the previous recorded op (or from the start of profiling) to this op's record(),
//             i.e. the time its forward took. Work that records no node in between (an op on tensors that need no
//             gradient, a host-side loop in a module) is counted into the next recorded op; in a training step
//             nearly every op records one.
//   backward: the wall time of the node's apply(dy) exactly, and the bytes of the gradients it returns.
// Each op's row: calls and milliseconds per pass, and megabytes written (forward: its output; backward: its input
// gradients). profile_report() sorts by total time and gives each row's share.
//
// On a device (an op's output on CUDA) the ops only queue work, so once one has, every clock read first waits for the
// device (Backend::synchronize): each row holds its own kernels' time, and the step runs slower than unprofiled.
// Off by default; when off the cost is one branch per recorded op and per backward node. One thread records at a
// time (the training step's thread); the ops' own OpenMP threads are inside the measured wall time.
// What it is not: a sampling profiler (no call stacks, no time inside an op by kernel), nor a count of FLOPs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace dl {

struct Node;

struct OpProfile {
  std::string op;
  int64_t forward_calls = 0, backward_calls = 0;
  double forward_ms = 0, backward_ms = 0;
  double forward_mb = 0, backward_mb = 0;
  double total_ms() const { return forward_ms + backward_ms; }
};

bool profiling();

// RAII: profiling on inside its scope, starting from an empty table; the table stays readable after it.
struct ProfileScope {
  ProfileScope();
  ~ProfileScope();
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;
};

// Restart the forward clock (e.g. after work that should not count into the next op, such as an optimizer step).
void profile_mark();

// The rows collected by the last (or current) ProfileScope, sorted by total time, longest first.
std::vector<OpProfile> profile_table();

// A markdown table of the top `top` rows (every row when top <= 0), with each one's share of the total, and a
// line with the totals of forward and backward. `title` heads it.
std::string profile_report(const std::string& title, int top = 15);

namespace detail {
// Called only when profiling() is on: by record() (forward) and by run_backward around each node's apply().
void profile_forward(const Node& n, const Tensor& out);
double profile_now_ms();
void profile_backward(const Node& n, double start_ms, const std::vector<Tensor>& grads);
}  // namespace detail

}  // namespace dl
