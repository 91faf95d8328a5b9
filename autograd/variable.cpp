// autograd/variable.cpp - Var, the graph recorder and the backward engine.
#include "autograd/variable.h"

#include "autograd/anomaly.h"
#include "autograd/profile.h"
#include "autograd/slice_grad.h"

#include <algorithm>
#include <atomic>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace dl {

namespace {
thread_local bool g_grad_enabled = true;
std::atomic<uint64_t> g_sequence{0};

// The node that sits at a leaf: adds the arriving gradient into leaf.grad (gradients accumulate).
struct AccumulateGrad : Node {
  std::weak_ptr<VarImpl> leaf;
  const char* name() const override { return "accumulate_grad"; }
  std::vector<Tensor> apply(const Tensor& dy) override {
    auto v = leaf.lock();
    if (!v) return {};
    if (dy.shape() != v->data.shape())
      fail("backward: gradient of shape " + shape_str(dy.shape()) + " arrived at a leaf of shape " + shape_str(v->data.shape()) +
           (v->name.empty() ? "" : " ('" + v->name + "')"));
    if (!v->grad.defined()) v->grad = dy.clone();  // own copy: dy may alias another node's buffer
    else add_(v->grad, dy);
    if (v->grad_hook) v->grad_hook();
    return {};
  }
};

std::shared_ptr<Node> edge_of(const Var& v) {
  if (!v.defined() || !v.requires_grad()) return nullptr;
  VarImpl* p = v.impl();
  if (p->grad_fn) return p->grad_fn;
  if (!p->accumulator) {
    auto acc = std::make_shared<AccumulateGrad>();
    acc->leaf = v.impl_ptr();
    p->accumulator = acc;
  }
  return p->accumulator;
}
}  // namespace

bool grad_enabled() { return g_grad_enabled; }
NoGradGuard::NoGradGuard() : prev(g_grad_enabled) { g_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { g_grad_enabled = prev; }

Var::Var(Tensor data, bool requires_grad) : p_(std::make_shared<VarImpl>()) {
  p_->data = std::move(data);
  set_requires_grad(requires_grad);
}

void Var::set_requires_grad(bool r) {
  if (r && p_->grad_fn) fail("set_requires_grad: only leaves can change requires_grad; use detach() first");
  if (r && p_->data.defined() && p_->data.dtype() == DType::i64) fail("set_requires_grad: integer tensors cannot require grad");
  p_->requires_grad = r;
}

Var Var::detach() const { return Var(p_->data, false); }

bool any_requires_grad(const std::vector<Var>& inputs) {
  if (!g_grad_enabled) return false;
  for (const Var& v : inputs)
    if (v.requires_grad()) return true;
  return false;
}

Var record(std::shared_ptr<Node> n, const Tensor& out, const std::vector<Var>& inputs) {
  if (anomaly_mode()) check_forward_output(*n, out);
  if (profiling()) detail::profile_forward(*n, out);
  if (!any_requires_grad(inputs)) return Var(out);
  n->next.clear();
  for (const Var& v : inputs) n->next.push_back(edge_of(v));
  n->sequence = ++g_sequence;
  Var r(out);
  r.impl()->requires_grad = true;
  r.impl()->grad_fn = std::move(n);
  return r;
}

void Var::backward(const Tensor& grad_output, bool retain_graph) const {
  if (!requires_grad()) fail("backward: this Var does not require grad (no parameter or input in its history requires grad)");
  Tensor g = grad_output;
  if (!g.defined()) {
    if (numel() != 1)
      fail("backward: called without a gradient on a Var of shape " + shape_str(shape()) +
           "; only a single-element loss may omit it");
    g = ones(shape(), dtype(), data().device());
  } else if (g.shape() != shape()) {
    fail("backward: gradient of shape " + shape_str(g.shape()) + " given for a Var of shape " + shape_str(shape()));
  }
  run_backward(*this, g, retain_graph);
}

void run_backward(const Var& root, const Tensor& grad_output, bool retain_graph) {
  std::shared_ptr<Node> start = edge_of(root);
  // 1. every node reachable from the root
  std::vector<Node*> order;
  std::unordered_set<Node*> seen;
  std::vector<Node*> stack{start.get()};
  seen.insert(start.get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    order.push_back(n);
    for (auto& nx : n->next)
      if (nx && seen.insert(nx.get()).second) stack.push_back(nx.get());
  }
  // 2. reverse creation order is a topological order: a node is created after all its inputs' nodes.
  //    Leaf accumulators have sequence 0 and would run last; each runs as soon as its last contribution has
  //    arrived instead (counted in `waiting`), so a leaf's gradient (and its grad_hook) is complete while the
  //    rest of the graph still runs. The values are the same either way: the same contributions, added in the
  //    same order.
  std::sort(order.begin(), order.end(), [](Node* a, Node* b) { return a->sequence > b->sequence; });
  std::unordered_map<Node*, int> waiting;  // contributions still to come, per node
  for (Node* n : order)
    for (auto& nx : n->next)
      if (nx) waiting[nx.get()]++;

  struct Pending {
    Tensor g;
    bool owned = false;  // g is our own buffer, safe to add into in place
  };
  std::unordered_map<Node*, Pending> grads;
  std::unordered_set<Node*> accumulated;  // accumulators already run early
  grads[start.get()] = {grad_output, false};
  auto arrived = [&](Node* nx) {  // one contribution into nx is in; run a leaf accumulator once all are
    if (--waiting[nx] > 0 || nx->sequence != 0 || !accumulated.insert(nx).second) return;
    auto it = grads.find(nx);
    if (it == grads.end() || !it->second.g.defined()) return;
    Tensor dy = it->second.g;
    grads.erase(it);
    const double t0 = profiling() ? detail::profile_now_ms() : 0;
    nx->apply(dy);
    if (profiling()) detail::profile_backward(*nx, t0, {});
  };
  for (Node* n : order) {
    if (n->sequence == 0 && accumulated.count(n)) continue;
    auto it = grads.find(n);
    if (it == grads.end() || !it->second.g.defined()) continue;
    Tensor dy = it->second.g;
    grads.erase(it);
    if (n->released)
      fail(std::string("backward: the graph through '") + n->name() +
           "' was already freed by an earlier backward; call the first backward with retain_graph=true");
    // slice nodes (narrow, select) add straight into their input's pending gradient (autograd/slice_grad.h)
    auto* sn = n->next.size() == 1 && n->next[0] ? dynamic_cast<SliceGradNode*>(n) : nullptr;
    if (sn) {
      Pending& p = grads[n->next[0].get()];
      const double t0 = profiling() ? detail::profile_now_ms() : 0;
      if (sn->accumulate_slice(dy, p.g, p.owned)) {
        if (profiling()) detail::profile_backward(*n, t0, {dy});  // it wrote dy's elements
        if (!retain_graph && n->sequence != 0) {
          n->release();
          n->released = true;
        }
        arrived(n->next[0].get());
        continue;
      }
    }
    const double t0 = profiling() ? detail::profile_now_ms() : 0;
    std::vector<Tensor> gin = n->apply(dy);
    if (profiling()) detail::profile_backward(*n, t0, gin);
    if (anomaly_mode())
      for (size_t i = 0; i < gin.size(); i++) check_backward_gradient(*n, dy, i, gin[i]);
    if (!retain_graph && n->sequence != 0) {
      n->release();
      n->released = true;
    }
    for (size_t i = 0; i < n->next.size(); i++) {
      Node* nx = n->next[i].get();
      if (!nx) continue;
      if (i >= gin.size() || !gin[i].defined())
        fail(std::string("backward: op '") + n->name() + "' returned no gradient for input " + std::to_string(i) +
             ", which needs one");
      Pending& p = grads[nx];
      if (!p.g.defined()) {
        p.g = gin[i];
      } else if (p.owned) {
        add_(p.g, gin[i]);
      } else {
        p.g = add(p.g, gin[i]);
        p.owned = true;
      }
      arrived(nx);
    }
  }
}

std::string graph_string(const Var& v) {
  std::ostringstream os;
  if (!v.defined()) return "(undefined)\n";
  if (!v.grad_fn()) {
    os << "leaf " << shape_str(v.shape()) << (v.requires_grad() ? " requires_grad" : "") << "\n";
    return os.str();
  }
  std::unordered_map<Node*, int> id;
  std::vector<Node*> order;
  std::vector<Node*> stack{v.grad_fn().get()};
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    if (id.count(n)) continue;
    id[n] = (int)id.size();
    order.push_back(n);
    for (auto& nx : n->next)
      if (nx && !id.count(nx.get())) stack.push_back(nx.get());
  }
  for (Node* n : order) {
    os << "#" << id[n] << " " << n->name();
    if (auto* acc = dynamic_cast<AccumulateGrad*>(n)) {
      auto leaf = acc->leaf.lock();
      if (leaf) os << " " << (leaf->name.empty() ? "leaf" : leaf->name) << " " << shape_str(leaf->data.shape());
    }
    if (!n->next.empty()) {
      os << " <-";
      for (auto& nx : n->next) os << " " << (nx ? "#" + std::to_string(id[nx.get()]) : "-");
    }
    os << "\n";
  }
  return os.str();
}

}  // namespace dl
