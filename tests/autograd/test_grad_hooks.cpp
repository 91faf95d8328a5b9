// tests/autograd/test_grad_hooks.cpp - a leaf's grad_hook fires once per backward, as soon as its gradient is
// complete and before the leaves nearer the input are done (what data-parallel training overlaps with), and the
// early accumulation changes no value.
#include <gtest/gtest.h>

#include "autograd/ops.h"
#include "op_harness.h"

using namespace dl;

// An identity op whose backward says when it ran.
struct Probe : Node {
  std::vector<std::string>* log = nullptr;
  const char* name() const override { return "probe"; }
  std::vector<Tensor> apply(const Tensor& dy) override {
    log->push_back("probe");
    return {dy};
  }
};
static Var probe(const Var& x, std::vector<std::string>& log) {
  auto n = std::make_shared<Probe>();
  n->log = &log;
  return record(n, x.data(), {x});
}

TEST(GradHooks, FireOnceWithTheCompleteGradientNearestTheLossFirst) {
  Generator g(1);
  Var x(randn({4, 3}, g)), w1(randn({3, 5}, g), true), w2(randn({5, 2}, g), true), b(randn({2}, g), true);
  std::vector<std::string> fired;
  std::map<std::string, Tensor> at_hook;
  // each hook reads its leaf through a pointer: a copy of the Var inside its own hook would be a reference cycle
  // (the leaf would never be freed; LeakSanitizer found one here)
  for (auto& [name, v] : std::vector<std::pair<std::string, Var*>>{{"w1", &w1}, {"w2", &w2}, {"b", &b}})
    v->set_grad_hook([&, name = name, v = v] {
      fired.push_back(name);
      at_hook[name] = v->grad().clone();
    });
  // b is used twice: its hook must wait for both contributions
  Var h = probe(relu(matmul(x, w1)), fired);    // (4, 5); the probe's backward runs before w1's
  Var y = sum(matmul(h, w2) + b) + sum(b * b);  // the loss
  y.backward();
  ASSERT_EQ(fired.size(), 4u);
  auto pos = [&](const std::string& n) { return std::find(fired.begin(), fired.end(), n) - fired.begin(); };
  EXPECT_LT(pos("w2"), pos("probe"));  // w2's gradient is complete, and its hook fired, before the backward
  EXPECT_LT(pos("b"), pos("probe"));   // goes on towards the input
  EXPECT_LT(pos("probe"), pos("w1"));
  for (auto& [name, v] : std::vector<std::pair<std::string, Var>>{{"w1", w1}, {"w2", w2}, {"b", b}})
    EXPECT_TRUE(test::all_close(at_hook[name], v.grad(), test::Tol{0.0, 0.0}, name + " at its hook"));
  // the same gradients as a graph without hooks
  Var w1b(w1.data().clone(), true), w2b(w2.data().clone(), true), bb(b.data().clone(), true);
  (sum(matmul(relu(matmul(x, w1b)), w2b) + bb) + sum(bb * bb)).backward();
  EXPECT_TRUE(test::all_close(w1.grad(), w1b.grad(), test::Tol{0.0, 0.0}, "w1"));
  EXPECT_TRUE(test::all_close(b.grad(), bb.grad(), test::Tol{0.0, 0.0}, "b"));
  // a second backward fires every hook again, once
  fired.clear();
  (sum(matmul(probe(relu(matmul(x, w1)), fired), w2) + b) + sum(b * b)).backward();
  EXPECT_EQ(fired.size(), 4u);
}
