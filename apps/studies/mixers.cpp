// apps/studies/mixers.cpp - see mixers.h: the backbone, its equal-parameter widths, one cell, the report and the command line.
#include "mixers.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <omp.h>
#include <set>
#include <tuple>

#include "apps/common/batch_tensors.h"
#include "apps/common/experiment.h"
#include "apps/common/phase.h"
#include "apps/common/report.h"
#include "apps/common/results.h"
#include "apps/common/stats.h"
#include "autograd/ops.h"
#include "autograd/shape_ops.h"
#include "cli.h"
#include "nn/registry.h"
#include "optim/adam.h"
#include "optim/param_groups.h"
#include "optim/schedule.h"
#include "study.h"
#include "tasks/registry.h"

namespace studies {

using namespace dl;
namespace harness = dl::harness;
using harness::fixed;

const std::vector<std::string> kMixers = {"attention", "mixer", "fnet", "s4d", "lightconv", "dynamicconv"};

// Every registry layer (nn/registry.h); "mixer" is MLP-Mixer's token half (TokenMlp below), the block adding its FFN.
const std::vector<std::string>& mixer_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (auto& e : nn::layer_registry()) v.push_back(e.name);
    return v;
  }();
  return names;
}

// ---- the mixers ---------------------------------------------------------------------------------------------------

TokenMlp::TokenMlp(int64_t L, int64_t hidden, Generator& g) : max_len(L) {
  mlp = register_module("mlp_tokens", std::make_shared<nn::Mlp>(L, hidden, L, g));
}

// As the token half of nn::MixerBlock::forward: y = mlp(x^T)^T over max_len positions, padding zeroed first.
Var TokenMlp::forward(const Var& x0, const Tensor& mask) {
  if (x0.dim() != 3 || x0.size(1) > max_len)
    fail("TokenMlp: expected (B, T, D) with T <= max_len = " + std::to_string(max_len) + ", found " + shape_str(x0.shape()));
  const int64_t B = x0.size(0), T = x0.size(1);
  Var x = T < max_len ? pad(x0, {0, 0, 0, max_len - T}) : x0;  // (B, max_len, D)
  Tensor keep = zeros({B, max_len}, x.dtype());
  keep.narrow(1, 0, T).copy_(mask.defined() ? mask.to(x.dtype()) : ones({B, T}, x.dtype()));
  x = x * Var(keep.reshape({B, max_len, 1}));
  Var y = transpose(mlp->forward(transpose(x, 1, 2)), 1, 2);  // (B, max_len, D): mixes along L
  return T < max_len ? narrow(y, 1, 0, T) : y;
}

namespace {

// A registry layer that ends in its own projection (S4D) still gets the block's FFN: the block asks the mixer.
class WithFeedForward : public nn::SequenceLayer {
 public:
  explicit WithFeedForward(std::shared_ptr<nn::SequenceLayer> l) : layer(register_module("layer", std::move(l))) {}
  std::string type_name() const override { return "WithFeedForward"; }
  Var forward(const Var& x, const Tensor& mask) override { return layer->forward(x, mask); }
  std::shared_ptr<nn::SequenceLayer> layer;
};

}  // namespace

std::shared_ptr<nn::SequenceLayer> make_mixer(const MixerNetConfig& c, Generator& g) {
  if (c.mixer == "mixer") return std::make_shared<TokenMlp>(c.max_len, c.token_hidden, g);
  const auto& known = mixer_names();
  if (std::find(known.begin(), known.end(), c.mixer) == known.end())
    throw std::invalid_argument("unknown mixer '" + c.mixer + "' (known: " + harness::join(known) + ")");
  const nn::LayerEntry& e = nn::find_layer(c.mixer);
  nn::BackboneOptions bo;  // what every backbone passes (non-causal: every mixer looks both ways)
  bo.max_len = c.max_len, bo.d_state = c.d_state, bo.heads = c.heads;
  nn::LayerConfig l = nn::backbone_config(e, bo);
  if (e.takes("kernel_size")) l["kernel_size"] = c.kernel_size;
  if (e.takes("num_heads")) l["num_heads"] = c.heads;  // the convolutions' kernel heads (dilatedconv has none)
  auto layer = e.make(c.d_model, l, g);
  if (!layer->wants_feed_forward()) return std::make_shared<WithFeedForward>(layer);
  return layer;
}

// ---- the backbone -------------------------------------------------------------------------------------------------

static nn::SequenceBackboneOptions backbone_options(const MixerNetConfig& c) {
  if (c.vocab <= 0 || c.classes <= 0 || c.max_len <= 0) fail("MixerNet: vocab, classes and max_len must be positive");
  nn::SequenceBackboneOptions o;
  o.vocab = c.vocab, o.d_model = c.d_model, o.max_len = c.max_len, o.layers = (int)c.layers, o.positions = "learned";
  o.block.ffn_hidden = c.ffn_hidden;  // pre-norm LayerNorm for every mixer
  return o;
}

MixerNet::MixerNet(const MixerNetConfig& c, Generator& g)
    : SequenceBackbone(backbone_options(c), [&c](int64_t, Generator& gen) { return make_mixer(c, gen); }, g), cfg(c) {
  head = register_module("head", std::make_shared<nn::Linear>(c.d_model, c.classes, g));
}

Var MixerNet::forward(const Tensor& tokens, const Tensor& mask) { return head->forward(pool(encode(tokens, mask), mask)); }

int64_t count_parameters(const MixerNetConfig& c) {
  Generator g(0);
  return MixerNet(c, g).num_parameters();
}

int64_t matched_ffn_hidden(MixerNetConfig c, int64_t target) {
  c.ffn_hidden = 0;
  const int64_t p0 = count_parameters(c);
  const int64_t unit = c.layers * (2 * c.d_model + 1);  // fc1 D F + F, fc2 F D + D (the + D bias is in p(1) - p(0))
  c.ffn_hidden = 1;
  const int64_t p1 = count_parameters(c);
  if (p0 >= target) return 0;
  // p(F) = p1 + (F - 1) unit for F >= 1
  return std::max<int64_t>(1, std::llround(1.0 + (double)(target - p1) / unit));
}

// ---- the settings -------------------------------------------------------------------------------------------------

void MixersConfig::validate() const {
  const std::string key = task + "/" + mixer;
  for (auto [field, v] : std::vector<std::pair<const char*, double>>{
           {"seq_len", seq_len}, {"steps", steps}, {"d_model", d_model}, {"layers", layers}, {"heads", heads},
           {"ffn_mult", ffn_mult}, {"d_state", d_state}, {"kernel_size", kernel_size}, {"token_hidden", token_hidden},
           {"batch", batch}, {"train_size", train_size}, {"val_size", val_size}, {"test_size", test_size}, {"lr", lr},
           {"ssm_lr", ssm_lr}, {"sweep_batch", sweep_batch}})
    harness::require_positive(key, field, v);
  if (eval_every < 0 || weight_decay < 0 || clip < 0)
    throw harness::ConfigError(key + ": eval_every, weight_decay and clip must be >= 0");
  if (sweep_to < 0 || (sweep_to > 0 && (sweep_from < 1 || sweep_from > sweep_to)))
    throw harness::ConfigError(key + ": the sweep needs 1 <= sweep_from <= sweep_to (or sweep_to 0: no sweep), found " +
                               std::to_string(sweep_from) + ", " + std::to_string(sweep_to));
}

std::vector<int> MixersConfig::sweep_lengths() const {
  std::vector<int> ls;
  for (int L = sweep_from; sweep_to > 0 && L <= sweep_to; L *= 2) ls.push_back(L);
  return ls;
}

// ---- one cell -----------------------------------------------------------------------------------------------------
namespace {

// Each batch is checked against what MixerNet is built for (c's vocabulary, classes and max_len), as training's are.
double accuracy(MixerNet& m, const MixerNetConfig& c, const tasks::Dataset& d, int batch) {
  NoGradGuard ng;
  m.eval();
  tasks::BatcherConfig bc;
  bc.batch_size = batch, bc.shuffle = false;
  tasks::Batcher bt(d, bc);
  const harness::BatchLimits limits{(int32_t)c.vocab, (int32_t)c.classes, (int32_t)c.max_len, d.name};
  int64_t correct = 0, n = 0;
  for (int64_t i = 0; i < bt.batches_per_epoch(); i++) {
    const tasks::Batch b = bt.next();
    harness::check_batch(b, limits, "[mixers " + c.mixer + "] evaluation batch " + std::to_string(i));
    const harness::BatchTensors in = harness::to_tensors(b);
    Tensor pred = argmax(m.forward(in.tokens, in.mask), 1);
    for (int64_t j = 0; j < in.labels.numel(); j++) correct += pred.data<int64_t>()[j] == in.labels.data<int64_t>()[j];
    n += in.labels.numel();
  }
  m.train();
  return n ? (double)correct / n : 0;
}

optim::AdamW make_optimizer(MixerNet& m, double lr, const MixersConfig& o) {
  optim::GroupingOptions go;  // as apps/lra_benchmark: S4's A, B, dt at ssm_lr without decay; norms, biases, embeddings no decay
  go.lr = lr, go.weight_decay = o.weight_decay;
  go.rules = {optim::s4_rule(o.ssm_lr, nn::own_lr_parameter_names(m))};
  go.no_decay_norm_bias_embed = true;
  optim::AdamWOptions ao;
  ao.lr = lr, ao.weight_decay = o.weight_decay;
  return optim::AdamW(optim::make_param_groups(m, go), ao);
}

tasks::TaskData task_data(const MixersConfig& o) {  // the same data for every mixer and seed
  tasks::TaskConfig tc;
  tc.seq_len = o.seq_len, tc.train_size = o.train_size, tc.val_size = o.val_size, tc.test_size = o.test_size;
  tasks::TaskData d = tasks::make_task(o.task, tc);
  for (auto* s : {&d.train, &d.val, &d.test}) {
    if (s->examples.empty()) throw harness::ConfigError(o.task + ": split " + s->name + " is empty");
    if (s->feature_dim != 0 || !s->examples.front().tokens2.empty() || s->num_classes <= 0)
      throw harness::ConfigError("task '" + o.task + "' is not a single-sequence token classification task");
  }
  return d;
}

MixerNetConfig base_config(const MixersConfig& o, const std::string& mixer, const tasks::TaskData& d) {
  MixerNetConfig c;
  c.mixer = mixer;
  c.vocab = d.train.vocab_size, c.classes = d.train.num_classes;
  for (auto* s : {&d.train, &d.val, &d.test})
    for (auto& e : s->examples) c.max_len = std::max<int64_t>(c.max_len, (int64_t)e.tokens.size());
  c.d_model = o.d_model, c.layers = o.layers, c.heads = o.heads, c.d_state = o.d_state;
  c.kernel_size = o.kernel_size, c.token_hidden = o.token_hidden;
  return c;
}

double median(std::vector<double> v) {  // NaN for none
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The step time (ms) of c at length L: the median of `rounds` rounds, each a fresh model timed 3 steps after a warm-up.
double median_step_ms(const MixerNetConfig& c, int batch, int L, int rounds = 3) {
  std::vector<double> ms;
  for (int r = 0; r < rounds; r++) ms.push_back(train_step_ms(c, batch, L, 1, 3));
  return median(ms);
}

struct Trained {
  double best_val = -1, test = 0;  // the best validation accuracy, the test accuracy of the model saved at it
  harness::PhaseResult phase;
};

// Trains c in ctx.dir (checkpoints every eval_every steps, so a killed cell resumes). An evaluation that beats every
// earlier one (the first of equals; those restored from a checkpoint count too) saves the model to
// <cell>/model.safetensors; the test accuracy is measured on that model at the end.
Trained train(const MixerNetConfig& c, const tasks::TaskData& data, const MixersConfig& o, const harness::Cell& cell,
              const harness::RunContext& ctx, std::vector<harness::CurvePoint>& curve) {
  Generator g((uint64_t)o.seed * 1000 + 17);
  MixerNet m(c, g);
  optim::AdamW opt = make_optimizer(m, o.lr, o);
  tasks::BatcherConfig bc;
  bc.batch_size = o.batch, bc.seed = (uint64_t)o.seed * 7919 + 2, bc.drop_last = true;
  tasks::Batcher batches(data.train, bc);
  harness::PhaseParts parts;
  parts.model = &m, parts.opt = &opt, parts.batches = &batches, parts.rngs = {{"dropout", &g}};
  parts.limits = {(int32_t)c.vocab, (int32_t)c.classes, (int32_t)c.max_len, data.train.name};  // what MixerNet is built for
  optim::ScheduleConfig sc;
  sc.kind = "warmup_cosine", sc.warmup = std::max(1, o.steps / 10), sc.total = o.steps;
  parts.schedule = optim::make_schedule(sc);
  parts.loss = [&](const tasks::Batch& b, const harness::Step&) {
    const harness::BatchTensors in = harness::to_tensors(b);
    return cross_entropy(m.forward(in.tokens, in.mask), in.labels);
  };
  const std::string best = ctx.dir + "/model.safetensors";
  auto best_so_far = [&] {
    double v = -1;
    for (const harness::CurvePoint& p : curve) v = std::max(v, p.accuracy);
    return v;
  };
  parts.eval = [&] {
    const double v = accuracy(m, c, data.val, o.batch);
    if (v > best_so_far())
      harness::save_backbone(m, best, {}, {{"dl.study", "mixers"}, {"dl.cell", cell.key()}, {"dl.config", cell.config.dump()}},
                             *ctx.comm);
    return harness::EvalPoint{std::numeric_limits<double>::quiet_NaN(), v};
  };
  Trained t;
  t.phase = harness::run_phase({"train", o.steps, 1, o.clip, o.eval_every, o.eval_every}, parts, ctx, curve);
  t.best_val = best_so_far();
  harness::load_backbone(m, best, {});
  t.test = accuracy(m, c, data.test, o.batch);
  if (ctx.writer()) std::filesystem::remove_all(ctx.dir + "/train");  // the checkpoints: --resume skips a finished cell
  return t;
}

harness::CellResult run_cell(const MixersConfig& o, const harness::Cell& cell, const harness::RunContext& ctx) {
  const tasks::TaskData data = task_data(o);
  MixerNetConfig ref = base_config(o, "attention", data);  // the reference count: attention with F = ffn_mult D
  ref.ffn_hidden = (int64_t)o.ffn_mult * o.d_model;
  const int64_t target = count_parameters(ref);
  MixerNetConfig c = base_config(o, o.mixer, data);
  c.ffn_hidden = o.mixer == "attention" ? ref.ffn_hidden : matched_ffn_hidden(c, target);
  harness::CellResult r;
  const Trained t = train(c, data, o, cell, ctx, r.curve);
  const double ms = median_step_ms(c, o.batch, (int)c.max_len);  // after training, at the task's length and batch
  nlohmann::json sweep = nlohmann::json::array();
  for (int L : o.sweep_lengths()) {
    MixerNetConfig at = c;
    at.max_len = L;  // the positions table and the token MLP sized to the length
    sweep.push_back({{"L", L}, {"batch", o.sweep_batch}, {"ms_per_step", median_step_ms(at, o.sweep_batch, L)}});
  }
  r.metrics = {{"val_acc", t.best_val}, {"test_acc", t.test}, {"ms_per_step", ms},
               {"tokens_per_s", o.batch * c.max_len / (ms / 1000)}};
  r.params = count_parameters(c), r.test_examples = (int64_t)data.test.examples.size();
  r.steps_per_s = t.phase.seconds > 0 ? t.phase.steps_run / t.phase.seconds : 0;
  r.extra = {{"ffn_hidden", c.ffn_hidden}, {"target_params", target}, {"max_len", c.max_len}, {"sweep", sweep},
             {"threads", omp_get_max_threads()}, {"train_seconds", t.phase.seconds}};
  if (!ctx.quiet && ctx.writer())
    std::cerr << ctx.label << " val " << fixed(100 * t.best_val, 1) << "% test " << fixed(100 * t.test, 1) << "% ("
              << fixed(t.phase.seconds, 1) << " s), " << fixed(ms, 1) << " ms/step\n";
  return r;
}

}  // namespace

double train_step_ms(const MixerNetConfig& c, int batch, int L, int warmup, int reps) {
  Generator g(5);
  MixerNet m(c, g);
  optim::AdamW opt = make_optimizer(m, 1e-3, MixersConfig{});
  Tensor tokens = randint(0, c.vocab, {batch, L}, g), labels = randint(0, c.classes, {batch}, g);
  Tensor mask = ones({batch, L});
  std::vector<double> ms;
  for (int r = 0; r < warmup + reps; r++) {
    auto t0 = std::chrono::steady_clock::now();
    cross_entropy(m.forward(tokens, mask), labels).backward();
    harness::apply_update(m, opt, 1.0);
    double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (r >= warmup) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// ---- the report ---------------------------------------------------------------------------------------------------
namespace {

struct Arm {  // one task x mixer: its cells per lr (ascending, so of equal means the smaller lr), and the chosen lr's
  std::string task, mixer;
  std::map<double, std::vector<const harness::CellResult*>> by_lr;
  double lr = 0, ms = 0;
  std::vector<const harness::CellResult*> chosen;
  std::vector<double> val, test;
  MixersConfig cfg;  // the chosen lr's first seed's
};

// The arms in the preset's order of tasks and mixers (values picked on the command line that it lacks come after).
std::vector<Arm> arms_of(const harness::Preset& p, const std::vector<harness::CellResult>& rs) {
  std::map<std::tuple<size_t, std::string, size_t, std::string>, Arm> by;
  for (const harness::CellResult& r : rs) {
    const std::string &task = r.cell.value("task"), &mixer = r.cell.value("mixer");
    Arm& a = by[{position(p.values[0], task), task, position(p.values[1], mixer), mixer}];
    a.task = task, a.mixer = mixer;
    a.by_lr[std::stod(r.cell.value("lr"))].push_back(&r);
  }
  std::vector<Arm> arms;
  for (auto& [key, a] : by) {
    double best = -1;
    for (auto& [lr, cells] : a.by_lr) {  // the lr with the best mean validation accuracy over seeds
      std::vector<double> val;
      for (auto* r : cells) val.push_back(r->metric("val_acc"));
      if (harness::mean_se(val).mean > best) best = harness::mean_se(val).mean, a.lr = lr, a.chosen = cells;
    }
    std::vector<double> ms;
    for (auto* r : a.chosen)
      a.val.push_back(r->metric("val_acc")), a.test.push_back(r->metric("test_acc")), ms.push_back(r->metric("ms_per_step"));
    a.ms = median(ms);
    a.cfg = config_of<MixersConfig>(a.chosen.front()->cell);
    arms.push_back(a);
  }
  return arms;
}

std::string pm(const std::vector<double>& v) { return harness::format_mean_se(harness::mean_se(v)); }

// Step time against length: per arm whose cells timed a sweep, the median over the chosen lr's seeds at each length.
harness::Table sweep_table(const std::vector<Arm>& arms, const std::string& out) {
  std::set<int> lengths;
  std::vector<std::pair<const Arm*, std::map<int, double>>> rows;
  for (const Arm& a : arms) {
    std::map<int, std::vector<double>> at;
    for (auto* r : a.chosen)
      for (auto& s : r->extra.value("sweep", nlohmann::json::array()))
        at[s["L"].get<int>()].push_back(s["ms_per_step"].get<double>());
    if (at.empty()) continue;
    rows.push_back({&a, {}});
    for (auto& [L, ms] : at) rows.back().second[L] = median(ms), lengths.insert(L);
  }
  harness::Table ts;
  if (rows.empty()) return ts;
  ts.title = "Training step time against length (batch " + std::to_string(rows.front().first->cfg.sweep_batch) +
             ", each task's widths; timed in each cell after its training, 3 rounds of 3 steps, median over seeds)";
  ts.columns = {"task", "mixer"};
  for (int L : lengths) ts.columns.push_back("L " + std::to_string(L) + " ms");
  ts.columns.push_back("growth per 2x L");
  ts.right = std::vector<bool>(ts.columns.size(), true), ts.right[0] = ts.right[1] = false;
  harness::Plot pt;
  pt.title = ts.title, pt.xlabel = "length L", pt.ylabel = "ms per training step", pt.logx = pt.logy = true, pt.key = "top left";
  for (auto& [a, ms] : rows) {
    std::vector<std::string> row = {a->task, a->mixer};
    harness::Series s{a->task + " " + a->mixer, {}, {}, {}};
    for (int L : lengths) row.push_back(ms.count(L) ? fixed(ms.at(L), 1) : "-");
    for (auto& [L, t] : ms) s.x.push_back(L), s.y.push_back(t);
    // the mean factor per doubling of L: (t_last / t_first)^(1 / log2(L_last / L_first))
    const double doublings = std::log2(s.x.back() / s.x.front());
    row.push_back(doublings > 0 ? fixed(std::pow(s.y.back() / s.y.front(), 1 / doublings), 2) + "x" : "-");
    ts.rows.push_back(row), pt.series.push_back(s);
  }
  harness::plot_lines(pt, out + "/plots/time_vs_length");
  return ts;
}

harness::Table report(const std::string& out, const harness::Preset& p, const std::vector<harness::CellResult>& rs) {
  harness::Table t;
  t.title = "Token mixers in one backbone: test accuracy (validation-selected), parameters and step time";
  t.columns = {"task", "mixer", "params", "FFN width", "lr", "val acc %", "test acc %", "ms/step", "tokens/s"};
  t.right = {false, false, true, true, true, true, true, true, true};
  const std::vector<Arm> arms = arms_of(p, rs);
  if (arms.empty()) return t;
  std::vector<std::string> tasks, mixers;  // in the arms' order
  size_t seeds = 0;
  for (const Arm& a : arms) {
    const harness::CellResult& f = *a.chosen.front();
    const int64_t L = f.extra.value("max_len", 0);
    t.rows.push_back({a.task + " (L " + std::to_string(L) + ")", a.mixer, std::to_string(f.params),
                      std::to_string(f.extra.value("ffn_hidden", 0)), fixed(a.lr, 4), pm(a.val), pm(a.test), fixed(a.ms, 1),
                      fixed(a.cfg.batch * L / (a.ms / 1000), 0)});
    if (position(tasks, a.task) == tasks.size()) tasks.push_back(a.task);
    if (position(mixers, a.mixer) == mixers.size()) mixers.push_back(a.mixer);
    seeds = std::max(seeds, a.chosen.size());
  }
  std::stable_sort(mixers.begin(), mixers.end(),
                   [&](auto& x, auto& y) { return position(p.values[1], x) < position(p.values[1], y); });
  // accuracy bars (one cluster per mixer, one bar per task) and accuracy against step time (one point per arm)
  harness::Plot pb;
  pb.title = "Test accuracy (validation-selected), mean ± SE over " + std::to_string(seeds) + " seeds";
  pb.ylabel = "test accuracy %", pb.key = "top right";
  harness::Plot ps = pb;
  ps.title = "Test accuracy against training step time", ps.xlabel = "ms per training step (the task's batch)";
  ps.logx = true;
  for (const std::string& task : tasks) {
    harness::Series s{task, {}, std::vector<double>(mixers.size(), NAN), std::vector<double>(mixers.size(), 0)};
    for (const Arm& a : arms) {
      if (a.task != task) continue;
      const harness::MeanSE e = harness::mean_se(a.test);
      const size_t j = position(mixers, a.mixer);
      s.y[j] = 100 * e.mean, s.err[j] = 100 * e.se;
      ps.series.push_back({task + " " + a.mixer, {a.ms}, {s.y[j]}, {s.err[j]}});
    }
    pb.series.push_back(s);
  }
  harness::plot_bars(pb, mixers, out + "/plots/accuracy");
  harness::plot_lines(ps, out + "/plots/accuracy_vs_time");
  const MixersConfig& o = arms.front().cfg;
  t.notes.push_back(
      "Test accuracy at the evaluation with the best validation accuracy (every " + std::to_string(o.eval_every) +
      " steps), mean ± standard error over " + std::to_string(seeds) + " seeds (seed s: initialisation and batch order); "
      "with several lrs, each mixer's is the one with the best mean validation accuracy. Parameters matched to the attention "
      "model with FFN width " + std::to_string(o.ffn_mult) + " d_model by each mixer's FFN width; d_model " +
      std::to_string(o.d_model) + ", " + std::to_string(o.layers) + " pre-norm blocks, learned positions for every mixer. "
      "ms/step: a full training step at the task's length and batch " + std::to_string(o.batch) + ", timed in each cell "
      "after its training (3 rounds of 3 steps after a warm-up, median; the median over seeds); tokens/s = batch x length / "
      "step time. " + std::to_string(arms.front().chosen.front()->extra.value("threads", 0)) + " thread(s).");
  const harness::Table ts = sweep_table(arms, out);
  if (!ts.rows.empty()) t.notes.push_back(ts.markdown());
  return t;
}


}  // namespace

// ---- the experiment and its command line --------------------------------------------------------------------------

harness::Experiment mixers_experiment() {
  harness::Experiment e = study_experiment(
      "mixers", "studies mixers: attention vs MLP-Mixer vs FNet vs S4D vs conv as the token mixer of one backbone");
  e.axes = {{{"task", tasks::task_names()}, "", "a single-sequence token classification task"},
            {{"mixer", mixer_names()}, "", "the token mixer: any registry layer"},
            {{"lr", {}}, "", "the learning rate, e.g. 0.002 (the preset's when it has one)"}};
  harness::typed_cells<MixersConfig>(e, run_cell);
  e.report = report;
  e.cost = [](const harness::Cell& cell) {  // steps x sequence length
    const auto c = config_of<MixersConfig>(cell);
    return (double)c.steps * c.seq_len;
  };
  return e;
}

const LegacyFlags& mixers_legacy_flags() {
  auto lengths = [](const std::string& value) {  // a doubling list: the sweep's first and last length
    const std::vector<int> ls = parse_ints(value, "--lengths");
    for (size_t k = 1; k < ls.size(); k++)
      if (ls[k] != 2 * ls[k - 1])
        throw harness::ConfigError("--lengths " + value +
                                   ": the sweep doubles the length from sweep_from to sweep_to (--set sweep_from=128 --set "
                                   "sweep_to=1024); give a doubling list");
    return std::vector<std::string>{"--set", "sweep_from=" + std::to_string(ls.front()), "--set",
                                    "sweep_to=" + std::to_string(ls.back())};
  };
  static const LegacyFlags f = legacy_flags<MixersConfig>({"steps"}, {{"--lengths", lengths}});
  return f;
}

}  // namespace studies
