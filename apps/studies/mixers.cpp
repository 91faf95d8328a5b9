// apps/studies/mixers.cpp - see mixers.h: the backbone, its equal-parameter widths, the runs and the tables.
#include "mixers.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <omp.h>
#include <sstream>

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
#include "tasks/registry.h"

namespace studies {

using namespace dl;
namespace harness = dl::harness;
using harness::fixed;

const std::vector<std::string> kMixers = {"attention", "mixer", "fnet", "s4d", "lightconv", "dynamicconv"};

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
  if (std::find(kMixers.begin(), kMixers.end(), c.mixer) == kMixers.end()) {
    std::string known;
    for (auto& m : kMixers) known += (known.empty() ? "" : ", ") + m;
    throw std::invalid_argument("unknown mixer '" + c.mixer + "' (known: " + known + ")");
  }
  const nn::LayerEntry& e = nn::find_layer(c.mixer);
  nn::BackboneOptions bo;  // what every backbone passes (non-causal: every mixer looks both ways)
  bo.max_len = c.max_len, bo.d_state = c.d_state, bo.heads = c.heads;
  nn::LayerConfig l = nn::backbone_config(e, bo);
  if (e.takes("kernel_size")) l["kernel_size"] = c.kernel_size, l["num_heads"] = c.heads;
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

// ---- one training run ---------------------------------------------------------------------------------------------
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

optim::AdamW make_optimizer(MixerNet& m, double lr, const MixersOptions& o) {
  optim::GroupingOptions go;  // as apps/lra_benchmark: S4's A, B, dt at ssm_lr without decay; norms, biases, embeddings no decay
  go.lr = lr, go.weight_decay = o.weight_decay;
  go.rules = {optim::s4_rule(o.ssm_lr, nn::own_lr_parameter_names(m))};
  go.no_decay_norm_bias_embed = true;
  optim::AdamWOptions ao;
  ao.lr = lr, ao.weight_decay = o.weight_decay;
  return optim::AdamW(optim::make_param_groups(m, go), ao);
}

struct RunResult {
  double best_val = -1, test_at_best = 0, seconds = 0;
};

RunResult train_one(const MixerNetConfig& c, const tasks::TaskData& data, int steps, double lr, int seed,
                    const MixersOptions& o, const std::string& dir) {
  Generator g((uint64_t)seed * 1000 + 17);
  MixerNet m(c, g);
  optim::AdamW opt = make_optimizer(m, lr, o);
  tasks::BatcherConfig bc;
  bc.batch_size = o.batch, bc.seed = (uint64_t)seed * 7919 + 2, bc.drop_last = true;
  tasks::Batcher batches(data.train, bc);
  harness::PhaseParts parts;
  parts.model = &m, parts.opt = &opt, parts.batches = &batches, parts.rngs = {{"dropout", &g}};
  parts.limits = {(int32_t)c.vocab, (int32_t)c.classes, (int32_t)c.max_len, data.train.name};  // what MixerNet is built for
  optim::ScheduleConfig sc;
  sc.kind = "warmup_cosine", sc.warmup = std::max(1, steps / 10), sc.total = steps;
  parts.schedule = optim::make_schedule(sc);
  parts.loss = [&](const tasks::Batch& b, const harness::Step&) {
    const harness::BatchTensors in = harness::to_tensors(b);
    return cross_entropy(m.forward(in.tokens, in.mask), in.labels);
  };
  RunResult r;
  parts.eval = [&] {  // validation every eval_every steps; the test accuracy of the best validation point
    double v = accuracy(m, c, data.val, o.batch);
    if (v > r.best_val) r.best_val = v, r.test_at_best = accuracy(m, c, data.test, o.batch);
    return harness::EvalPoint{std::numeric_limits<double>::quiet_NaN(), v};
  };
  harness::RunContext ctx;
  ctx.out = ctx.dir = dir, ctx.quiet = o.quiet;
  ctx.label = "[mixers " + c.mixer + " seed " + std::to_string(seed) + "]";
  std::vector<harness::CurvePoint> curve;
  harness::PhaseResult pr = harness::run_phase({"train", steps, 1, o.clip, o.eval_every, steps}, parts, ctx, curve);
  r.seconds = pr.seconds;
  std::filesystem::remove_all(dir + "/train");  // the checkpoint: the study keeps the numbers only
  return r;
}

tasks::TaskData task_data(const std::string& task, int seq_len, const MixersOptions& o) {
  tasks::TaskConfig tc;
  tc.seq_len = seq_len, tc.train_size = o.train_size, tc.val_size = o.val_size, tc.test_size = o.test_size;
  tasks::TaskData d = tasks::make_task(task, tc);
  for (auto* s : {&d.train, &d.val, &d.test}) {
    if (s->examples.empty()) throw std::invalid_argument(task + ": split " + s->name + " is empty");
    if (s->feature_dim != 0 || !s->examples.front().tokens2.empty() || s->num_classes <= 0)
      throw std::invalid_argument("--tasks: '" + task + "' is not a single-sequence token classification task");
  }
  return d;
}

}  // namespace

double train_step_ms(const MixerNetConfig& c, int batch, int L, int warmup, int reps) {
  Generator g(5);
  MixerNet m(c, g);
  MixersOptions o;
  optim::AdamW opt = make_optimizer(m, 1e-3, o);
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

MixersOptions large_mixers_options() {
  MixersOptions o;
  o.seq_len = {{"listops", 256}, {"text", 512}};
  o.steps = {{"listops", 1000}, {"text", 500}};
  o.batch = 32, o.eval_every = 100;
  o.train_size = 5000, o.val_size = 500, o.test_size = 1000;
  o.lrs = {1e-3, 2e-3, 4e-3};
  o.lengths = {256, 512, 1024, 2048, 4096};
  return o;
}

// ---- the study ----------------------------------------------------------------------------------------------------
namespace {

struct Arm {  // one task x mixer: the matched model and its runs at the chosen lr
  MixerNetConfig cfg;
  int64_t params = 0, target = 0;
  int steps = 0;
  double lr = 0, ms = 0, tokens_per_s = 0, train_s = 0;
  std::vector<double> val, test;
};

MixerNetConfig base_config(const MixersOptions& o, const std::string& mixer, const tasks::TaskData& d) {
  MixerNetConfig c;
  c.mixer = mixer;
  c.vocab = d.train.vocab_size, c.classes = d.train.num_classes;
  for (auto* s : {&d.train, &d.val, &d.test})
    for (auto& e : s->examples) c.max_len = std::max<int64_t>(c.max_len, (int64_t)e.tokens.size());
  c.d_model = o.d_model, c.layers = o.layers, c.heads = o.heads, c.d_state = o.d_state;
  c.kernel_size = o.kernel_size, c.token_hidden = o.token_hidden;
  return c;
}

int value_or(const std::map<std::string, int>& m, const std::string& k, int d) {
  auto it = m.find(k);
  return it == m.end() ? d : it->second;
}

// Step times (ms) of several models at their own max_len, measured in interleaved rounds (each round times every
// model once, 3 steps after a warm-up), so a change of the machine's load during the measurement falls on every
// model alike; per model the median over rounds.
std::vector<double> interleaved_step_ms(const std::vector<MixerNetConfig>& cs, int batch, int rounds = 3) {
  std::vector<std::vector<double>> ms(cs.size());
  for (int r = 0; r < rounds; r++)
    for (size_t i = 0; i < cs.size(); i++) ms[i].push_back(train_step_ms(cs[i], batch, (int)cs[i].max_len, 1, 3));
  std::vector<double> med;
  for (auto& v : ms) std::sort(v.begin(), v.end()), med.push_back(v[v.size() / 2]);
  return med;
}

std::string pm(const std::vector<double>& v) { return harness::format_mean_se(harness::mean_se(v)); }

}  // namespace

void run_mixers(const MixersOptions& o) {
  std::filesystem::create_directories(o.out + "/plots");
  nlohmann::json j = {{"options", {{"seeds", o.seeds}, {"d_model", o.d_model}, {"layers", o.layers}, {"batch", o.batch},
                                   {"lrs", o.lrs}, {"threads", omp_get_max_threads()}}},
                      {"arms", nlohmann::json::array()}, {"sweep", nlohmann::json::array()}};
  harness::Table t;
  t.title = "Token mixers in one backbone: test accuracy (validation-selected), parameters and step time";
  t.columns = {"task", "mixer", "params", "FFN width", "lr", "val acc %", "test acc %", "ms/step", "tokens/s"};
  t.right = {false, false, true, true, true, true, true, true, true};
  std::map<std::string, std::vector<Arm>> arms;  // by task
  for (const std::string& task : o.tasks) {
    const int L = value_or(o.seq_len, task, 256), steps = value_or(o.steps, task, 150);
    const tasks::TaskData data = task_data(task, L, o);
    MixerNetConfig ref = base_config(o, "attention", data);
    ref.ffn_hidden = (int64_t)o.ffn_mult * o.d_model;
    const int64_t target = count_parameters(ref);
    for (const std::string& mixer : o.mixers) {
      Arm a;
      a.cfg = base_config(o, mixer, data);
      a.cfg.ffn_hidden = mixer == "attention" ? ref.ffn_hidden : matched_ffn_hidden(a.cfg, target);
      a.params = count_parameters(a.cfg);
      double best_mean = -1;
      for (double lr : o.lrs) {  // the lr with the best mean validation accuracy over seeds
        std::vector<double> val, test;
        double secs = 0;
        for (int s = 0; s < o.seeds; s++) {
          RunResult r = train_one(a.cfg, data, steps, lr, s, o, o.out + "/cells/" + task + "__" + mixer);
          val.push_back(r.best_val), test.push_back(r.test_at_best), secs += r.seconds;
          std::cerr << "[mixers] " << task << " " << mixer << " lr " << lr << " seed " << s << ": val "
                    << fixed(100 * r.best_val, 1) << "% test " << fixed(100 * r.test_at_best, 1) << "% (" << fixed(r.seconds, 1)
                    << " s)\n";
        }
        if (harness::mean_se(val).mean > best_mean)
          best_mean = harness::mean_se(val).mean, a.lr = lr, a.val = val, a.test = test, a.train_s = secs / o.seeds;
      }
      a.target = target, a.steps = steps;
      arms[task].push_back(a);
    }
  }
  for (const std::string& task : o.tasks) {  // step times after all training, the mixers of a task interleaved
    std::vector<MixerNetConfig> cs;
    for (const Arm& a : arms[task]) cs.push_back(a.cfg);
    const std::vector<double> ms = interleaved_step_ms(cs, o.batch);
    for (size_t i = 0; i < ms.size(); i++) {
      Arm& a = arms[task][i];
      const std::string& mixer = a.cfg.mixer;
      a.ms = ms[i], a.tokens_per_s = o.batch * a.cfg.max_len / (a.ms / 1000);
      t.rows.push_back({task + " (L " + std::to_string(a.cfg.max_len) + ")", mixer, std::to_string(a.params),
                        std::to_string(a.cfg.ffn_hidden), fixed(a.lr, 4), pm(a.val), pm(a.test), fixed(a.ms, 1),
                        fixed(a.tokens_per_s, 0)});
      j["arms"].push_back({{"task", task}, {"mixer", mixer}, {"params", a.params}, {"target_params", a.target},
                           {"ffn_hidden", a.cfg.ffn_hidden}, {"max_len", a.cfg.max_len}, {"lr", a.lr}, {"val", a.val},
                           {"test", a.test}, {"ms_per_step", a.ms}, {"tokens_per_s", a.tokens_per_s},
                           {"train_seconds_per_run", a.train_s}, {"steps", a.steps}});
    }
  }
  // accuracy bars (one cluster per mixer, one bar per task) and accuracy against step time
  harness::Plot pb;
  pb.title = "Test accuracy (validation-selected), mean ± SE over " + std::to_string(o.seeds) + " seeds";
  pb.ylabel = "test accuracy %", pb.key = "top right";
  harness::Plot ps = pb;
  ps.title = "Test accuracy against training step time", ps.xlabel = "ms per training step (batch " + std::to_string(o.batch) + ")";
  ps.logx = true;
  for (const std::string& task : o.tasks) {
    harness::Series s;
    s.title = task;
    for (const Arm& a : arms[task]) {
      harness::MeanSE e = harness::mean_se(a.test);
      s.x.push_back(a.ms), s.y.push_back(100 * e.mean), s.err.push_back(100 * e.se);
    }
    pb.series.push_back(s);
    for (size_t i = 0; i < arms[task].size(); i++) {  // one point per mixer, so the key names them
      harness::Series p;
      p.title = task + " " + o.mixers[i];
      p.x = {s.x[i]}, p.y = {s.y[i]}, p.err = {s.err[i]};
      ps.series.push_back(p);
    }
  }
  harness::plot_bars(pb, o.mixers, o.out + "/plots/accuracy");
  harness::plot_lines(ps, o.out + "/plots/accuracy_vs_time");
  // step time against length: the first task's widths, positions and token MLP sized to each length
  harness::Table ts;
  ts.title = "Training step time against length (batch " + std::to_string(o.sweep_batch) +
             ", the first task's widths; 3 interleaved rounds, median)";
  ts.columns = {"mixer"};
  for (int L : o.lengths) ts.columns.push_back("L " + std::to_string(L) + " ms");
  ts.columns.push_back("growth per 2x L");
  ts.right = std::vector<bool>(ts.columns.size(), true), ts.right[0] = false;
  harness::Plot pt;
  pt.title = ts.title, pt.xlabel = "length L", pt.ylabel = "ms per training step", pt.logx = pt.logy = true, pt.key = "top left";
  const std::vector<Arm>& first = arms[o.tasks.front()];
  std::vector<harness::Series> sweep(first.size());
  for (int L : o.lengths) {
    std::vector<MixerNetConfig> cs;
    for (const Arm& a : first) cs.push_back(a.cfg), cs.back().max_len = L;
    const std::vector<double> ms = interleaved_step_ms(cs, o.sweep_batch);
    for (size_t i = 0; i < ms.size(); i++) {
      sweep[i].x.push_back(L), sweep[i].y.push_back(ms[i]);
      j["sweep"].push_back({{"mixer", cs[i].mixer}, {"L", L}, {"batch", o.sweep_batch}, {"ms_per_step", ms[i]}});
      std::cerr << "[mixers] sweep " << cs[i].mixer << " L " << L << ": " << fixed(ms[i], 1) << " ms\n";
    }
  }
  // the mean factor per doubling of L: (t_last / t_first)^(1 / log2(L_last / L_first))
  const double doublings = std::log2((double)o.lengths.back() / o.lengths.front());
  for (size_t i = 0; i < first.size(); i++) {
    sweep[i].title = first[i].cfg.mixer;
    std::vector<std::string> row = {first[i].cfg.mixer};
    for (double ms : sweep[i].y) row.push_back(fixed(ms, 1));
    row.push_back(doublings > 0 ? fixed(std::pow(sweep[i].y.back() / sweep[i].y.front(), 1 / doublings), 2) + "x" : "-");
    ts.rows.push_back(row), pt.series.push_back(sweep[i]);
  }
  harness::plot_lines(pt, o.out + "/plots/time_vs_length");
  t.notes.push_back(
      "Test accuracy at the evaluation with the best validation accuracy (every " + std::to_string(o.eval_every) +
      " steps), mean ± standard error over " + std::to_string(o.seeds) + " seeds (seed s: initialisation and batch order). "
      "Parameters matched to the attention model with FFN width " + std::to_string(o.ffn_mult) + " d_model by each mixer's FFN "
      "width; d_model " + std::to_string(o.d_model) + ", " + std::to_string(o.layers) + " pre-norm blocks, learned positions for "
      "every mixer. ms/step: a full training step at the task's length and batch " + std::to_string(o.batch) +
      ", measured after all training in 3 rounds that interleave the mixers (median); tokens/s = batch x length / step time. " + std::to_string(omp_get_max_threads()) + " thread(s).");
  t.notes.push_back(ts.markdown());
  harness::write_text_atomic(o.out + "/mixers.json", j.dump(2) + "\n");
  harness::write_text_atomic(o.out + "/mixers.md", t.markdown());
  std::cout << t.markdown();
}

// ---- the subcommand -----------------------------------------------------------------------------------------------

void add_mixers_command(CLI::App& app) {
  auto o = std::make_shared<MixersOptions>();
  auto preset = std::make_shared<std::string>("default"), mixers = std::make_shared<std::string>(),
       tasks_ = std::make_shared<std::string>(), lengths = std::make_shared<std::string>(),
       lrs = std::make_shared<std::string>(), out = std::make_shared<std::string>(o->out);
  auto seeds = std::make_shared<int>(0), steps = std::make_shared<int>(0), threads = std::make_shared<int>(2);
  auto quiet = std::make_shared<bool>(false);
  CLI::App* c = app.add_subcommand("mixers", "attention vs MLP-Mixer vs FNet vs S4D vs conv as the token mixer of one backbone");
  c->add_option("--preset", *preset, "default (a few minutes) or large")->capture_default_str()->check(
      CLI::IsMember({"default", "large"}));
  c->add_option("--out", *out, "output folder")->capture_default_str();
  c->add_option("--mixers", *mixers, "comma-separated, from: attention,mixer,fnet,s4d,lightconv,dynamicconv");
  c->add_option("--tasks", *tasks_, "comma-separated token classification tasks (default listops,text)");
  c->add_option("--seeds", *seeds, "seeds per arm (default 3)")->check(CLI::PositiveNumber);
  c->add_option("--steps", *steps, "training steps for every task (default: listops 250, text 150)")->check(CLI::PositiveNumber);
  c->add_option("--lrs", *lrs, "learning rates, chosen per mixer on validation (default 0.002)");
  c->add_option("--lengths", *lengths, "lengths of the step-time sweep");
  c->add_option("--threads", *threads, "CPU threads")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_flag("--quiet", *quiet, "no progress bars");
  c->callback([=] {
    MixersOptions r = *preset == "large" ? large_mixers_options() : *o;
    r.out = *out, r.quiet = *quiet;
    if (!mixers->empty()) r.mixers = parse_names(*mixers, "--mixers", kMixers);
    if (!tasks_->empty()) r.tasks = parse_names(*tasks_, "--tasks", tasks::task_names());
    if (*seeds > 0) r.seeds = *seeds;
    if (*steps > 0)
      for (auto& task : r.tasks) r.steps[task] = *steps;
    if (!lrs->empty()) r.lrs = parse_reals(*lrs, "--lrs");
    if (!lengths->empty()) r.lengths = parse_ints(*lengths, "--lengths");
    harness::set_threads(*threads);
    run_mixers(r);
  });
}

}  // namespace studies
