// apps/studies/exact.cpp - see exact.h: the tasks, the model and one training run (exact_study.cpp: the experiment).
#include "exact.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <stdexcept>

#include "apps/common/phase.h"
#include "autograd/ops.h"
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
    throw std::invalid_argument("fashion task: need 1 <= train + val <= " + std::to_string(train.size()) +
                                " and 1 <= test <= " + std::to_string(test.size()));
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

// in -> hidden -> ReLU -> C; with a learned sigma also log_sigma (a scalar). The buffer grad_norm_state holds the
// GradientNormalizer's running norm and whether it has seen a step, so that checkpoints keep it.
struct Mlp : nn::Module {
  std::shared_ptr<nn::Linear> fc1, fc2;
  Var log_sigma;  // undefined unless learned
  Mlp(int64_t in, int64_t hidden, int64_t out, bool learn_sigma, Generator& g) {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(in, hidden, g));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(hidden, out, g));
    if (learn_sigma) log_sigma = register_parameter("log_sigma", zeros({}, DType::f32));
    register_buffer("grad_norm_state", zeros({2}, DType::f64));  // (moving norm, steps seen)
  }
  std::string type_name() const override { return "Mlp"; }
  Var forward(const Var& x) const { return fc2->forward(relu(fc1->forward(x))); }  // (B, F) -> (B, C)
  Tensor& grad_norm_state() { return buffer("grad_norm_state"); }
  // fc1, fc2, then log_sigma: the order the gradient norm has always been summed in
  std::vector<Var> trained() const {
    std::vector<Var> p = fc1->parameters(), p2 = fc2->parameters();
    p.insert(p.end(), p2.begin(), p2.end());
    if (log_sigma.defined()) p.push_back(log_sigma);
    return p;
  }
};

// Adam, for EXACT with gradient normalisation after nn::GradientNormalizer: the summed gradient divided by the running
// mean of its norm before every update (run_phase's update is the optimizer's step, so the division goes here).
class ExactAdam : public optim::Adam {
 public:
  ExactAdam(Mlp& m, double lr, bool normalize) : Adam(m.trained(), options(lr)), model_(m), normalize_(normalize) {}

 protected:
  void update_group(const optim::ParamGroup& g, std::vector<Pending>& todo) override {
    if (normalize_) {
      std::vector<Var> with_grad;  // in todo's order: the group's parameters that have a gradient
      for (auto& p : g.params)
        if (p.var.grad().defined()) with_grad.push_back(p.var);
      double* state = model_.grad_norm_state().data<double>();
      nn::GradientNormalizer gn;
      gn.moving_norm = state[0], gn.first = state[1] == 0;
      gn.apply(with_grad);  // grad /= max(running norm, floor)
      state[0] = gn.moving_norm, state[1] += 1;
      for (size_t i = 0; i < todo.size(); i++) todo[i].grad = with_grad[i].grad().contiguous();
    }
    Adam::update_group(g, todo);
  }

 private:
  static optim::AdamOptions options(double lr) {
    optim::AdamOptions o;
    o.lr = lr;
    return o;
  }
  Mlp& model_;
  bool normalize_;
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

// The rows each step trains on, as a dataset run_phase's Batcher hands out in order (no shuffling of its own): example
// k is one row index (its one token), batch s is steps' s rows. The order is the loop's before the harness: the rows
// in a permutation drawn from g at every epoch, batches of min(batch, N) taken in turn.
tasks::Dataset batch_order(int64_t N, int64_t B, int steps, Generator& g) {
  tasks::Dataset d;
  d.name = "exact/train order";
  std::vector<int64_t> perm(N);
  std::iota(perm.begin(), perm.end(), 0);
  int64_t pos = N;
  for (int64_t k = 0; k < (int64_t)steps * B; k++) {
    if (pos == N) {  // a new epoch: reshuffle
      for (int64_t i = N - 1; i > 0; i--) std::swap(perm[i], perm[(size_t)(g.next_u64() % (uint64_t)(i + 1))]);
      pos = 0;
    }
    tasks::Example e;
    e.tokens = {(int32_t)perm[pos++]};
    d.examples.push_back(std::move(e));
  }
  d.vocab_size = (int32_t)N, d.max_len = 1;
  return d;
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

// Accuracy, NLL and ECE on test, as they are and after temperature scaling fitted on the validation split.
void evaluate(const Mlp& model, const ExactTask& task, ExactRun& r) {
  const int64_t C = task.classes;
  Tensor lv = predict(model, task.x_val), lt = predict(model, task.x_test);
  r.val_acc = accuracy_of(lv, task.y_val);
  r.val_nll = nll_of(softmax_rows(lv, 1.0), task.y_val, C);
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
  r.sigma = model.log_sigma.defined() ? std::exp(model.log_sigma.item()) : 1.0;
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

// Adam at a constant lr, no clipping; EXACT draws fresh Genz samples every step (seed, step) and, with grad_norm,
// normalises the gradient (ExactAdam). The generator draws the initialisation, then the batch order.
ExactRun train_exact_arm(const ExactTask& task, const ExactArm& arm, int seed, const ExactBudget& budget,
                         const harness::RunContext& ctx) {
  if (arm.loss != "ce" && arm.loss != "exact")
    throw std::invalid_argument("exact study: unknown loss '" + arm.loss + "' (ce, exact)");
  const int64_t N = task.x_train.size(0), F = task.x_train.size(1);
  const bool exact = arm.loss == "exact";
  Generator g((uint64_t)seed * 7919 + 13);
  Mlp model(F, task.hidden, task.classes, exact && arm.learn_sigma, g);
  ExactAdam opt(model, arm.lr, exact && arm.grad_norm);
  const tasks::Dataset order = batch_order(N, std::min<int64_t>(budget.batch, N), budget.steps, g);
  tasks::BatcherConfig bc;
  bc.batch_size = (int32_t)std::min<int64_t>(budget.batch, N), bc.shuffle = false, bc.drop_last = true;
  tasks::Batcher batches(order, bc);
  harness::PhaseParts parts;
  parts.model = &model, parts.opt = &opt, parts.batches = &batches;
  parts.loss = [&](const tasks::Batch& b, const harness::Step& s) {
    const std::vector<int64_t> idx(b.tokens.begin(), b.tokens.end());  // (B) rows of the training split
    Tensor xb = rows(task.x_train, idx), yb = rows(task.y_train, idx);
    Var logits = model.forward(Var(xb));  // (B, C)
    if (!exact) return cross_entropy(logits, yb);
    nn::ExactOptions eo;
    eo.margin = arm.margin;
    eo.orthant.samples = arm.genz_samples;
    eo.orthant.seed = (uint64_t)seed * 1000003 + (uint64_t)(s.step + 1);  // fresh draws every step
    return model.log_sigma.defined() ? nn::exact_loss(logits, yb, exp(model.log_sigma), eo) : nn::exact_loss(logits, yb, 1.0, eo);
  };
  parts.eval = [&] { return harness::EvalPoint{NAN, accuracy_of(predict(model, task.x_test), task.y_test)}; };
  const harness::PhaseSpec spec{"train", budget.steps, 1, 0.0, budget.eval_every, budget.checkpoint_every};
  ExactRun r;
  harness::run_phase(spec, parts, ctx, r.curve);
  evaluate(model, task, r);
  return r;
}

}  // namespace studies
