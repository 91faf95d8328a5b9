// tests/nn/nn_test_util.h - module-level checks: recorded PyTorch fixtures and finite differences.
//
// Fixture layout (tests/fixtures/nnlib.py): the module's state_dict under PyTorch's names, input/inputK,
// output, gout, grad.<param name>, grad.input/grad.inputK, extra.<name>.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "nn/module.h"
#include "op_harness.h"

namespace dl::test {

inline TensorFile nn_fixture(const std::string& name) { return load_safetensors(fixture_path("nn/" + name + ".safetensors")); }

// Loads the module's state strictly: every parameter and buffer must be in the file; the file's
// non-state entries (inputs, outputs, gradients, extras) and `ignore` prefixes are skipped.
inline void load_fixture_state(nn::Module& m, const TensorFile& f, std::vector<std::string> ignore = {}) {
  nn::LoadOptions o;
  o.ignore_unexpected = {"input", "output", "gout", "grad.", "extra."};
  for (auto& s : ignore) o.ignore_unexpected.push_back(s);
  m.load_state_dict(f.tensors, o);
}

inline Var fixture_input(const TensorFile& f, const std::string& key = "input") {
  Tensor t = f.at(key);
  return Var(t.clone(), t.dtype() != DType::i64);
}

// y vs output; then backward(gout) and every parameter's grad vs grad.<name> (a parameter PyTorch gave no
// gradient must have none here either) and every named input's grad vs grad.<input name>.
inline ::testing::AssertionResult check_fixture(nn::Module& m, const TensorFile& f, const Var& y,
                                                const std::vector<std::pair<std::string, Var>>& inputs, Tol tol = kFixture,
                                                const std::string& out_key = "output") {
  auto r = all_close(y.data(), f.at(out_key), tol, "forward (" + out_key + ")");
  if (!r) return r;
  y.backward(f.has("gout") && out_key == "output" ? f.at("gout") : Tensor());
  int checked = 0;
  for (auto& [n, p] : m.named_parameters()) {
    if (!f.has("grad." + n)) {
      if (p.grad().defined()) return ::testing::AssertionFailure() << n << ": PyTorch has no gradient, we have one";
      continue;
    }
    auto rg = all_close(p.grad(), f.at("grad." + n), tol, "grad." + n);
    if (!rg) return rg;
    checked++;
  }
  for (auto& [n, x] : inputs) {
    if (!f.has("grad." + n)) continue;
    auto rg = all_close(x.grad(), f.at("grad." + n), tol, "grad." + n);
    if (!rg) return rg;
    checked++;
  }
  return ::testing::AssertionSuccess() << checked << " gradients checked";
}

// Every parameter (and buffer) of m as float64, in place.
inline void to_f64(nn::Module& m) {
  for (auto& [n, p] : m.named_parameters()) p.mutable_data() = p.data().to(DType::f64);
}

// Finite differences on a float64 module: L = sum(f() * w), analytic dL/d(every trainable parameter and every
// input that requires grad) vs central differences.
inline ::testing::AssertionResult module_gradcheck(nn::Module& m, const std::vector<Var>& inputs, const std::function<Var()>& f,
                                                   Tol tol = kGradcheck, double eps = 1e-6) {
  Generator g(4321);
  m.zero_grad();
  for (auto& x : inputs) x.zero_grad();
  Var y = f();
  if (y.dtype() != DType::f64) return ::testing::AssertionFailure() << "output is not float64";
  Tensor w = randn(y.shape(), g, DType::f64);
  y.backward(w);
  auto loss = [&]() {
    NoGradGuard ng;
    Tensor p = mul(f().data(), w).contiguous();
    double s = 0;
    for (int64_t i = 0; i < p.numel(); i++) s += p.data<double>()[i];
    return s;
  };
  std::vector<std::pair<std::string, Var>> targets;
  for (auto& [n, p] : m.named_parameters(true)) targets.emplace_back(n, p);
  for (size_t i = 0; i < inputs.size(); i++)
    if (inputs[i].requires_grad()) targets.emplace_back("input" + std::to_string(i), inputs[i]);
  for (auto& [n, v] : targets) {
    Tensor d = v.data();
    if (!d.is_contiguous() || d.dtype() != DType::f64) return ::testing::AssertionFailure() << n << ": not contiguous float64";
    Tensor num = zeros(d.shape(), DType::f64);
    double* pd = d.data<double>();
    for (int64_t i = 0; i < d.numel(); i++) {
      double orig = pd[i];
      pd[i] = orig + eps;
      double lp = loss();
      pd[i] = orig - eps;
      double lm = loss();
      pd[i] = orig;
      num.data<double>()[i] = (lp - lm) / (2 * eps);
    }
    if (!v.grad().defined()) return ::testing::AssertionFailure() << n << ": no gradient";
    auto r = all_close(v.grad(), num, tol, "d/d " + n);
    if (!r) return r;
  }
  return ::testing::AssertionSuccess();
}

inline Var randn_var(const Shape& s, uint64_t seed, bool requires_grad = true) {
  Generator g(seed);
  return Var(randn(s, g, DType::f64), requires_grad);
}

// ---- the sequence-layer fixtures of tests/fixtures/nn_zoo_*.py (files in tests/fixtures/zoo/): param.<name>,
// input, output, gout, grad.<name>, grad_input.
inline TensorFile zoo_fixture(const std::string& name) { return load_safetensors(fixture_path("zoo/" + name + ".safetensors")); }

// Leaves for every param.<name> in the file.
inline std::map<std::string, Var> zoo_param_leaves(const TensorFile& f) {
  std::map<std::string, Var> out;
  for (auto& [k, t] : f.tensors)
    if (k.rfind("param.", 0) == 0) out[k.substr(6)] = Var(t.clone(), true);
  return out;
}

// Backward with gout and compare output, input gradient and every parameter gradient.
inline void zoo_check(const TensorFile& f, const Var& out, const Var& input, const std::map<std::string, Var>& params, Tol tol) {
  EXPECT_TRUE(all_close(out.data(), f.at("output"), tol, "output"));
  out.backward(f.at("gout"));
  if (input.defined()) {
    EXPECT_TRUE(all_close(input.grad(), f.at("grad_input"), tol, "grad_input"));
  }
  for (auto& [k, v] : params) EXPECT_TRUE(all_close(v.grad(), f.at("grad." + k), tol, "grad." + k));
}

// Loads the file's parameters into module m (strict: names and shapes must match torch's state_dict).
inline std::map<std::string, Var> zoo_load_into(nn::Module& m, const TensorFile& f) {
  std::map<std::string, Tensor> sd;
  for (auto& [k, t] : f.tensors)
    if (k.rfind("param.", 0) == 0) sd[k.substr(6)] = t;
  nn::LoadReport r = m.load_state_dict(sd);
  EXPECT_TRUE(r.ok()) << r.str();
  std::map<std::string, Var> ps;
  for (auto& [k, v] : m.named_parameters()) ps[k] = v;
  return ps;
}

}  // namespace dl::test
