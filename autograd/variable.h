// autograd/variable.h - reverse-mode automatic differentiation over Tensors.
//
// +------------------------------------------------------------------------------------------------+
// | Var is a cheap handle (shared_ptr) to a VarImpl: {Tensor data, Tensor grad, requires_grad,       |
// | grad_fn}. Copying a Var shares the VarImpl, so parameters held by a Module and by an optimiser   |
// | are the same object. The Tensor inside follows tensor.h's sharing rules.                         |
// +------------------------------------------------------------------------------------------------+
//
// The graph: every op (autograd/ops.h) that has an input requiring grad creates one Node, which
//   - names its op (name()), so graphs print readably (print_graph),
//   - holds what its backward needs (saved tensors, shapes) and frees it after backward unless
//     retain_graph is set; a second backward through a freed node is an error that says so,
//   - points to the Nodes that produced its inputs (next[i]; nullptr where no gradient is needed, so
//     backward skips input gradients nobody needs),
//   - implements apply(dy) -> one gradient per input, following the formula in the op's comment.
// Leaves (parameters, inputs with requires_grad) are reached through an AccumulateGrad node that
// adds (+=) into leaf.grad, so gradients accumulate across backward calls until zero_grad.
//
// What it is not: higher-order differentiation (backward of backward is not recorded).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tensor/ops.h"

namespace dl {

struct Node;
struct VarImpl {
  Tensor data;
  Tensor grad;  // undefined until a gradient arrives
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;      // null for leaves
  std::shared_ptr<Node> accumulator;  // leaves: the AccumulateGrad node, made on first use
  std::string name;                   // optional, for graph printing (parameters get their dotted name)
  // Leaves: called during backward right after this leaf's gradient for that backward is complete (every
  // contribution added), while the rest of the graph may still be running. Data-parallel training starts its
  // all-reduce there, so communication overlaps the remaining backward. A hook that holds its own Var (a copy
  // captured by value) is a reference cycle and keeps the leaf alive forever: capture a pointer or the Tensor.
  std::function<void()> grad_hook;
};

class Var {
 public:
  Var() = default;
  explicit Var(Tensor data, bool requires_grad = false);
  bool defined() const { return p_ != nullptr; }

  const Tensor& data() const { return p_->data; }
  Tensor& mutable_data() const { return p_->data; }  // optimisers update parameters in place
  const Tensor& grad() const { return p_->grad; }
  Tensor& mutable_grad() const { return p_->grad; }
  bool requires_grad() const { return p_ && p_->requires_grad; }
  void set_requires_grad(bool r);
  const std::shared_ptr<Node>& grad_fn() const { return p_->grad_fn; }
  bool is_leaf() const { return p_->grad_fn == nullptr; }
  const std::string& name() const { return p_->name; }
  void set_name(std::string n) const { p_->name = std::move(n); }
  void set_grad_hook(std::function<void()> hook) const { p_->grad_hook = std::move(hook); }  // see VarImpl
  VarImpl* impl() const { return p_.get(); }
  const std::shared_ptr<VarImpl>& impl_ptr() const { return p_; }

  // shape helpers (read from data)
  const Shape& shape() const { return p_->data.shape(); }
  int64_t size(int64_t d) const { return p_->data.size(d); }
  int64_t dim() const { return p_->data.dim(); }
  int64_t numel() const { return p_->data.numel(); }
  DType dtype() const { return p_->data.dtype(); }
  double item() const { return p_->data.item(); }

  // Backpropagate from this Var. With no gradient given, the Var must hold one element (a loss).
  void backward(const Tensor& grad_output = Tensor(), bool retain_graph = false) const;
  Var detach() const;  // same data, no history
  void zero_grad() const { p_->grad = Tensor(); }

 private:
  std::shared_ptr<VarImpl> p_;
};

struct Node {
  std::vector<std::shared_ptr<Node>> next;  // producer of each input; nullptr = no gradient needed
  uint64_t sequence = 0;                    // creation order: later nodes run first in backward
  bool released = false;                    // saved tensors freed by a backward without retain_graph

  virtual ~Node() = default;
  virtual const char* name() const = 0;
  // One gradient per input (undefined where !needs_grad(i)). dy has the output's shape.
  virtual std::vector<Tensor> apply(const Tensor& dy) = 0;
  virtual void release() {}  // drop saved tensors
  bool needs_grad(size_t i) const { return i < next.size() && next[i] != nullptr; }
};

// Gradient mode. Ops create nodes only when grad mode is on and an input requires grad.
bool grad_enabled();
struct NoGradGuard {  // RAII: no graph is recorded inside its scope
  NoGradGuard();
  ~NoGradGuard();
  bool prev;
};

// Record `out` as the result of node `n` applied to `inputs` (called by every op after computing its
// forward). Returns the output Var; wires n->next; sets n's sequence. When no input requires grad (or
// grad mode is off), returns a plain Var and the node is dropped.
Var record(std::shared_ptr<Node> n, const Tensor& out, const std::vector<Var>& inputs);
// Convenience for ops: true when a node should be built at all.
bool any_requires_grad(const std::vector<Var>& inputs);

// The backward engine: run all nodes reachable from `root` in reverse creation order.
void run_backward(const Var& root, const Tensor& grad_output, bool retain_graph);

// A readable dump of the graph below `v`: one node per line with its op name and input edges.
std::string graph_string(const Var& v);

}  // namespace dl
