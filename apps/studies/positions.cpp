// apps/studies/positions.cpp - see positions.h.
#include "positions.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "apps/common/experiment.h"
#include "apps/common/progress.h"
#include "apps/common/report.h"
#include "apps/common/results.h"
#include "apps/common/stats.h"
#include "cli.h"
#include "optim/adam.h"
#include "optim/schedule.h"
#include "tasks/objectives.h"

namespace studies {

using namespace dl;
namespace harness = dl::harness;

// ---- the task -------------------------------------------------------------------------------------------------------

SeqBatch task_batch(const std::string& task, int64_t B, int64_t T, int64_t vocab, int64_t offset, uint64_t seed) {
  if (task != "lookback" && task != "first")
    throw std::invalid_argument("task_batch: unknown task '" + task + "' (lookback, first)");
  if (offset < 1 || offset >= T)
    throw std::invalid_argument("task_batch: offset " + std::to_string(offset) + " must be in [1, T = " +
                                std::to_string(T) + ")");
  std::mt19937_64 rng(seed);
  std::vector<int64_t> x(B * T), y(B * T, tasks::kIgnoreIndex);
  for (auto& v : x) v = (int64_t)(rng() % (uint64_t)vocab);
  for (int64_t b = 0; b < B; b++)
    for (int64_t t = task == "lookback" ? offset : 1; t < T; t++)
      y[b * T + t] = task == "lookback" ? x[b * T + t - offset] : x[b * T];  // x_{t - offset} or x_0
  return {from_vector(x, {B, T}), from_vector(y, {B, T})};
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

// ---- the study ------------------------------------------------------------------------------------------------------
namespace {

using dl::harness::fixed;  // apps/common/report.h
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

struct Data {
  std::vector<SeqBatch> val;                   // at train_len
  std::vector<std::vector<SeqBatch>> tests;    // per test length
};

// Evaluation sets in batches of at most 64 sequences, seeded apart from training (seed 7 000 000 + ...), the same for
// every model and seed.
std::vector<SeqBatch> eval_set(const std::string& task, int examples, int T, const PositionsOptions& o, uint64_t seed) {
  std::vector<SeqBatch> v;
  for (int done = 0, i = 0; done < examples; done += 64, i++)
    v.push_back(task_batch(task, std::min(64, examples - done), T, o.vocab, o.offset, seed + i));
  return v;
}

// One training run: Adam (no weight decay, so the learned table's unused rows stay at init), linear warmup then
// constant lr, batches seeded by (seed, step) so every position type sees the same data; the parameters of the
// evaluation with the best validation accuracy (at train_len) are kept and tested at every length.
struct RunResult {
  double val = 0;
  int best_step = 0;
  std::vector<LengthAccuracy> tests;
};

using Snapshot = std::map<std::string, Tensor>;
Snapshot snapshot(const PosModel& m) {
  Snapshot s;
  for (auto& [n, p] : m.named_parameters()) s[n] = p.data().clone();
  return s;
}
void restore(PosModel& m, const Snapshot& s) {
  for (auto& [n, p] : m.named_parameters()) p.mutable_data() = s.at(n).clone();
}

RunResult train_run(const std::string& task, const std::string& pos, int seed, const Data& d, const PositionsOptions& o) {
  PosModelConfig c;
  c.pos = pos, c.vocab = o.vocab, c.d_model = o.d_model, c.heads = o.heads, c.depth = o.depth, c.dim_ff = 2 * o.d_model;
  c.max_len = *std::max_element(o.lengths.begin(), o.lengths.end());
  Generator g(1000 + seed);
  PosModel m(c, g);
  optim::AdamOptions ao;
  ao.lr = o.lr;
  optim::Adam opt(m.parameters(), ao);
  const optim::Schedule sched = optim::linear_warmup(o.warmup);
  RunResult r;
  r.val = -1;
  Snapshot best;
  harness::Progress bar("[positions] " + task + ", " + pos + " seed " + std::to_string(seed), o.steps);
  for (int step = 0; step < o.steps; step++) {
    optim::apply_schedule(opt, sched, step);
    SeqBatch b = task_batch(task, o.batch, o.train_len, o.vocab, o.offset, (uint64_t)seed * 1000003 + step);
    opt.zero_grad();
    Var logits = m.forward(b.inputs);  // (B, T, V)
    Var loss = cross_entropy(reshape(logits, {b.inputs.numel(), o.vocab}), b.targets.reshape({b.inputs.numel()}));
    loss.backward();
    opt.step();
    if ((step + 1) % o.eval_every == 0 || step + 1 == o.steps) {
      const double v = task_accuracy(m, d.val, o.train_len).all;
      if (v > r.val) r.val = v, r.best_step = step + 1, best = snapshot(m);
      bar.update(step + 1, loss.item(), v);
    }
  }
  bar.finish();
  restore(m, best);
  for (const auto& set : d.tests) r.tests.push_back(task_accuracy(m, set, o.train_len));
  return r;
}

void check_options(const PositionsOptions& o) {
  auto bad = [](const std::string& m) { throw std::invalid_argument("positions: " + m); };
  for (const std::string& t : o.tasks)
    if (t != "lookback" && t != "first") bad("unknown task '" + t + "' (lookback, first)");
  if (o.tasks.empty()) bad("no task");
  for (const std::string& p : o.positions)
    if (p != "none" && p != "sinusoidal" && p != "learned" && p != "rotary")
      bad("unknown position type '" + p + "' (none, sinusoidal, learned, rotary)");
  if (o.positions.empty()) bad("no position type");
  if (o.lengths.empty()) bad("no test length");
  for (int L : o.lengths)
    if (L < o.train_len) bad("test length " + std::to_string(L) + " is below the training length " + std::to_string(o.train_len));
  if (o.offset < 1 || o.offset >= o.train_len)
    bad("offset " + std::to_string(o.offset) + " must be in [1, train length " + std::to_string(o.train_len) + ")");
  if (o.vocab < 2) bad("vocab " + std::to_string(o.vocab) + " must be at least 2");
  if (o.d_model % o.heads) bad("d_model " + std::to_string(o.d_model) + " is not a multiple of heads " + std::to_string(o.heads));
  if ((o.d_model / o.heads) % 2) bad("the head size d_model / heads = " + std::to_string(o.d_model / o.heads) + " must be even (rotary)");
  if (o.seeds < 1 || o.steps < 1 || o.eval_every < 1 || o.batch < 1 || o.val_examples < 1 || o.test_examples < 1)
    bad("seeds, steps, eval_every, batch, val_examples and test_examples must be positive");
}

// ---- the analytic part: the score as a function of the offset t - s at several absolute starts ----------------------

struct Analytic {
  harness::Table table;
  nlohmann::json json;
};

Analytic analytic_part(const PositionsOptions& o) {
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
  harness::plot_lines(rope_plot, o.out + "/plots/rope_score_vs_offset");
  harness::plot_lines(sin_plot, o.out + "/plots/sinusoidal_score_vs_offset");
  return a;
}

std::string task_rule(const std::string& task, int offset) {
  return task == "lookback" ? "y_t = x_{t-" + std::to_string(offset) + "}" : "y_t = x_0";
}

// Every position type on one task, `seeds` runs each: the two accuracy tables and the two plots; the runs go into
// j["runs"] and the tables into j["tables"].
std::string task_section(const std::string& task, const PositionsOptions& o, nlohmann::json& j) {
  std::string md;
  Data d;
  d.val = eval_set(task, o.val_examples, o.train_len, o, 7000000);
  for (size_t i = 0; i < o.lengths.size(); i++)
    d.tests.push_back(eval_set(task, o.test_examples, o.lengths[i], o, 8000000 + 1000 * i));
  harness::Table ta, tb;
  ta.title = "Task " + task + " (" + task_rule(task, o.offset) + "): accuracy (%) at each test length, all positions (trained at T = " +
             std::to_string(o.train_len) + ")";
  tb.title = "Task " + task + ": the same, only the positions t >= " + std::to_string(o.train_len) + " (never seen in training)";
  ta.columns = {"positions", "val (T = " + std::to_string(o.train_len) + ")"};
  tb.columns = {"positions"};
  for (int L : o.lengths) {
    ta.columns.push_back("T = " + std::to_string(L));
    if (L > o.train_len) tb.columns.push_back("T = " + std::to_string(L));
  }
  ta.right.assign(ta.columns.size(), true), tb.right.assign(tb.columns.size(), true);
  ta.right[0] = tb.right[0] = false;
  harness::Plot pa, pp;
  pa.title = task + " (" + task_rule(task, o.offset) + "), trained at T = " + std::to_string(o.train_len);
  pa.xlabel = "test length T", pa.ylabel = "accuracy (%), mean ± SE over seeds", pa.logx = true, pa.key = "outside right";
  pa.width = 900;
  const int longest = o.lengths.back();
  pp.title = "Task " + task + ": accuracy at each position, test length " + std::to_string(longest) + " (trained at " +
             std::to_string(o.train_len) + ")";
  pp.xlabel = "position t", pp.ylabel = "accuracy (%), mean over seeds", pp.key = "outside right";
  for (const std::string& pos : o.positions) {
    std::vector<RunResult> rs;
    for (int s = 0; s < o.seeds; s++) {
      rs.push_back(train_run(task, pos, s, d, o));
      nlohmann::json tests = nlohmann::json::array();
      for (const LengthAccuracy& a : rs.back().tests)
        tests.push_back({{"length", a.length}, {"acc", a.all}, {"acc_beyond", std::isnan(a.beyond) ? nlohmann::json() : nlohmann::json(a.beyond)},
                         {"counted", a.counted}, {"beyond_counted", a.beyond_counted}, {"per_position", a.per_position}});
      j["runs"].push_back({{"task", task}, {"positions", pos}, {"seed", s}, {"val", rs.back().val}, {"best_step", rs.back().best_step},
                           {"tests", tests}});
      std::cerr << "[positions] " << task << ", " << pos << " seed " << s << ": val " << fixed(100 * rs.back().val, 1) << "% (step "
                << rs.back().best_step << "), test " << fixed(100 * rs.back().tests.back().all, 1) << "% at T = "
                << rs.back().tests.back().length << "\n";
    }
    auto over_seeds = [&](auto get) {
      std::vector<double> v;
      for (const RunResult& r : rs) v.push_back(get(r));
      return harness::mean_se(v);
    };
    std::vector<std::string> ra = {pos_label(pos), pct(over_seeds([](const RunResult& r) { return r.val; }))};
    std::vector<std::string> rb = {pos_label(pos)};
    harness::Series sa;
    sa.title = pos_label(pos);
    for (size_t i = 0; i < o.lengths.size(); i++) {
      const harness::MeanSE e = over_seeds([&](const RunResult& r) { return r.tests[i].all; });
      ra.push_back(pct(e));
      sa.x.push_back(o.lengths[i]), sa.y.push_back(100 * e.mean), sa.err.push_back(100 * e.se);
      if (o.lengths[i] > o.train_len) rb.push_back(pct(over_seeds([&](const RunResult& r) { return r.tests[i].beyond; })));
    }
    ta.rows.push_back(ra), tb.rows.push_back(rb), pa.series.push_back(sa);
    harness::Series sp;
    sp.title = pos_label(pos);
    for (int t = 0; t < longest; t++) {
      const double a = over_seeds([&](const RunResult& r) { return r.tests.back().per_position[t]; }).mean;
      if (!std::isnan(a)) sp.x.push_back(t), sp.y.push_back(100 * a);  // NaN: no target at t
    }
    pp.series.push_back(sp);
  }
  const std::string setting =
      "Task " + task + ": " + task_rule(task, o.offset) + " over " + std::to_string(o.vocab) +
      " symbols (chance " + fixed(100.0 / o.vocab, 1) + "%), accuracy over every position with a target. Model: depth " +
      std::to_string(o.depth) + ", pre-LN, d_model " + std::to_string(o.d_model) + ", " + std::to_string(o.heads) +
      " heads, d_ff " + std::to_string(2 * o.d_model) + ", bidirectional attention; Adam lr " + fixed(o.lr, 4) +
      " (warmup " + std::to_string(o.warmup) + "), " + std::to_string(o.steps) + " steps of " + std::to_string(o.batch) +
      " sequences of length " + std::to_string(o.train_len) + ". The checkpoint with the best validation accuracy (" +
      std::to_string(o.val_examples) + " sequences at the training length, every " + std::to_string(o.eval_every) +
      " steps) is tested on " + std::to_string(o.test_examples) + " fresh sequences at each length. Mean ± SE over " +
      std::to_string(o.seeds) + " seeds (seed = init and data order; every position type sees the same batches).";
  ta.notes.push_back(setting);
  ta.notes.push_back(
      "learned: the table has " + std::to_string(longest) + " rows (the longest test length); the rows t >= " +
      std::to_string(o.train_len) + " never enter a training forward pass, get no gradient and stay exactly at their "
      "N(0, 0.02²) init (Adam without weight decay), so at T > " + std::to_string(o.train_len) +
      " the model sees near-zero position vectors there.");
  md += ta.markdown() + "\n" + tb.markdown() + "\n";
  harness::plot_lines(pa, o.out + "/plots/" + task + "_accuracy_vs_length");
  harness::plot_lines(pp, o.out + "/plots/" + task + "_accuracy_by_position");
  j["tables"].push_back(ta.to_json()), j["tables"].push_back(tb.to_json());
  return md;
}

}  // namespace

void run_positions(const PositionsOptions& o) {
  check_options(o);
  std::filesystem::create_directories(o.out + "/plots");
  nlohmann::json j = {{"settings",
                       {{"tasks", o.tasks}, {"positions", o.positions}, {"train_len", o.train_len},
                        {"lengths", o.lengths}, {"offset", o.offset}, {"vocab", o.vocab}, {"steps", o.steps},
                        {"eval_every", o.eval_every}, {"batch", o.batch}, {"lr", o.lr}, {"warmup", o.warmup},
                        {"d_model", o.d_model}, {"heads", o.heads}, {"depth", o.depth}, {"seeds", o.seeds},
                        {"val_examples", o.val_examples}, {"test_examples", o.test_examples}}},
                      {"runs", nlohmann::json::array()}, {"tables", nlohmann::json::array()}};
  std::string md;
  if (o.train)
    for (const std::string& task : o.tasks) md += task_section(task, o, j);
  Analytic an = analytic_part(o);
  md += an.table.markdown();
  j["analytic"] = an.json;
  harness::write_text_atomic(o.out + "/positions.json", j.dump(1) + "\n");
  harness::write_text_atomic(o.out + "/positions.md", md);
  std::cout << md;
}

// ---- the subcommand -------------------------------------------------------------------------------------------------

void add_positions_command(CLI::App& app) {
  auto o = std::make_shared<PositionsOptions>();
  auto positions = std::make_shared<std::string>(), lengths = std::make_shared<std::string>();
  auto tasks = std::make_shared<std::string>();
  auto large = std::make_shared<bool>(false), no_train = std::make_shared<bool>(false);
  auto preset = std::make_shared<std::string>("default");
  auto threads = std::make_shared<int>(1);
  CLI::App* c = app.add_subcommand("positions", "sinusoidal vs learned vs rotary positions, trained short, tested long");
  c->add_option("--out", o->out, "output folder")->capture_default_str();
  c->add_option("--tasks", *tasks, "tasks among lookback (y_t = x_{t - offset}), first (y_t = x_0) (default both)");
  c->add_option("--positions", *positions, "position types among none, sinusoidal, learned, rotary (default all)");
  c->add_option("--train-len", o->train_len, "training sequence length")->capture_default_str()->check(CLI::Range(2, 100000));
  c->add_option("--lengths", *lengths, "test lengths, each >= --train-len (default 32,64,128)");
  c->add_option("--offset", o->offset, "the task's lookback: y_t = x_{t - offset}")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--vocab", o->vocab, "symbols")->capture_default_str()->check(CLI::Range(2, 100000));
  c->add_option("--steps", o->steps, "training steps")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--eval-every", o->eval_every, "steps between validations")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--batch", o->batch, "sequences per batch")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--lr", o->lr, "Adam learning rate")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--warmup", o->warmup, "linear warmup steps")->capture_default_str()->check(CLI::NonNegativeNumber);
  c->add_option("--d-model", o->d_model, "model width")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--heads", o->heads, "attention heads")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--depth", o->depth, "layers")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--seeds", o->seeds, "seeds per position type")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--test-examples", o->test_examples, "test sequences per length")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_flag("--no-train", *no_train, "only the analytic part");
  c->add_option("--preset", *preset,
                "default (about 3 min) or large: train at 64, test at 64,128,256,512, d_model 64, 4 heads, 2000 steps, "
                "5 seeds (flags given beside it win)")
      ->capture_default_str()
      ->check(CLI::IsMember({"default", "large"}));
  c->add_flag("--large,--preset-large", *large, "the same as --preset large");
  c->add_option("--threads", *threads, "CPU threads")->capture_default_str()->check(CLI::PositiveNumber);
  c->callback([=] {
    PositionsOptions r = *o;
    if (*large || *preset == "large") {  // the preset, except where a flag was given as well
      auto unset = [&](const char* flag) { return c->count(flag) == 0; };
      if (unset("--train-len")) r.train_len = 64;
      if (lengths->empty()) r.lengths = {64, 128, 256, 512};
      if (unset("--d-model")) r.d_model = 64;
      if (unset("--heads")) r.heads = 4;
      if (unset("--steps")) r.steps = 2000;
      if (unset("--seeds")) r.seeds = 5;
    }
    if (!lengths->empty()) r.lengths = parse_ints(*lengths, "--lengths");
    for (int L : r.lengths)
      if (L < r.train_len)
        throw CLI::ValidationError("--lengths", std::to_string(L) + " is below --train-len " + std::to_string(r.train_len));
    if (r.offset >= r.train_len)
      throw CLI::ValidationError("--offset", std::to_string(r.offset) + " must be below --train-len " + std::to_string(r.train_len));
    if (!tasks->empty()) r.tasks = parse_names(*tasks, "--tasks", {"lookback", "first"});
    if (!positions->empty()) r.positions = parse_names(*positions, "--positions", {"none", "sinusoidal", "learned", "rotary"});
    r.train = !*no_train;
    harness::set_threads(*threads);
    run_positions(r);
  });
}

}  // namespace studies
