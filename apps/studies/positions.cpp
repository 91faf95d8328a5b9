// apps/studies/positions.cpp - see positions.h.
#include "positions.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include <omp.h>

#include "apps/common/batch_tensors.h"
#include "apps/common/experiment.h"
#include "apps/common/phase.h"
#include "apps/common/report.h"
#include "apps/common/results.h"
#include "apps/common/stats.h"
#include "cli.h"
#include "optim/adam.h"
#include "optim/schedule.h"
#include "study.h"
#include "tasks/objectives.h"

namespace studies {

using namespace dl;
namespace harness = dl::harness;

// ---- the task -------------------------------------------------------------------------------------------------------

static void check_task(const std::string& task, int64_t offset, int64_t T) {
  if (task != "lookback" && task != "first") throw std::invalid_argument("unknown task '" + task + "' (lookback, first)");
  if (offset < 1 || offset >= T)
    throw std::invalid_argument("offset " + std::to_string(offset) + " must be in [1, T = " + std::to_string(T) + ")");
}

Tensor task_targets(const std::string& task, const Tensor& inputs, int64_t offset) {
  const int64_t B = inputs.size(0), T = inputs.size(1);
  check_task(task, offset, T);
  const Tensor in = inputs.contiguous();
  const int64_t* x = in.data<int64_t>();
  std::vector<int64_t> y(B * T, tasks::kIgnoreIndex);
  for (int64_t b = 0; b < B; b++)
    for (int64_t t = task == "lookback" ? offset : 1; t < T; t++)
      y[b * T + t] = task == "lookback" ? x[b * T + t - offset] : x[b * T];  // x_{t - offset} or x_0
  return from_vector(y, {B, T});
}

SeqBatch task_batch(const std::string& task, int64_t B, int64_t T, int64_t vocab, int64_t offset, uint64_t seed) {
  check_task(task, offset, T);
  std::mt19937_64 rng(seed);
  std::vector<int64_t> x(B * T);
  for (auto& v : x) v = (int64_t)(rng() % (uint64_t)vocab);
  Tensor inputs = from_vector(x, {B, T});
  return {inputs, task_targets(task, inputs, offset)};
}

// ---- the model ------------------------------------------------------------------------------------------------------

PosModel::PosModel(const PosModelConfig& c, Generator& g) : cfg(c) {
  if (c.pos != "none" && c.pos != "sinusoidal" && c.pos != "learned" && c.pos != "rotary")
    throw std::invalid_argument("PosModel: unknown positions '" + c.pos + "' (none, sinusoidal, learned, rotary)");
  tok = register_module("tok", std::make_shared<nn::Embedding>(c.vocab, c.d_model, g));
  if (c.pos == "learned") learned = register_module("pos", std::make_shared<nn::LearnedPositions>(c.max_len, c.d_model, g));
  nn::AttentionOptions attn;
  attn.rotary = c.pos == "rotary";
  layers = register_module("layers", std::make_shared<nn::ModuleList<nn::TransformerEncoderLayer>>());
  for (int64_t l = 0; l < c.depth; l++)
    layers->push_back(std::make_shared<nn::TransformerEncoderLayer>(c.d_model, c.heads, c.dim_ff, 0.0, true, g, attn));
  norm = register_module("norm", std::make_shared<nn::LayerNorm>(c.d_model));
  head = register_module("head", std::make_shared<nn::Linear>(c.d_model, c.vocab, g));
}

Var PosModel::forward(const Tensor& ids) const {
  Var h = tok->forward(ids);  // (B, T, C)
  if (cfg.pos == "sinusoidal") h = h + Var(nn::sinusoidal_table(ids.size(1), cfg.d_model, h.dtype()));
  if (learned) h = learned->forward(h);  // T > max_len is an error naming both
  for (const auto& layer : layers->items()) h = layer->forward(h, Tensor());
  return head->forward(norm->forward(h));  // (B, T, V)
}

LengthAccuracy task_accuracy(const PosModel& m, const std::vector<SeqBatch>& set, int64_t train_len) {
  NoGradGuard ng;
  LengthAccuracy a;
  std::vector<int64_t> hit, seen;
  for (const SeqBatch& b : set) {
    Var logits = m.forward(b.inputs);  // (B, T, V)
    const int64_t B = logits.size(0), T = logits.size(1);
    if (a.length && a.length != T) throw std::invalid_argument("task_accuracy: batches of different lengths");
    a.length = T, hit.resize(T, 0), seen.resize(T, 0);
    Tensor pred = argmax(logits.data(), 2).to(DType::i64).contiguous(), tgt = b.targets.contiguous();
    for (int64_t i = 0; i < B; i++)
      for (int64_t t = 0; t < T; t++) {
        const int64_t y = tgt.data<int64_t>()[i * T + t];
        if (y == tasks::kIgnoreIndex) continue;
        hit[t] += pred.data<int64_t>()[i * T + t] == y, seen[t]++;
      }
  }
  int64_t all_hit = 0, beyond_hit = 0;
  for (int64_t t = 0; t < a.length; t++) {
    a.per_position.push_back(seen[t] ? (double)hit[t] / seen[t] : NAN);
    all_hit += hit[t], a.counted += seen[t];
    if (t >= train_len) beyond_hit += hit[t], a.beyond_counted += seen[t];
  }
  if (a.counted == 0) throw std::invalid_argument("task_accuracy: no position with a target");
  a.all = (double)all_hit / a.counted;
  if (a.beyond_counted) a.beyond = (double)beyond_hit / a.beyond_counted;
  return a;
}

// ---- the analytic part ----------------------------------------------------------------------------------------------

// R(t) v: v as one head (1, 1, 1, HS) at position `t` (apply_rotary's offset).
static std::vector<double> rotate(const std::vector<double>& v, int64_t t) {
  Tensor r = nn::apply_rotary(Var(from_vector(v, {1, 1, 1, (int64_t)v.size()})), t).data().contiguous();
  return std::vector<double>(r.data<double>(), r.data<double>() + v.size());
}

double rope_score(const std::vector<double>& q, const std::vector<double>& k, int64_t t, int64_t s) {
  if (q.size() != k.size() || q.size() % 2)
    throw std::invalid_argument("rope_score: q and k need the same even size, found " + std::to_string(q.size()) +
                                " and " + std::to_string(k.size()));
  const std::vector<double> rq = rotate(q, t), rk = rotate(k, s);
  double d = 0;
  for (size_t i = 0; i < q.size(); i++) d += rq[i] * rk[i];
  return d;
}

double table_score(const Tensor& pe, int64_t t, int64_t s, const std::vector<double>& A) {
  const int64_t C = pe.size(1);
  if (pe.dtype() != DType::f64 || t < 0 || s < 0 || std::max(t, s) >= pe.size(0))
    throw std::invalid_argument("table_score: rows " + std::to_string(t) + ", " + std::to_string(s) +
                                " of a float64 table " + shape_str(pe.shape()));
  if (!A.empty() && (int64_t)A.size() != C * C)
    throw std::invalid_argument("table_score: A has " + std::to_string(A.size()) + " entries, C x C = " +
                                std::to_string(C * C));
  const double *a = pe.data<double>() + t * C, *b = pe.data<double>() + s * C;
  double d = 0;
  for (int64_t i = 0; i < C; i++)
    if (A.empty()) d += a[i] * b[i];
    else
      for (int64_t j = 0; j < C; j++) d += a[i] * A[i * C + j] * b[j];
  return d;
}

// ---- the settings ---------------------------------------------------------------------------------------------------

std::vector<int> PositionsConfig::test_lengths() const {
  if (lengths.empty()) throw harness::ConfigError("field 'lengths': no test length");
  std::vector<int> v;
  for (int64_t L : harness::parse_int_list(lengths, "lengths")) {
    if (L > INT32_MAX) throw harness::ConfigError("field 'lengths': " + std::to_string(L) + " is too long a test length");
    v.push_back((int)L);
  }
  return v;
}

void PositionsConfig::validate() const {
  const std::string key = task + "/" + pos;
  auto bad = [&](const std::string& m) { throw harness::ConfigError(key + ": " + m); };
  for (auto [field, v] : std::vector<std::pair<const char*, double>>{
           {"steps", steps}, {"eval_every", eval_every}, {"batch", batch}, {"val_examples", val_examples},
           {"test_examples", test_examples}, {"lr", lr}, {"d_model", d_model}, {"heads", heads}, {"depth", depth},
           {"train_len", train_len}})
    harness::require_positive(key, field, v);
  if (warmup < 0) bad("field 'warmup' must be >= 0, found " + std::to_string(warmup));
  if (vocab < 2) bad("field 'vocab' must be at least 2, found " + std::to_string(vocab));
  if (offset < 1 || offset >= train_len)
    bad("field 'offset' " + std::to_string(offset) + " must be in [1, train_len " + std::to_string(train_len) + ")");
  for (int L : test_lengths())
    if (L < train_len) bad("field 'lengths': " + std::to_string(L) + " is below train_len " + std::to_string(train_len));
  if (d_model % heads) bad("d_model " + std::to_string(d_model) + " is not a multiple of heads " + std::to_string(heads));
  if ((d_model / heads) % 2) bad("the head size d_model / heads = " + std::to_string(d_model / heads) + " must be even (rotary)");
}

// ---- one cell -------------------------------------------------------------------------------------------------------
namespace {

using dl::harness::fixed;  // apps/common/report.h

const std::vector<std::string> kTasks = {"lookback", "first"}, kPositions = {"none", "sinusoidal", "learned", "rotary"};

// Evaluation sets in batches of at most 64 sequences, seeded apart from training (seed 7 000 000 + ...), the same for
// every model and seed.
std::vector<SeqBatch> eval_set(const PositionsConfig& o, int examples, int T, uint64_t seed) {
  std::vector<SeqBatch> v;
  for (int done = 0, i = 0; done < examples; done += 64, i++)
    v.push_back(task_batch(o.task, std::min(64, examples - done), T, o.vocab, o.offset, seed + i));
  return v;
}

// The training set: step k's batch is task_batch(seed 1000003 seed + k), row by row, so a Batcher that does not
// shuffle hands out the batches of the loop before the harness, and every position type sees the same ones.
tasks::Dataset train_set(const PositionsConfig& o) {
  tasks::Dataset d;
  d.name = o.task + "/train", d.vocab_size = o.vocab, d.max_len = o.train_len;
  for (int step = 0; step < o.steps; step++) {
    const Tensor x = task_batch(o.task, o.batch, o.train_len, o.vocab, o.offset, (uint64_t)o.seed * 1000003 + step).inputs;
    for (int64_t b = 0; b < o.batch; b++) {
      tasks::Example e;
      for (int64_t t = 0; t < o.train_len; t++) e.tokens.push_back((int32_t)x.data<int64_t>()[b * o.train_len + t]);
      d.examples.push_back(e);
    }
  }
  return d;
}

nlohmann::json to_json(const LengthAccuracy& a) {
  return {{"length", a.length}, {"acc", a.all}, {"acc_beyond", std::isnan(a.beyond) ? nlohmann::json() : nlohmann::json(a.beyond)},
          {"counted", a.counted}, {"beyond_counted", a.beyond_counted}, {"per_position", a.per_position}};
}

// Adam (no weight decay, so the learned table's unused rows stay at init), linear warmup then constant lr; an
// evaluation that beats every earlier one (the first of equals; those restored from a checkpoint count too) saves the
// model, which is then tested at every length.
harness::CellResult run_cell(const PositionsConfig& o, const harness::Cell& cell, const harness::RunContext& ctx) {
  const std::vector<int> lengths = o.test_lengths();
  PosModelConfig c;
  c.pos = o.pos, c.vocab = o.vocab, c.d_model = o.d_model, c.heads = o.heads, c.depth = o.depth, c.dim_ff = 2 * o.d_model;
  c.max_len = *std::max_element(lengths.begin(), lengths.end());
  Generator g(1000 + o.seed);
  PosModel m(c, g);
  optim::AdamOptions ao;
  ao.lr = o.lr;
  optim::Adam opt(m.parameters(), ao);
  const tasks::Dataset train = train_set(o);
  tasks::BatcherConfig bc;
  bc.batch_size = o.batch, bc.shuffle = false, bc.drop_last = true;
  tasks::Batcher batches(train, bc);
  const std::vector<SeqBatch> val = eval_set(o, o.val_examples, o.train_len, 7000000);
  harness::PhaseParts parts;
  parts.model = &m, parts.opt = &opt, parts.batches = &batches, parts.rngs = {{"dropout", &g}};
  parts.schedule = optim::linear_warmup(o.warmup);
  parts.limits = {o.vocab, 0, o.train_len, train.name};
  parts.loss = [&](const tasks::Batch& b, const harness::Step&) {
    const Tensor x = harness::to_tensors(b).tokens, y = task_targets(o.task, x, o.offset);  // (B, T) each
    return cross_entropy(reshape(m.forward(x), {x.numel(), o.vocab}), y.reshape({x.numel()}));
  };
  harness::CellResult r;
  auto best = [&] {  // the first evaluation with the best validation accuracy
    const harness::CurvePoint* b = nullptr;
    for (const harness::CurvePoint& p : r.curve)
      if (!b || p.accuracy > b->accuracy) b = &p;
    return b;
  };
  const std::string model_file = ctx.dir + "/model.safetensors";
  parts.eval = [&] {
    const double v = task_accuracy(m, val, o.train_len).all;
    if (!best() || v > best()->accuracy)
      harness::save_backbone(m, model_file, {}, {{"dl.study", "positions"}, {"dl.config", cell.config.dump()}}, *ctx.comm);
    return harness::EvalPoint{std::numeric_limits<double>::quiet_NaN(), v};
  };
  const harness::PhaseResult ph = harness::run_phase({"train", o.steps, 1, 0.0, o.eval_every, o.eval_every}, parts, ctx, r.curve);
  harness::load_backbone(m, model_file, {});
  nlohmann::json tests = nlohmann::json::array();
  r.metrics = {{"val_acc", best()->accuracy}, {"best_step", best()->step}};
  for (size_t i = 0; i < lengths.size(); i++) {
    const LengthAccuracy a = task_accuracy(m, eval_set(o, o.test_examples, lengths[i], 8000000 + 1000 * i), o.train_len);
    tests.push_back(to_json(a));
    r.metrics["acc_T" + std::to_string(a.length)] = a.all;
  }
  r.params = m.num_parameters(), r.test_examples = o.test_examples;
  r.steps_per_s = ph.seconds > 0 ? ph.steps_run / ph.seconds : 0;
  r.extra = {{"tests", tests}, {"threads", omp_get_max_threads()}, {"train_seconds", ph.seconds}};
  if (ctx.writer()) std::filesystem::remove_all(ctx.dir + "/train");  // the checkpoints: --resume skips a finished cell
  if (!ctx.quiet && ctx.writer())
    std::cerr << ctx.label << " val " << fixed(100 * best()->accuracy, 1) << "% (step " << best()->step << "), test "
              << fixed(100 * tests.back()["acc"].get<double>(), 1) << "% at T = " << lengths.back() << "\n";
  return r;
}

// ---- the report -----------------------------------------------------------------------------------------------------

std::string sci(double x) {
  std::ostringstream s;
  s << std::scientific << std::setprecision(1) << x;
  return s.str();
}
std::string pct(const harness::MeanSE& e) { return fixed(100 * e.mean, 1) + " ± " + fixed(100 * e.se, 1); }

const char* pos_label(const std::string& p) {
  if (p == "none") return "none (control)";
  if (p == "sinusoidal") return "sinusoidal (added)";
  if (p == "learned") return "learned (added)";
  return "rotary (RoPE)";
}

// ---- the analytic part: the score as a function of the offset t - s at several absolute starts ----------------------

struct Analytic {
  harness::Table table;
  nlohmann::json json;
};

Analytic analytic_part(const std::string& out) {
  const int64_t HS = 64, C = 64, D = 128;  // head size / table width; offsets -D .. D
  const std::vector<int64_t> starts = {0, 100, 1000, 10000};
  std::mt19937_64 rng(20210320);
  std::normal_distribution<double> n01(0, 1);
  std::vector<double> q(HS), k(HS), ones(HS, 1.0), A(C * C);
  for (auto& v : q) v = n01(rng);
  for (auto& v : k) v = n01(rng);
  for (auto& v : A) v = n01(rng) / std::sqrt((double)C);

  // f(start, delta): the score of the query at start + delta and the key at start (t - s = delta)
  struct Curve {
    std::string name, plot, legend;
    std::function<double(int64_t, int64_t)> f;
  };
  const Tensor pe = nn::sinusoidal_table(starts.back() + 3 * D, C, DType::f64).contiguous();
  const std::vector<Curve> curves = {
      {"RoPE, random q, k (HS 64)", "rope", "random q, k", [&](int64_t s0, int64_t dl) { return rope_score(q, k, s0 + dl, s0); }},
      {"RoPE, q = k = 1 (HS 64)", "rope", "q = k = 1", [&](int64_t s0, int64_t dl) { return rope_score(ones, ones, s0 + dl, s0); }},
      {"sinusoidal pe[t] . pe[s] (C 64)", "sin", "pe[t] . pe[s]", [&](int64_t s0, int64_t dl) { return table_score(pe, s0 + dl, s0); }},
      {"sinusoidal pe[t]^T A pe[s], random A", "sin", "pe[t]^T A pe[s]",
       [&](int64_t s0, int64_t dl) { return table_score(pe, s0 + dl, s0, A); }}};
  Analytic a;
  a.table.title = "Is the score a function of t - s only? (no training)";
  a.table.columns = {"score", "max over offsets of the spread over starts", "range of the score"};
  a.table.right = {false, true, true};
  a.json = nlohmann::json::array();
  harness::Plot rope_plot, sin_plot;
  rope_plot.title = "RoPE: (R(t) q) . (R(s) k) against t - s (HS 64), four starts s";
  sin_plot.title = "Sinusoidal table (C 64): pe[t] . pe[s] (four starts) and pe[t]^T A pe[s] (two starts)";
  for (auto* p : {&rope_plot, &sin_plot}) p->xlabel = "offset t - s", p->ylabel = "score", p->key = "top right";
  for (const Curve& cv : curves) {
    double spread = 0, lo = INFINITY, hi = -INFINITY;
    std::vector<std::vector<double>> by_start(starts.size());
    for (int64_t dl = -D; dl <= D; dl++) {
      double mn = INFINITY, mx = -INFINITY;
      for (size_t i = 0; i < starts.size(); i++) {
        const int64_t s0 = starts[i] + D;  // keeps t = s0 + dl >= 0
        const double v = cv.f(s0, dl);
        by_start[i].push_back(v), mn = std::min(mn, v), mx = std::max(mx, v);
      }
      spread = std::max(spread, mx - mn), lo = std::min(lo, mn), hi = std::max(hi, mx);
    }
    a.table.rows.push_back({cv.name, sci(spread), fixed(lo, 3) + " .. " + fixed(hi, 3)});
    a.json.push_back({{"score", cv.name}, {"max_spread", spread}, {"min", lo}, {"max", hi}, {"starts", starts},
                      {"by_start", by_start}});
    harness::Plot& p = cv.plot == "rope" ? rope_plot : sin_plot;
    for (size_t i = 0; i < 2; i++) {
      if (i > 0 && spread < 1e-6) break;  // the curves of all starts coincide: draw one
      harness::Series s;
      s.title = cv.legend + (spread < 1e-6 ? " (all 4 starts)" : ", s = " + std::to_string(starts[i] + D));
      for (int64_t dl = -D; dl <= D; dl++) s.x.push_back((double)dl), s.y.push_back(by_start[i][dl + D]);
      p.series.push_back(s);
    }
  }
  a.table.notes.push_back(
      "For each offset t - s in -" + std::to_string(D) + " .. " + std::to_string(D) + ", the score at four absolute "
      "starts s = 128, 228, 1128, 10128; the spread is max - min over the starts, and the column its largest value over "
      "the offsets (0 up to rounding: a function of t - s alone). q, k, A ~ N(0, 1) (A scaled by 1/sqrt(C)), seed "
      "20210320. RoPE through nn::apply_rotary's offset, the table through nn::sinusoidal_table, both in float64.");
  harness::plot_lines(rope_plot, out + "/plots/rope_score_vs_offset");
  harness::plot_lines(sin_plot, out + "/plots/sinusoidal_score_vs_offset");
  return a;
}

std::string task_rule(const std::string& task, int offset) {
  return task == "lookback" ? "y_t = x_{t-" + std::to_string(offset) + "}" : "y_t = x_0";
}

// One test length of a cell's result: its "tests" entry (null in the JSON is NaN: no target there).
double test_value(const harness::CellResult* r, size_t i, const char* key) {
  const nlohmann::json& v = r->extra["tests"][i][key];
  return v.is_null() ? NAN : v.get<double>();
}

// One task: the cells of every position type (the preset's order), their two accuracy tables and two plots.
std::vector<harness::Table> task_tables(const std::string& task, const std::vector<const harness::CellResult*>& cells,
                                        const harness::Preset& p, const std::string& out) {
  std::map<std::pair<size_t, std::string>, std::vector<const harness::CellResult*>> by_pos;
  for (auto* r : cells) by_pos[{position(p.values[1], r->cell.value("position")), r->cell.value("position")}].push_back(r);
  const auto o = config_of<PositionsConfig>(cells.front()->cell);
  const std::vector<int> lengths = o.test_lengths();
  harness::Table ta, tb;
  ta.title = "Task " + task + " (" + task_rule(task, o.offset) + "): accuracy (%) at each test length, all positions (trained at T = " +
             std::to_string(o.train_len) + ")";
  tb.title = "Task " + task + ": the same, only the positions t >= " + std::to_string(o.train_len) + " (never seen in training)";
  ta.columns = {"positions", "val (T = " + std::to_string(o.train_len) + ")"};
  tb.columns = {"positions"};
  for (int L : lengths) {
    ta.columns.push_back("T = " + std::to_string(L));
    if (L > o.train_len) tb.columns.push_back("T = " + std::to_string(L));
  }
  ta.right.assign(ta.columns.size(), true), tb.right.assign(tb.columns.size(), true);
  ta.right[0] = tb.right[0] = false;
  harness::Plot pa, pp;
  pa.title = task + " (" + task_rule(task, o.offset) + "), trained at T = " + std::to_string(o.train_len);
  pa.xlabel = "test length T", pa.ylabel = "accuracy (%), mean ± SE over seeds", pa.logx = true, pa.key = "outside right";
  pa.width = 900;
  const int longest = lengths.back();
  pp.title = "Task " + task + ": accuracy at each position, test length " + std::to_string(longest) + " (trained at " +
             std::to_string(o.train_len) + ")";
  pp.xlabel = "position t", pp.ylabel = "accuracy (%), mean over seeds", pp.key = "outside right";
  size_t seeds = 0;
  for (auto& item : by_pos) {
    const std::vector<const harness::CellResult*>& rs = item.second;  // (named: clang 14 cannot capture a binding)
    const char* label = pos_label(item.first.second);
    seeds = std::max(seeds, rs.size());
    auto over_seeds = [&](auto get) {
      std::vector<double> v;
      for (auto* r : rs) v.push_back(get(r));
      return harness::mean_se(v);
    };
    std::vector<std::string> ra = {label, pct(over_seeds([](auto* r) { return r->metric("val_acc"); }))}, rb = {label};
    harness::Series sa{label, {}, {}, {}}, sp{label, {}, {}, {}};
    for (size_t i = 0; i < lengths.size(); i++) {
      const harness::MeanSE e = over_seeds([&](auto* r) { return test_value(r, i, "acc"); });
      ra.push_back(pct(e));
      sa.x.push_back(lengths[i]), sa.y.push_back(100 * e.mean), sa.err.push_back(100 * e.se);
      if (lengths[i] > o.train_len) rb.push_back(pct(over_seeds([&](auto* r) { return test_value(r, i, "acc_beyond"); })));
    }
    for (int t = 0; t < longest; t++) {
      const double a = over_seeds([&](auto* r) {
        const nlohmann::json& v = r->extra["tests"][lengths.size() - 1]["per_position"][t];
        return v.is_null() ? NAN : v.get<double>();
      }).mean;
      if (!std::isnan(a)) sp.x.push_back(t), sp.y.push_back(100 * a);  // NaN: no target at t
    }
    ta.rows.push_back(ra), tb.rows.push_back(rb), pa.series.push_back(sa), pp.series.push_back(sp);
  }
  ta.notes.push_back(
      "Task " + task + ": " + task_rule(task, o.offset) + " over " + std::to_string(o.vocab) + " symbols (chance " +
      fixed(100.0 / o.vocab, 1) + "%), accuracy over every position with a target. Model: depth " + std::to_string(o.depth) +
      ", pre-LN, d_model " + std::to_string(o.d_model) + ", " + std::to_string(o.heads) + " heads, d_ff " +
      std::to_string(2 * o.d_model) + ", bidirectional attention; Adam lr " + fixed(o.lr, 4) + " (warmup " +
      std::to_string(o.warmup) + "), " + std::to_string(o.steps) + " steps of " + std::to_string(o.batch) +
      " sequences of length " + std::to_string(o.train_len) + ". The checkpoint with the best validation accuracy (" +
      std::to_string(o.val_examples) + " sequences at the training length, every " + std::to_string(o.eval_every) +
      " steps) is tested on " + std::to_string(o.test_examples) + " fresh sequences at each length. Mean ± SE over " +
      std::to_string(seeds) + " seeds (seed = init and data order; every position type sees the same batches).");
  ta.notes.push_back(
      "learned: the table has " + std::to_string(longest) + " rows (the longest test length); the rows t >= " +
      std::to_string(o.train_len) + " never enter a training forward pass, get no gradient and stay exactly at their "
      "N(0, 0.02²) init (Adam without weight decay), so at T > " + std::to_string(o.train_len) +
      " the model sees near-zero position vectors there.");
  harness::plot_lines(pa, out + "/plots/" + task + "_accuracy_vs_length");
  harness::plot_lines(pp, out + "/plots/" + task + "_accuracy_by_position");
  return {ta, tb};
}

// The first task's table heads results.md; the other tables (the tasks', then the analytic one) follow as its notes,
// in the order of the report before the harness (results.json keeps them as markdown in the table's notes).
harness::Table report(const std::string& out, const harness::Preset& p, const std::vector<harness::CellResult>& rs) {
  std::map<std::pair<size_t, std::string>, std::vector<const harness::CellResult*>> by_task;
  for (const harness::CellResult& r : rs) by_task[{position(p.values[0], r.cell.value("task")), r.cell.value("task")}].push_back(&r);
  std::vector<harness::Table> tables;
  for (auto& [key, cells] : by_task)
    for (const harness::Table& t : task_tables(key.second, cells, p, out)) tables.push_back(t);
  tables.push_back(analytic_part(out).table);
  harness::Table head = tables.front();
  for (size_t i = 1; i < tables.size(); i++) head.notes.push_back(tables[i].markdown());
  return head;
}

}  // namespace

// ---- the experiment and its command line ----------------------------------------------------------------------------

harness::Experiment positions_experiment() {
  harness::Experiment e =
      study_experiment("positions", "studies positions: sinusoidal vs learned vs rotary positions, trained short, tested long");
  e.axes = {{{"task", kTasks}, "", "lookback (y_t = x_{t - offset}) or first (y_t = x_0)"},
            {{"position", kPositions, "pos"}, "", "none, sinusoidal, learned or rotary"}};
  harness::typed_cells<PositionsConfig>(e, run_cell);
  e.report = report;
  e.cost = [](const harness::Cell& cell) {  // steps x training length
    const auto c = config_of<PositionsConfig>(cell);
    return (double)c.steps * c.train_len;
  };
  e.commands = [](CLI::App& app) {
    auto out = std::make_shared<std::string>("runs/studies/positions");
    auto threads = std::make_shared<int>(1);
    CLI::App* a = app.add_subcommand("analytic", "only the analytic part (no training, seconds): its table and two plots");
    a->add_option("--out", *out, "output folder")->capture_default_str();
    a->add_option("--threads", *threads, "CPU threads")->capture_default_str();
    return std::vector<harness::Command>{{a, [out, threads] {
                                            harness::set_threads(*threads);
                                            const harness::Table t = analytic_part(*out).table;
                                            harness::write_text_atomic(*out + "/analytic.md", t.markdown());
                                            std::cout << t.markdown();
                                          }}};
  };
  return e;
}

const LegacyFlags& positions_legacy_flags() {
  static const LegacyFlags f = legacy_flags<PositionsConfig>(
      {"train_len", "lengths", "offset", "vocab", "steps", "eval_every", "batch", "lr", "warmup", "d_model", "heads", "depth",
       "test_examples"},
      {}, {{"--large", {"--preset", "large"}}, {"--preset-large", {"--preset", "large"}}, {"--no-train", {"analytic"}}});
  return f;
}

}  // namespace studies
