// tests/common/op_harness.cpp - finite differences and recorded-PyTorch checks (see op_harness.h).
#include "op_harness.h"

#include <cmath>
#include <sstream>

#include "tensor/backend.h"

namespace dl::test {

std::string fixture_path(const std::string& rel) { return std::string(DL_FIXTURE_DIR) + "/" + rel; }

InputGen randn_input(Shape s, double scale) {
  return [s, scale](Generator& g) { return mul_scalar(randn(s, g, DType::f64), scale); };
}
InputGen uniform_input(Shape s, double lo, double hi) {
  return [s, lo, hi](Generator& g) { return uniform(s, lo, hi, g, DType::f64); };
}
InputGen randint_input(Shape s, int64_t lo, int64_t hi) {
  return [s, lo, hi](Generator& g) { return randint(lo, hi, s, g); };
}
InputGen const_input(Tensor t) {
  return [t](Generator&) { return t; };
}

::testing::AssertionResult all_close(const Tensor& actual, const Tensor& expected, Tol tol, const std::string& what) {
  if (!actual.defined()) return ::testing::AssertionFailure() << what << ": actual is undefined";
  if (!expected.defined()) return ::testing::AssertionFailure() << what << ": expected is undefined";
  if (actual.shape() != expected.shape())
    return ::testing::AssertionFailure() << what << ": shape " << shape_str(actual.shape()) << " vs expected "
                                         << shape_str(expected.shape());
  Tensor a = actual.to(Device::cpu).to(DType::f64).contiguous(), e = expected.to(Device::cpu).to(DType::f64).contiguous();
  const double *pa = a.data<double>(), *pe = e.data<double>();
  int64_t bad = -1, nbad = 0;
  double max_err = 0;
  for (int64_t i = 0; i < a.numel(); i++) {
    double err = std::abs(pa[i] - pe[i]);
    bool ok = err <= tol.atol + tol.rtol * std::abs(pe[i]) && std::isfinite(pa[i]) == std::isfinite(pe[i]);
    if (std::isnan(pe[i]) && std::isnan(pa[i])) ok = true;
    if (!ok) {
      if (bad < 0) bad = i;
      nbad++;
    }
    if (std::isfinite(err)) max_err = std::max(max_err, err);
  }
  if (bad < 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << nbad << " of " << a.numel() << " elements differ; first at flat index "
                                       << bad << ": " << pa[bad] << " vs expected " << pe[bad] << " (max abs err " << max_err
                                       << ", rtol " << tol.rtol << ", atol " << tol.atol << ")";
}

// A non-contiguous tensor holding the same values, on t's device: the transpose of a contiguous transposed copy.
static Tensor noncontiguous_copy(const Tensor& t) {
  if (t.dim() < 2) return t;
  Tensor buf = Tensor::empty(t.transpose(-1, -2).shape(), t.dtype(), t.device());
  Tensor view = buf.transpose(-1, -2);
  copy_into(view, t);
  return view;
}

// L(x) = sum(f(x) * w) evaluated without a graph
static double loss_value(const OpCase& c, const std::vector<Tensor>& xs, const Tensor& w) {
  NoGradGuard ng;
  std::vector<Var> vs;
  for (auto& x : xs) vs.push_back(Var(x));
  Tensor y = c.f(vs).data().to(DType::f64).contiguous();
  Tensor p = mul(y, w);
  double s = 0;
  for (int64_t i = 0; i < p.numel(); i++) s += p.data<double>()[i];
  return s;
}

::testing::AssertionResult gradcheck(const OpCase& c, bool noncontiguous) {
  Generator g(1234);
  std::vector<Tensor> xs;
  for (auto& gen : c.inputs) xs.push_back(gen(g));
  if (noncontiguous)
    for (auto& x : xs) x = noncontiguous_copy(x);
  // analytic: backward with dy = w
  std::vector<Var> vs;
  for (auto& x : xs) vs.push_back(Var(x, x.dtype() != DType::i64));
  Var y = c.f(vs);
  if (y.dtype() != DType::f64)
    return ::testing::AssertionFailure() << c.name << ": output dtype is " << dtype_name(y.dtype()) << " for float64 inputs";
  Tensor w = randn(y.shape(), g, DType::f64);
  if (!y.requires_grad()) return ::testing::AssertionFailure() << c.name << ": output does not require grad";
  y.backward(w);
  for (size_t k = 0; k < xs.size(); k++) {
    if (xs[k].dtype() == DType::i64) continue;
    Tensor base = xs[k].contiguous().clone();
    Tensor num = zeros(base.shape(), DType::f64);
    double* pb = base.data<double>();
    for (int64_t i = 0; i < base.numel(); i++) {
      double orig = pb[i];
      std::vector<Tensor> xp = xs;
      pb[i] = orig + c.eps;
      xp[k] = base.clone();
      double lp = loss_value(c, xp, w);
      pb[i] = orig - c.eps;
      xp[k] = base.clone();
      double lm = loss_value(c, xp, w);
      pb[i] = orig;
      num.data<double>()[i] = (lp - lm) / (2 * c.eps);
    }
    Tensor ana = vs[k].grad();
    if (!ana.defined()) return ::testing::AssertionFailure() << c.name << ": no gradient reached input " << k;
    auto r =
        all_close(ana, num, c.grad_tol, c.name + " d/d input " + std::to_string(k) + (noncontiguous ? " (non-contiguous)" : ""));
    if (!r) return r;
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult fixture_check(const OpCase& c) {
  TensorFile f;
  try {
    f = load_safetensors(fixture_path("ops/" + c.name + ".safetensors"));
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << c.name << ": " << e.what() << " (regenerate with tests/fixtures/make_fixtures.sh)";
  }
  std::vector<Var> vs;
  for (size_t k = 0; f.has("in" + std::to_string(k)); k++) {
    Tensor t = f.at("in" + std::to_string(k));
    vs.push_back(Var(t, t.dtype() != DType::i64));
  }
  Var y = c.f(vs);
  auto r = all_close(y.data(), f.at("out"), c.fixture_tol, c.name + " forward vs PyTorch");
  if (!r) return r;
  if (!f.has("gout")) return ::testing::AssertionSuccess();
  y.backward(f.at("gout"));
  for (size_t k = 0; k < vs.size(); k++) {
    std::string gname = "grad" + std::to_string(k);
    if (!f.has(gname)) continue;
    auto rg = all_close(vs[k].grad(), f.at(gname), c.fixture_tol, c.name + " " + gname + " vs PyTorch");
    if (!rg) return rg;
  }
  return ::testing::AssertionSuccess();
}

bool device_present() {
  Backend* b = device_backend(Device::cuda);
  return b && b->available();
}

// f on inputs xs (each moved to `device`, as views when noncontiguous), then backward with w: the output and the
// gradient of every float input, on the CPU.
static std::vector<Tensor> forward_backward(const OpCase& c, const std::vector<Tensor>& xs, const Tensor& w, Device device,
                                            bool noncontiguous, std::string& where) {
  std::vector<Var> vs;
  for (const Tensor& x : xs) {
    Tensor t = x.to(device);
    if (noncontiguous) t = noncontiguous_copy(t);
    vs.push_back(Var(t, t.dtype() != DType::i64));
  }
  Var y = c.f(vs);
  if (y.data().device() != device) where = "the output is on " + std::string(device_name(y.data().device()));
  std::vector<Tensor> out{y.data().to(Device::cpu)};
  if (!y.requires_grad()) return out;
  y.backward(w.to(device));
  for (const Var& v : vs) {
    if (v.dtype() == DType::i64) continue;
    Tensor g = v.grad();
    if (g.defined() && g.device() != device) where = "a gradient is on " + std::string(device_name(g.device()));
    out.push_back(g.defined() ? g.to(Device::cpu) : g);
  }
  return out;
}

::testing::AssertionResult device_check(const OpCase& c, DType t, bool noncontiguous) {
  Generator g(4321);
  std::vector<Tensor> xs;
  for (auto& gen : c.inputs) {
    Tensor x = gen(g);
    xs.push_back(x.dtype() == DType::i64 ? x : x.to(t));
  }
  Tensor w;
  {
    NoGradGuard ng;
    std::vector<Var> vs(xs.begin(), xs.end());
    w = randn(c.f(vs).shape(), g, t);
  }
  std::string where_cpu, where_dev;
  std::vector<Tensor> cpu = forward_backward(c, xs, w, Device::cpu, false, where_cpu);
  std::vector<Tensor> dev;
  try {
    dev = forward_backward(c, xs, w, Device::cuda, noncontiguous, where_dev);
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << c.name << " on the device: " << e.what();
  }
  const std::string tag = c.name + " (" + dtype_name(t) + (noncontiguous ? ", views" : "") + ") ";
  if (!where_dev.empty()) return ::testing::AssertionFailure() << tag << "on the device: " << where_dev;
  if (cpu.size() != dev.size())
    return ::testing::AssertionFailure() << tag << ": " << dev.size() << " results on the device, " << cpu.size() << " on the CPU";
  // float32: the case's own tolerance against PyTorch (the device sums in another order, as PyTorch does); float64:
  // two orders of summation of the same formula.
  Tol tol = t == DType::f32 ? c.fixture_tol : kAgreeF64;
  for (size_t k = 0; k < cpu.size(); k++) {
    if (!cpu[k].defined() && !dev[k].defined()) continue;
    auto r = all_close(dev[k], cpu[k], tol, tag + (k == 0 ? "forward" : "gradient of float input " + std::to_string(k - 1)));
    if (!r) return r;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace dl::test
