// apps/studies/exact.cpp - see exact.h.
#include "exact.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "apps/common/experiment.h"
#include "apps/common/report.h"
#include "apps/common/results.h"
#include "apps/common/stats.h"
#include "autograd/ops.h"
#include "cli.h"
#include "nn/exact_loss.h"
#include "nn/layers.h"
#include "optim/adam.h"
#include "tasks/image.h"

namespace studies {

using namespace dl;
namespace harness = dl::harness;

// ---- the tasks ------------------------------------------------------------------------------------------------

ExactTask make_mixture_task(int64_t n_train, int64_t n_val, int64_t n_test, double label_noise, uint64_t seed) {
  if (n_train < 1 || n_val < 1 || n_test < 1) throw std::invalid_argument("mixture task: every split needs >= 1 example");
  if (!(label_noise >= 0 && label_noise < 1)) throw std::invalid_argument("mixture task: label_noise must be in [0, 1)");
  const int64_t C = 4, K = 2;  // classes, components per class
  Generator g(seed * 31 + 5);
  std::vector<double> centres(C * K * 2);
  for (auto& c : centres) c = -3 + 6 * g.uniform();
  auto split = [&](int64_t n, double noise, Tensor& x, Tensor& y) {
    x = Tensor::empty({n, 2}, DType::f32), y = Tensor::empty({n}, DType::i64);
    for (int64_t i = 0; i < n; i++) {
      int64_t c = i % C, k = (int64_t)(g.uniform() * K);
      Tensor e = randn({2}, g, DType::f64);
      for (int j = 0; j < 2; j++) x.data<float>()[i * 2 + j] = (float)(centres[(c * K + k) * 2 + j] + 0.4 * e.data<double>()[j]);
      if (g.uniform() < noise) c = (c + 1 + (int64_t)(g.uniform() * (C - 1))) % C;  // another class, uniformly
      y.data<int64_t>()[i] = c;
    }
  };
  ExactTask t;
  t.name = "mixture", t.classes = C, t.hidden = 64;
  split(n_train, label_noise, t.x_train, t.y_train);
  split(n_val, label_noise, t.x_val, t.y_val);
  split(n_test, label_noise, t.x_test, t.y_test);
  return t;
}

ExactTask make_fashion_task(int64_t n_train, int64_t n_val, int64_t n_test, const std::string& dir_in) {
  const std::string dir = dir_in.empty() ? tasks::fashion_mnist_default_dir : dir_in;
  tasks::ImageSet train = tasks::load_mnist_idx_split(dir, "train"), test = tasks::load_mnist_idx_split(dir, "t10k");
  if (n_train < 1 || n_val < 1 || n_test < 1 || n_train + n_val > (int64_t)train.size() || n_test > (int64_t)test.size())
    throw std::invalid_argument("fashion task: need 1 <= train + val <= " + std::to_string(train.size()) + " and 1 <= test <= " +
                                std::to_string(test.size()));
  const int64_t F = (int64_t)train.rows * train.cols;
  std::vector<int64_t> perm(train.size());
  std::iota(perm.begin(), perm.end(), 0);
  Generator g(2022);
  for (int64_t i = (int64_t)perm.size() - 1; i > 0; i--) std::swap(perm[i], perm[(size_t)(g.next_u64() % (uint64_t)(i + 1))]);
  auto take = [&](const tasks::ImageSet& s, const std::vector<int64_t>& idx, Tensor& x, Tensor& y) {
    const int64_t n = (int64_t)idx.size();
    x = Tensor::empty({n, F}, DType::f32), y = Tensor::empty({n}, DType::i64);
    for (int64_t i = 0; i < n; i++) {
      for (int64_t j = 0; j < F; j++) x.data<float>()[i * F + j] = s.pixels[(size_t)(idx[i] * F + j)] / 255.0f;
      y.data<int64_t>()[i] = s.labels[(size_t)idx[i]];
    }
  };
  ExactTask t;
  t.name = "fashion", t.classes = 10, t.hidden = 128;
  take(train, std::vector<int64_t>(perm.begin(), perm.begin() + n_train), t.x_train, t.y_train);
  take(train, std::vector<int64_t>(perm.begin() + n_train, perm.begin() + n_train + n_val), t.x_val, t.y_val);
  std::vector<int64_t> first(n_test);
  std::iota(first.begin(), first.end(), 0);
  take(test, first, t.x_test, t.y_test);
  // standardise with the training subset's pixel mean and standard deviation
  double s = 0, s2 = 0;
  const float* px = t.x_train.data<float>();
  for (int64_t i = 0; i < t.x_train.numel(); i++) s += px[i], s2 += (double)px[i] * px[i];
  const double m = s / (double)t.x_train.numel(), sd = std::sqrt(s2 / (double)t.x_train.numel() - m * m);
  for (Tensor* x : {&t.x_train, &t.x_val, &t.x_test})
    for (int64_t i = 0; i < x->numel(); i++) x->data<float>()[i] = (float)((x->data<float>()[i] - m) / sd);
  return t;
}

// ---- the model and one training run -----------------------------------------------------------------------------

namespace {

struct Mlp : nn::Module {
  std::shared_ptr<nn::Linear> fc1, fc2;
  Mlp(int64_t in, int64_t hidden, int64_t out, Generator& g) {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(in, hidden, g));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(hidden, out, g));
  }
  std::string type_name() const override { return "Mlp"; }
  Var forward(const Var& x) const { return fc2->forward(relu(fc1->forward(x))); }  // (B, F) -> (B, C)
};

Tensor rows(const Tensor& x, const std::vector<int64_t>& idx) {  // x[idx] for a contiguous (N, ...) tensor
  Shape s = x.shape();
  const int64_t row = x.numel() / s[0];
  s[0] = (int64_t)idx.size();
  Tensor out = Tensor::empty(s, x.dtype());
  const size_t bytes = (size_t)row * (x.dtype() == DType::i64 ? 8 : 4);
  for (size_t i = 0; i < idx.size(); i++)
    std::memcpy((char*)out.raw_data() + i * bytes, (const char*)x.raw_data() + (size_t)idx[i] * bytes, bytes);
  return out;
}

// softmax(logits / T) in double, row-major (N, C)
std::vector<double> softmax_rows(const Tensor& logits, double T) {
  Tensor l = logits.to(DType::f64).contiguous();
  const int64_t N = l.size(0), C = l.size(1);
  std::vector<double> p((size_t)(N * C));
  for (int64_t i = 0; i < N; i++) {
    const double* r = l.data<double>() + i * C;
    double m = *std::max_element(r, r + C), z = 0;
    for (int64_t j = 0; j < C; j++) z += p[i * C + j] = std::exp((r[j] - m) / T);
    for (int64_t j = 0; j < C; j++) p[i * C + j] /= z;
  }
  return p;
}

double nll_of(const std::vector<double>& p, const Tensor& y, int64_t C) {
  double s = 0;
  for (int64_t i = 0; i < y.numel(); i++) s -= std::log(std::max(p[i * C + y.data<int64_t>()[i]], 1e-300));
  return s / (double)y.numel();
}

double accuracy_of(const Tensor& logits, const Tensor& y) {
  Tensor l = logits.to(DType::f64).contiguous();
  const int64_t N = l.size(0), C = l.size(1);
  int64_t hits = 0;
  for (int64_t i = 0; i < N; i++) {
    const double* r = l.data<double>() + i * C;
    hits += std::max_element(r, r + C) - r == y.data<int64_t>()[i];
  }
  return (double)hits / (double)N;
}

Tensor predict(const Mlp& m, const Tensor& x) {
  NoGradGuard ng;
  return m.forward(Var(x)).data();
}

}  // namespace

double expected_calibration_error(const Tensor& probs, const Tensor& labels, int bins) {
  Tensor p = probs.to(DType::f64).contiguous();
  const int64_t N = p.size(0), C = p.size(1);
  std::vector<double> conf(bins, 0), acc(bins, 0);
  std::vector<int64_t> count(bins, 0);
  for (int64_t i = 0; i < N; i++) {
    const double* r = p.data<double>() + i * C;
    const int64_t k = std::max_element(r, r + C) - r;
    const int b = std::min(bins - 1, (int)(r[k] * bins));
    conf[b] += r[k], acc[b] += k == labels.data<int64_t>()[i], count[b]++;
  }
  double e = 0;
  for (int b = 0; b < bins; b++)
    if (count[b]) e += std::abs(acc[b] - conf[b]) / (double)N;  // |B| / N * |acc_b - conf_b| with sums over B
  return e;
}

ExactRun train_exact_arm(const ExactTask& task, const ExactArm& arm, int seed, int steps, int batch, int eval_every) {
  if (arm.loss != "ce" && arm.loss != "exact") throw std::invalid_argument("exact study: unknown loss '" + arm.loss + "' (ce, exact)");
  const int64_t N = task.x_train.size(0), F = task.x_train.size(1), C = task.classes;
  Generator g((uint64_t)seed * 7919 + 13);
  Mlp model(F, task.hidden, C, g);
  std::vector<Var> params = model.parameters();
  Var log_sigma;
  if (arm.loss == "exact" && arm.learn_sigma) {
    log_sigma = Var(zeros({}, DType::f32), true);
    params.push_back(log_sigma);
  }
  optim::AdamOptions ao;
  ao.lr = arm.lr;
  optim::Adam opt(params, ao);
  nn::GradientNormalizer gn;
  std::vector<int64_t> perm(N);
  std::iota(perm.begin(), perm.end(), 0);
  int64_t pos = N;
  ExactRun r;
  for (int step = 1; step <= steps; step++) {
    std::vector<int64_t> idx;
    while ((int64_t)idx.size() < std::min<int64_t>(batch, N)) {
      if (pos == N) {  // a new epoch: reshuffle
        for (int64_t i = N - 1; i > 0; i--) std::swap(perm[i], perm[(size_t)(g.next_u64() % (uint64_t)(i + 1))]);
        pos = 0;
      }
      idx.push_back(perm[pos++]);
    }
    Tensor xb = rows(task.x_train, idx), yb = rows(task.y_train, idx);
    Var logits = model.forward(Var(xb));  // (B, C)
    Var loss;
    if (arm.loss == "ce") {
      loss = cross_entropy(logits, yb);
    } else {
      nn::ExactOptions eo;
      eo.margin = arm.margin;
      eo.orthant.samples = arm.genz_samples;
      eo.orthant.seed = (uint64_t)seed * 1000003 + (uint64_t)step;  // fresh draws every step
      loss = log_sigma.defined() ? nn::exact_loss(logits, yb, exp(log_sigma), eo) : nn::exact_loss(logits, yb, 1.0, eo);
    }
    if (!std::isfinite(loss.item())) throw std::runtime_error("exact study: the " + arm.loss + " loss is not finite at step " + std::to_string(step));
    opt.zero_grad();
    loss.backward();
    if (arm.loss == "exact" && arm.grad_norm) gn.apply(params);
    opt.step();
    if (step % eval_every == 0 || step == steps) {
      r.steps.push_back(step);
      r.curve.push_back(accuracy_of(predict(model, task.x_test), task.y_test));
    }
  }
  Tensor lv = predict(model, task.x_val), lt = predict(model, task.x_test);
  r.val_acc = accuracy_of(lv, task.y_val);
  r.test_acc = accuracy_of(lt, task.y_test);
  std::vector<double> pt = softmax_rows(lt, 1.0);
  r.test_nll = nll_of(pt, task.y_test, C);
  r.test_ece = expected_calibration_error(from_vector(pt, {lt.size(0), C}), task.y_test);
  // temperature scaling: the T of a log-spaced grid (0.02 .. 50) with the lowest validation NLL
  double best = std::numeric_limits<double>::infinity();
  for (int k = 0; k <= 120; k++) {
    const double T = std::exp(std::log(0.02) + k * (std::log(50.0) - std::log(0.02)) / 120);
    const double nll = nll_of(softmax_rows(lv, T), task.y_val, C);
    if (nll < best) best = nll, r.temperature = T;
  }
  std::vector<double> ps = softmax_rows(lt, r.temperature);
  r.test_nll_t = nll_of(ps, task.y_test, C);
  r.test_ece_t = expected_calibration_error(from_vector(ps, {lt.size(0), C}), task.y_test);
  r.sigma = log_sigma.defined() ? std::exp(log_sigma.item()) : 1.0;
  return r;
}

// ---- the study --------------------------------------------------------------------------------------------------

namespace {

using dl::harness::fixed;  // apps/common/report.h
std::string margin_str(const ExactArm& a) { return a.loss == "ce" ? "-" : std::isfinite(a.margin) ? fixed(a.margin, 1) : "none"; }
std::string sigma_str(const ExactArm& a) { return a.loss == "ce" ? "-" : a.learn_sigma ? "learned" : "fixed 1"; }
std::string pm(const harness::MeanSE& m, double scale, int digits) {
  return fixed(m.mean * scale, digits) + " ± " + fixed(m.se * scale, digits);
}
harness::MeanSE over(const std::vector<ExactRun>& rs, double ExactRun::*f) {
  std::vector<double> v;
  for (auto& r : rs) v.push_back(r.*f);
  return harness::mean_se(v);
}

}  // namespace

void run_exact_study(const ExactStudyOptions& o) {
  std::filesystem::create_directories(o.out + "/plots");
  nlohmann::json j = {{"tasks", nlohmann::json::object()}};
  harness::Table t, grid;
  t.title = "EXACT vs cross-entropy: test accuracy and calibration (mean ± SE over " + std::to_string(o.seeds) + " seeds)";
  t.columns = {"task", "loss", "lr", "margin", "test acc %", "NLL", "ECE %", "T (val)", "NLL (T)", "ECE (T) %", "sigma"};
  t.right = {false, false, true, true, true, true, true, true, true, true, true};
  grid.title = "Selection grid: validation accuracy on the selection seed " + std::to_string(o.selection_seed);
  grid.columns = {"task", "loss", "lr", "margin", "sigma", "val acc %"};
  grid.right = {false, false, true, true, false, true};
  for (const std::string& name : o.tasks) {
    ExactTask task;
    int steps = o.steps;
    if (name == "mixture") {
      task = make_mixture_task(o.mixture_train, o.mixture_val, o.mixture_test, o.label_noise);
    } else if (name == "fashion") {
      task = make_fashion_task(o.fashion_train, o.fashion_val, o.fashion_test, o.fashion_dir);
      steps = o.fashion_steps;
    } else {
      throw std::invalid_argument("exact study: unknown task '" + name + "' (mixture, fashion)");
    }
    const int64_t n_test = task.y_test.numel();
    nlohmann::json jt = {{"classes", task.classes}, {"train", task.y_train.numel()}, {"val", task.y_val.numel()},
                         {"test", n_test}, {"steps", steps}, {"grid", nlohmann::json::array()}};
    // 1. the grid on the selection seed, chosen by validation accuracy
    ExactArm best_ce, best_ex;
    double best_ce_acc = -1, best_ex_acc = -1;
    std::vector<ExactArm> arms;
    for (double lr : o.lrs) {
      ExactArm a;
      a.loss = "ce", a.lr = lr;
      arms.push_back(a);
      for (const std::string& sm : o.sigma_modes)
        for (double m : o.margins) {
          ExactArm e;
          e.loss = "exact", e.lr = lr, e.margin = m, e.learn_sigma = sm == "learned", e.grad_norm = o.grad_norm,
          e.genz_samples = o.genz_samples;
          arms.push_back(e);
        }
    }
    for (const ExactArm& a : arms) {
      ExactRun r = train_exact_arm(task, a, o.selection_seed, steps, o.batch, steps);
      std::cerr << "[exact] " << name << " select " << a.loss << " lr " << a.lr << " margin " << margin_str(a) << " sigma "
                << sigma_str(a) << ": val acc " << r.val_acc << "\n";
      grid.rows.push_back({name, a.loss, fixed(a.lr, 4), margin_str(a), sigma_str(a), fixed(100 * r.val_acc, 1)});
      jt["grid"].push_back({{"loss", a.loss}, {"lr", a.lr}, {"margin", std::isfinite(a.margin) ? nlohmann::json(a.margin) : nlohmann::json("none")},
                            {"sigma", sigma_str(a)}, {"val_acc", r.val_acc}});
      double& best_acc = a.loss == "ce" ? best_ce_acc : best_ex_acc;
      if (r.val_acc > best_acc) best_acc = r.val_acc, (a.loss == "ce" ? best_ce : best_ex) = a;
    }
    // 2. both chosen settings on every seed
    std::vector<ExactRun> runs[2];
    harness::Plot pc;
    pc.title = name + ": test accuracy during training (mean ± SE over seeds)";
    pc.xlabel = "step", pc.ylabel = "test accuracy %";
    for (int arm = 0; arm < 2; arm++) {
      const ExactArm& a = arm == 0 ? best_ce : best_ex;
      for (int s = 0; s < o.seeds; s++) {
        runs[arm].push_back(train_exact_arm(task, a, s, steps, o.batch, o.eval_every));
        std::cerr << "[exact] " << name << " " << a.loss << " seed " << s << ": test acc " << runs[arm].back().test_acc << "\n";
      }
      const std::vector<ExactRun>& rs = runs[arm];
      harness::MeanSE acc = over(rs, &ExactRun::test_acc), nll = over(rs, &ExactRun::test_nll), ece = over(rs, &ExactRun::test_ece),
                      T = over(rs, &ExactRun::temperature), nllt = over(rs, &ExactRun::test_nll_t),
                      ecet = over(rs, &ExactRun::test_ece_t), sig = over(rs, &ExactRun::sigma);
      t.rows.push_back({name, a.loss, fixed(a.lr, 4), margin_str(a), pm(acc, 100, 2), pm(nll, 1, 3), pm(ece, 100, 2), pm(T, 1, 2),
                        pm(nllt, 1, 3), pm(ecet, 100, 2),
                        a.loss == "exact" && a.learn_sigma ? "learned " + pm(sig, 1, 3) : sigma_str(a)});
      harness::Series sc;
      sc.title = a.loss == "ce" ? "cross-entropy" : "EXACT";
      for (size_t k = 0; k < rs[0].steps.size(); k++) {
        std::vector<double> v;
        for (auto& r : rs) v.push_back(100 * r.curve[k]);
        harness::MeanSE m = harness::mean_se(v);
        sc.x.push_back(rs[0].steps[k]), sc.y.push_back(m.mean), sc.err.push_back(m.se);
      }
      pc.series.push_back(sc);
      nlohmann::json ja = nlohmann::json::array();
      for (auto& r : rs)
        ja.push_back({{"test_acc", r.test_acc}, {"test_nll", r.test_nll}, {"test_ece", r.test_ece}, {"temperature", r.temperature},
                      {"test_nll_t", r.test_nll_t}, {"test_ece_t", r.test_ece_t}, {"sigma", r.sigma}, {"val_acc", r.val_acc},
                      {"steps", r.steps}, {"curve", r.curve}});
      jt[a.loss] = {{"lr", a.lr}, {"margin", std::isfinite(a.margin) ? nlohmann::json(a.margin) : nlohmann::json("none")}, {"runs", ja},
                    {"test_acc", {{"mean", acc.mean}, {"se", acc.se}}}};
    }
    std::vector<double> a0, a1;
    for (int s = 0; s < o.seeds; s++) a0.push_back(runs[0][s].test_acc), a1.push_back(runs[1][s].test_acc);
    harness::MeanSE d = harness::paired_difference(a0, a1, n_test);
    t.rows.push_back({name, "EXACT - CE", "", "", harness::format_mean_se(d, 100, 2, true) + (d.binomial ? " (binomial)" : ""), "", "",
                      "", "", "", ""});
    jt["exact_minus_ce_acc"] = {{"mean", d.mean}, {"se", d.se}};
    harness::plot_lines(pc, o.out + "/plots/curve_" + name);
    j["tasks"][name] = jt;
    t.notes.push_back(name + ": " + std::to_string(task.y_train.numel()) + " train / " + std::to_string(task.y_val.numel()) +
                      " val / " + std::to_string(n_test) + " test, " + std::to_string(task.classes) + " classes, MLP hidden " +
                      std::to_string(task.hidden) + ", " + std::to_string(steps) + " Adam steps of batch " + std::to_string(o.batch) + ".");
  }
  t.notes.push_back(
      "Settings (lr; EXACT's margin and sigma) chosen by validation accuracy on the selection seed, then run on seeds 0.." +
      std::to_string(o.seeds - 1) + " (a seed draws the initialisation, the batch order and the Genz draws; the data are fixed). "
      "NLL and ECE (15 bins) are of softmax(logits); 'T' columns after temperature scaling fitted on the validation split. "
      "EXACT: sigma fixed at 1 or exp(log_sigma) learned (from log_sigma = 0), chosen with the rest; gradient normalisation: " +
      (o.grad_norm ? "yes" : "no") + "; Genz samples " + std::to_string(o.genz_samples) + ". EXACT - CE: paired over seeds.");
  t.notes.push_back(grid.markdown());
  j["options"] = {{"seeds", o.seeds}, {"selection_seed", o.selection_seed}, {"lrs", o.lrs}, {"batch", o.batch},
                  {"label_noise", o.label_noise}, {"genz_samples", o.genz_samples}, {"grad_norm", o.grad_norm},
                  {"sigma_modes", o.sigma_modes}};
  harness::write_text_atomic(o.out + "/exact.json", j.dump(2) + "\n");
  harness::write_text_atomic(o.out + "/exact.md", t.markdown());
  std::cout << t.markdown();
}

}  // namespace studies

// ---- the subcommand ---------------------------------------------------------------------------------------------
namespace studies {

void add_exact_command(CLI::App& app) {
  auto o = std::make_shared<ExactStudyOptions>();
  auto tasks = std::make_shared<std::string>(), lrs = std::make_shared<std::string>(), margins = std::make_shared<std::string>();
  auto preset = std::make_shared<std::string>("default");
  auto no_grad_norm = std::make_shared<bool>(false);
  auto sigma_modes = std::make_shared<std::string>();
  auto threads = std::make_shared<int>(2);
  CLI::App* c = app.add_subcommand("exact", "EXACT (expected accuracy) vs cross-entropy: accuracy and calibration");
  c->add_option("--out", o->out, "output folder")->capture_default_str();
  c->add_option("--preset", *preset, "default (about 9 min on one core of this shared machine) or large (10 seeds, 3x steps, more data)")
      ->check(CLI::IsMember({"default", "large"}))
      ->capture_default_str();
  c->add_option("--tasks", *tasks, "comma-separated: mixture,fashion");
  c->add_option("--seeds", o->seeds, "seeds per setting")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--steps", o->steps, "Adam steps on the mixture")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--fashion-steps", o->fashion_steps, "Adam steps on Fashion-MNIST")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--batch", o->batch, "batch size")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--lrs", *lrs, "learning rates to select from, e.g. 0.001,0.003,0.01");
  c->add_option("--margins", *margins, "EXACT margins to select from; 0 = none, e.g. 0,1,3");
  c->add_option("--label-noise", o->label_noise, "mixture: fraction of labels (every split) replaced by another class")->capture_default_str()
      ->check(CLI::Range(0.0, 0.99));
  c->add_option("--genz-samples", o->genz_samples, "Genz samples per row (C > 3)")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--fashion-dir", o->fashion_dir, "folder of the Fashion-MNIST .gz files (default: Debian's)");
  c->add_flag("--no-grad-norm", *no_grad_norm, "EXACT without gradient normalisation");
  c->add_option("--sigma-modes", *sigma_modes, "EXACT's sigma modes to select from: fixed,learned");
  c->add_option("--threads", *threads, "CPU threads")->capture_default_str()->check(CLI::PositiveNumber);
  c->callback([=] {
    if (*preset == "large") {
      o->seeds = std::max(o->seeds, 10);
      o->steps *= 3, o->fashion_steps *= 3;
      o->fashion_train = 20000, o->fashion_val = 5000, o->fashion_test = 10000;
      o->mixture_train = 20000, o->mixture_test = 20000;
    }
    if (!tasks->empty()) {
      o->tasks.clear();
      std::stringstream ss(*tasks);
      for (std::string item; std::getline(ss, item, ',');) {
        if (item != "mixture" && item != "fashion")
          throw CLI::ValidationError("--tasks", "unknown task '" + item + "' (mixture, fashion)");
        o->tasks.push_back(item);
      }
    }
    if (!lrs->empty()) o->lrs = parse_reals(*lrs, "--lrs");
    if (!margins->empty()) {
      o->margins = parse_reals(*margins, "--margins", true);
      for (double& m : o->margins)
        if (m == 0) m = INFINITY;
    }
    if (!sigma_modes->empty()) {
      o->sigma_modes.clear();
      std::stringstream ss(*sigma_modes);
      for (std::string item; std::getline(ss, item, ',');) {
        if (item != "fixed" && item != "learned")
          throw CLI::ValidationError("--sigma-modes", "unknown sigma mode '" + item + "' (fixed, learned)");
        o->sigma_modes.push_back(item);
      }
    }
    o->grad_norm = !*no_grad_norm;
    harness::set_threads(*threads);
    run_exact_study(*o);
  });
}

}  // namespace studies
