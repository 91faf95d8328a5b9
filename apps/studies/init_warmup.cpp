// apps/studies/init_warmup.cpp - see init_warmup.h.
#include "init_warmup.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <tuple>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "apps/common/batch_tensors.h"
#include "apps/common/experiment.h"
#include "apps/common/phase.h"
#include "apps/common/report.h"
#include "apps/common/results.h"
#include "apps/common/stats.h"
#include "cli.h"
#include "nn/init.h"
#include "optim/adam.h"
#include "optim/schedule.h"
#include "study.h"
#include "tasks/objectives.h"
#include "tasks/text_classification.h"

namespace studies {

using namespace dl;
namespace harness = dl::harness;

// ---- the model ----------------------------------------------------------------------------------------------------

// The layers' dropout is 0, so their Dropout modules never draw from g (they keep a pointer to it, unused).
ByteLm::ByteLm(const ByteLmConfig& c, Generator& g) : cfg(c) {
  tok = register_module("tok", std::make_shared<nn::Embedding>(c.vocab, c.d_model, g));
  pos = register_module("pos", std::make_shared<nn::Embedding>(c.max_len, c.d_model, g));
  if (!c.norm_first) emb_norm = register_module("emb_norm", std::make_shared<nn::LayerNorm>(c.d_model));
  nn::AttentionOptions attn;
  attn.causal = c.causal;
  layers = register_module("layers", std::make_shared<nn::ModuleList<nn::TransformerEncoderLayer>>());
  for (int64_t l = 0; l < c.depth; l++)
    layers->push_back(std::make_shared<nn::TransformerEncoderLayer>(c.d_model, c.heads, c.dim_ff, 0.0, c.norm_first, g, attn));
  if (c.norm_first) final_norm = register_module("final_norm", std::make_shared<nn::LayerNorm>(c.d_model));
  if (c.head_transform) {
    head_dense = register_module("head_dense", std::make_shared<nn::Linear>(c.d_model, c.d_model, g));
    head_norm = register_module("head_norm", std::make_shared<nn::LayerNorm>(c.d_model));
  }
  out_bias = register_parameter("out_bias", zeros({c.vocab}));
  init_parameters(*this, c.init, g);
}

Var ByteLm::forward(const Tensor& ids) const {
  if (ids.dim() != 2 || ids.size(1) > cfg.max_len)
    throw std::invalid_argument("ByteLm: expected ids (B, T <= " + std::to_string(cfg.max_len) + "), found " +
                                shape_str(ids.shape()));
  Var h = tok->forward(ids) + pos->forward(arange(ids.size(1)));  // (B, T, C)
  if (emb_norm) h = emb_norm->forward(h);
  for (const auto& layer : layers->items()) h = layer->forward(h, Tensor());
  if (final_norm) h = final_norm->forward(h);
  if (head_dense) h = head_norm->forward(gelu(head_dense->forward(h)));
  return linear(h, tok->weight, out_bias);  // (B, T, V), the output projection tied to the input embedding
}

// The inits the study knows, in the order of init_label's names.
static const std::vector<std::string> kInits = {"0.02", "lecun", "xavier"};

void init_parameters(nn::Module& m, const std::string& init, Generator& g) {
  if (std::find(kInits.begin(), kInits.end(), init) == kInits.end())
    throw std::invalid_argument("init_parameters: unknown init '" + init + "' (known: " + harness::join(kInits) + ")");
  for (auto& [name, p] : m.named_parameters()) {
    const Shape& s = p.data().shape();
    const DType dt = p.data().dtype();
    Tensor t;
    if (name.size() >= 4 && name.compare(name.size() - 4, 4, "bias") == 0) t = zeros(s);
    else if (s.size() < 2) t = ones(s);  // LayerNorm gains
    else if (init == "0.02") t = nn::init::normal(s, 0.02, g);
    else if (init == "lecun") t = nn::init::normal(s, 1.0 / std::sqrt((double)nn::init::fan_in(s)), g);
    else t = nn::init::xavier_uniform(s, g);
    p.mutable_data() = t.to(dt);
  }
}

std::string init_label(const std::string& init) {
  if (init == "0.02") return "N(0, 0.02²)";
  if (init == "lecun") return "N(0, 1/fan_in)";
  if (init == "xavier") return "Xavier uniform";
  return init;
}

LmBatch lm_batch(const std::string& text, int64_t B, int64_t T, const std::string& objective, uint64_t seed) {
  if (objective != "causal" && objective != "mlm")
    throw std::invalid_argument("lm_batch: unknown objective '" + objective + "' (causal, mlm)");
  if ((int64_t)text.size() < T + 2)
    throw std::invalid_argument("lm_batch: the text has " + std::to_string(text.size()) + " bytes, fewer than T + 2 = " +
                                std::to_string(T + 2));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> start(0, (int64_t)text.size() - T - 1);
  std::vector<int64_t> in, tg;
  for (int64_t b = 0; b < B; b++) {
    const int64_t s0 = start(rng);
    std::vector<int32_t> x(T + 1);
    for (int64_t t = 0; t <= T; t++) x[t] = (unsigned char)text[s0 + t];
    if (objective == "mlm") x.pop_back();
    // no padding inside a window: pad id -1 never matches a byte
    tasks::TokenObjective o = objective == "mlm" ? tasks::mask_tokens(x, 0.15, 256, -1, rng) : tasks::causal_lm(x, -1);
    in.insert(in.end(), o.inputs.begin(), o.inputs.end());
    tg.insert(tg.end(), o.targets.begin(), o.targets.end());
  }
  return {from_vector(in, {B, T}), from_vector(tg, {B, T})};
}

Var lm_loss(const ByteLm& m, const LmBatch& b) {
  Var logits = m.forward(b.inputs);  // (B, T, V)
  const int64_t N = b.inputs.numel();
  return cross_entropy(reshape(logits, {N, m.cfg.vocab}), b.targets.reshape({N}));
}

static double sum_sq(const Tensor& t) {
  if (!t.defined()) return 0;
  Tensor c = t.to(DType::f64).contiguous();
  double s = 0;
  for (int64_t i = 0; i < c.numel(); i++) s += c.data<double>()[i] * c.data<double>()[i];
  return s;
}

std::vector<double> layer_grad_norms(ByteLm& m, const LmBatch& b) {
  m.zero_grad();
  lm_loss(m, b).backward();
  std::vector<double> norms;
  for (const auto& layer : m.layers->items()) {
    double s = 0;
    for (const Var& p : layer->parameters()) s += sum_sq(p.grad());
    norms.push_back(std::sqrt(s));
  }
  return norms;
}

// ---- the settings -------------------------------------------------------------------------------------------------

std::vector<int> InitWarmupConfig::depth_list() const {
  std::vector<int> v;
  for (int64_t d : harness::parse_int_list(depths, "depths")) v.push_back((int)d);
  return v;
}

std::vector<std::string> InitWarmupConfig::init_list() const { return harness::parse_name_list(inits, "inits", kInits); }

void InitWarmupConfig::validate() const {
  const std::string key = norm + "/" + arm;
  auto bad = [&](const std::string& m) { throw harness::ConfigError(key + ": " + m); };
  for (auto [field, v] : std::vector<std::pair<const char*, double>>{
           {"lr", lr}, {"lr_factor", lr_factor}, {"depth", depth}, {"steps", steps}, {"warmup", warmup},
           {"eval_every", eval_every}, {"eval_batches", eval_batches}, {"d_model", d_model}, {"heads", heads},
           {"batch", batch}, {"seq_len", seq_len}})
    harness::require_positive(key, field, v);
  if (measure != "training" && measure != "grad_norms") bad("field 'measure': '" + measure + "' is not training or grad_norms");
  if (schedule != "warmup" && schedule != "constant") bad("field 'schedule': '" + schedule + "' is not warmup or constant");
  if (std::find(kInits.begin(), kInits.end(), init) == kInits.end())
    bad("field 'init': '" + init + "' is not one of " + harness::join(kInits));
  if (objective != "causal" && objective != "mlm") bad("field 'objective': '" + objective + "' is not causal or mlm");
  if (d_model % heads) bad("d_model " + std::to_string(d_model) + " is not a multiple of heads " + std::to_string(heads));
  if (measure == "training") harness::require_warmup(key, warmup, steps);
  if (seq_len < 2) bad("field 'seq_len' must be at least 2, found " + std::to_string(seq_len));
  depth_list(), init_list();
}

// ---- one cell -----------------------------------------------------------------------------------------------------
namespace {

using dl::harness::fixed;  // apps/common/report.h
std::string pm(const harness::MeanSE& e, int d) { return fixed(e.mean, d) + " ± " + fixed(e.se, d); }
const char* ln_name(bool norm_first) { return norm_first ? "pre-LN" : "post-LN"; }

struct Data {
  std::string train, val;
  std::vector<LmBatch> val_batches;
  LmBatch grad_batch;
  double unigram = 0;  // entropy (nats) of the byte distribution of the training text
  double bigram = 0;   // conditional entropy H(x_{t+1} | x_t) of the training text
};

Data load_data(const InitWarmupConfig& o) {
  Data d;
  std::string text = o.text.empty() ? tasks::brown_pretraining_text() : harness::read_text(o.text);
  if ((int64_t)text.size() < 20 * (o.seq_len + 1))
    throw harness::ConfigError("init-warmup: the text has " + std::to_string(text.size()) + " bytes; it needs at least " +
                               std::to_string(20 * (o.seq_len + 1)) + " for seq_len " + std::to_string(o.seq_len));
  const size_t cut = text.size() * 9 / 10;  // the last 10% is held out for the validation loss
  d.train = text.substr(0, cut), d.val = text.substr(cut);
  for (int i = 0; i < o.eval_batches; i++) d.val_batches.push_back(lm_batch(d.val, o.batch, o.seq_len, o.objective, 9000 + i));
  d.grad_batch = lm_batch(d.train, o.batch, o.seq_len, o.objective, 4242);
  std::vector<double> count(256, 0);
  for (unsigned char c : d.train) count[c] += 1;
  for (double c : count)
    if (c > 0) d.unigram -= c / d.train.size() * std::log(c / d.train.size());
  std::vector<double> pair(256 * 256, 0), prev(256, 0);
  for (size_t i = 0; i + 1 < d.train.size(); i++)
    pair[(unsigned char)d.train[i] * 256 + (unsigned char)d.train[i + 1]] += 1, prev[(unsigned char)d.train[i]] += 1;
  const double n = d.train.size() - 1;
  for (int a = 0; a < 256; a++)
    for (int b = 0; b < 256; b++)
      if (pair[a * 256 + b] > 0) d.bigram -= pair[a * 256 + b] / n * std::log(pair[a * 256 + b] / prev[a]);
  return d;
}

ByteLmConfig model_config(const InitWarmupConfig& o, int depth, const std::string& init) {
  ByteLmConfig c;
  c.d_model = o.d_model, c.heads = o.heads, c.dim_ff = 4 * o.d_model, c.max_len = o.seq_len, c.depth = depth;
  c.norm_first = o.norm == "pre", c.head_transform = o.head_transform, c.init = init, c.causal = o.objective == "causal";
  return c;
}

// (a) the gradient norm of every layer at initialisation on one fixed batch, for every depth and init (this cell's
// norm and seed): extra.grad_norms[depth][init] = the norms from the first layer to the last.
nlohmann::json grad_norms(const InitWarmupConfig& o, const Data& d, const harness::RunContext& ctx) {
  nlohmann::json j = nlohmann::json::object();
  for (int depth : o.depth_list())
    for (const std::string& init : o.init_list()) {
      Generator g(1000 + o.seed);
      ByteLm m(model_config(o, depth, init), g);
      j[std::to_string(depth)][init] = layer_grad_norms(m, d.grad_batch);
      if (!ctx.quiet && ctx.writer()) std::cerr << ctx.label << " grad norms at depth " << depth << ", init " << init << "\n";
    }
  return j;
}

struct Diverged : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// (b)-(d) one training run on run_phase: AdamW (lr x lr_factor, betas 0.9/0.999, weight decay 0.01 on every
// parameter), linear warmup then constant (or constant from step 0), no gradient clipping (clipping would hide the
// instability the study looks for). The training set is steps x batch windows drawn by (seed, step) (lm_batch), so
// every configuration sees the same batches. Each eval_every steps the curve gets the mean training loss of those
// steps and the validation loss; a non-finite training loss ends the run as diverged (the checkpoints stay).
void train(const InitWarmupConfig& o, const Data& d, const harness::RunContext& ctx, harness::CellResult& r) {
  Generator g(1000 + o.seed);
  ByteLm m(model_config(o, o.depth, o.init), g);
  optim::AdamWOptions ao;
  ao.lr = o.lr * o.lr_factor;
  optim::AdamW opt(m.parameters(), ao);
  // The training set: step k's batch is lm_batch(seed 1000003 seed + k), row by row, for a Batcher that does not
  // shuffle; the targets (which the inputs do not determine) kept beside it, row for row.
  tasks::Dataset train;
  train.name = "text/train", train.vocab_size = (int32_t)ByteLmConfig{}.vocab, train.max_len = o.seq_len;
  std::vector<int64_t> targets;  // (steps B, T)
  for (int step = 0; step < o.steps; step++) {
    const LmBatch b = lm_batch(d.train, o.batch, o.seq_len, o.objective, (uint64_t)o.seed * 1000003 + step);
    const int64_t *x = b.inputs.data<int64_t>(), *y = b.targets.data<int64_t>();
    targets.insert(targets.end(), y, y + o.batch * o.seq_len);
    for (int64_t i = 0; i < o.batch; i++) {
      tasks::Example e;
      e.tokens.assign(x + i * o.seq_len, x + (i + 1) * o.seq_len);
      train.examples.push_back(e);
    }
  }
  tasks::BatcherConfig bc;
  bc.batch_size = o.batch, bc.shuffle = false, bc.drop_last = true;
  tasks::Batcher batches(train, bc);
  harness::PhaseParts parts;
  parts.model = &m, parts.opt = &opt, parts.batches = &batches, parts.rngs = {{"dropout", &g}};
  parts.schedule = o.schedule == "warmup" ? optim::linear_warmup(o.warmup) : optim::constant_schedule();
  parts.limits = {train.vocab_size, 0, o.seq_len, train.name};
  parts.loss = [&](const tasks::Batch& b, const harness::Step& s) {
    std::vector<int64_t> y;  // (B, T): the rows' targets, by their index in the training set
    for (int64_t i : b.indices) y.insert(y.end(), &targets[i * o.seq_len], &targets[(i + 1) * o.seq_len]);
    Var loss = lm_loss(m, LmBatch{harness::to_tensors(b).tokens, from_vector(y, {b.batch_size, o.seq_len})});
    if (!std::isfinite(loss.item())) throw Diverged("step " + std::to_string(s.step));
    return loss;
  };
  parts.eval = [&] {
    NoGradGuard ng;
    double s = 0;
    for (const LmBatch& b : d.val_batches) s += lm_loss(m, b).item();
    return harness::EvalPoint{s / d.val_batches.size(), -1};
  };
  harness::PhaseSpec spec{"train", o.steps, 1, 0.0, o.eval_every, o.eval_every};
  spec.log_every = o.eval_every;  // a curve point per eval_every steps: the mean training loss of those steps
  try {
    const harness::PhaseResult ph = harness::run_phase(spec, parts, ctx, r.curve);
    r.steps_per_s = ph.seconds > 0 ? ph.steps_run / ph.seconds : 0;
    r.metrics["val_loss"] = r.curve.back().val_loss;
  } catch (const Diverged& e) {
    if (!ctx.quiet && ctx.writer()) std::cerr << ctx.label << " diverged: a non-finite loss at " << e.what() << "\n";
  }
  const bool diverged = !r.metrics.count("val_loss") || !std::isfinite(r.metrics["val_loss"]);
  if (diverged) r.metrics.erase("val_loss");
  r.metrics["diverged"] = diverged;
  r.params = m.num_parameters();
  if (ctx.writer()) std::filesystem::remove_all(ctx.dir + "/train");  // the checkpoints: --resume skips a finished cell
}

harness::CellResult run_cell(const InitWarmupConfig& o, const harness::Cell&, const harness::RunContext& ctx) {
  const Data d = load_data(o);
  harness::CellResult r;
  r.extra = {{"unigram_entropy", d.unigram}, {"bigram_entropy", d.bigram}};
  if (o.measure == "grad_norms") r.extra["grad_norms"] = grad_norms(o, d, ctx);
  else train(o, d, ctx, r);
  if (!ctx.quiet && ctx.writer() && r.metrics.count("val_loss"))
    std::cerr << ctx.label << " val loss " << fixed(r.metric("val_loss"), 4) << "\n";
  return r;
}

}  // namespace

// ---- the report ---------------------------------------------------------------------------------------------------
namespace {

// (a): per depth, norm and init (the order before the harness), mean ± SE over the seeds' cells; a plot per depth.
harness::Table grad_table(const Cells& cells, const std::string& out, const std::string& setting) {
  harness::Table ta;
  ta.title = "(a) Gradient norm per layer at initialisation";
  ta.columns = {"depth", "LN", "init", "|g| first layer", "|g| last layer", "first / last"};
  ta.right = {true, false, false, true, true, true};
  const InitWarmupConfig o = config_of<InitWarmupConfig>(cells.front()->cell);
  for (int depth : o.depth_list()) {
    harness::Plot p;
    p.title = "Gradient norm of each layer at init, depth " + std::to_string(depth);
    p.xlabel = "layer (1 = next to the input)", p.ylabel = "|dL/dtheta_layer|", p.logy = true, p.key = "outside right";
    for (const char* norm : {"post", "pre"})
      for (const std::string& init : o.init_list()) {
        std::vector<std::vector<double>> per_seed;
        for (auto* r : cells)
          if (r->cell.value("norm") == norm) per_seed.push_back(r->extra["grad_norms"][std::to_string(depth)][init]);
        if (per_seed.empty()) continue;
        std::vector<double> first, last, ratio;
        for (auto& n : per_seed) first.push_back(n.front()), last.push_back(n.back()), ratio.push_back(n.front() / n.back());
        harness::Series se{std::string(ln_name(norm == std::string("pre"))) + ", " + init_label(init), {}, {}, {}};
        for (int l = 0; l < depth; l++) {
          std::vector<double> v;
          for (const auto& n : per_seed) v.push_back(n[l]);
          const harness::MeanSE e = harness::mean_se(v);
          se.x.push_back(l + 1), se.y.push_back(e.mean), se.err.push_back(e.se);
        }
        p.series.push_back(se);
        ta.rows.push_back({std::to_string(depth), ln_name(norm == std::string("pre")), init_label(init),
                           pm(harness::mean_se(first), 4), pm(harness::mean_se(last), 4), pm(harness::mean_se(ratio), 3)});
      }
    harness::plot_lines(p, out + "/plots/grad_norms_depth" + std::to_string(depth));
  }
  size_t seeds = 0;  // the cells of one norm
  for (auto* r : cells) seeds += r->cell.value("norm") == cells.front()->cell.value("norm");
  ta.notes.push_back(
      "|g| = the 2-norm of the gradient of the " + setting + " loss with respect to all parameters of one encoder layer, "
      "at initialisation, on one fixed batch of " + std::to_string(o.batch) + " x " + std::to_string(o.seq_len) +
      " bytes of " + (o.text.empty() ? std::string("the Brown corpus") : o.text) + "; d_model " + std::to_string(o.d_model) +
      ", " + std::to_string(o.heads) + " heads, d_ff " + std::to_string(4 * o.d_model) +
      ", with BERT's head transform; mean ± SE over " + std::to_string(seeds) +
      " init seeds. first / last < 1: the layers next to the input get smaller gradients.");
  return ta;
}

// The seeds' cells of one training configuration: validation loss (mean ± SE) and stalled / diverged. A run "stalls"
// when its validation loss is no better than the unigram byte entropy minus 0.1 nats (nothing learnt from context).
void summary(const Cells& rs, double unigram, std::vector<std::string>& row) {
  std::vector<double> vals;
  int diverged = 0, stalled = 0;
  for (auto* r : rs) {
    if (r->metric("diverged") > 0) diverged++;
    else vals.push_back(r->metric("val_loss")), stalled += r->metric("val_loss") > unigram - 0.1;
  }
  row.push_back(vals.empty() ? "-" : pm(harness::mean_se(vals), 3));
  row.push_back(std::to_string(stalled) + " / " + std::to_string(diverged) + " of " + std::to_string(rs.size()));
}

// The mean training loss per curve point, mean ± SE over the seeds, up to the first point a diverged seed lacks.
harness::Series curve_series(const Cells& rs, const std::string& title) {
  harness::Series s{title, {}, {}, {}};
  for (size_t k = 0;; k++) {
    std::vector<double> v;
    for (auto* r : rs)
      if (k < r->curve.size()) v.push_back(r->curve[k].train_loss);
    if (v.empty() || v.size() < rs.size()) break;  // a seed diverged before this point: the mean would mislead
    const harness::MeanSE e = harness::mean_se(v);
    s.x.push_back(rs.front()->curve[k].step), s.y.push_back(e.mean), s.err.push_back(e.se);
  }
  return s;
}

struct Group {  // one training configuration's cells (its seeds)
  InitWarmupConfig cfg;
  Cells cells;
};

// (b)-(d): each table's rows are the groups its filter keeps, in the order `order` gives; one loss plot per table.
harness::Table loss_table(std::vector<Group> groups, const std::function<bool(const InitWarmupConfig&)>& keep,
                          const std::function<std::tuple<double, int, int, int>(const InitWarmupConfig&)>& order,
                          const std::function<std::vector<std::string>(const InitWarmupConfig&)>& label, harness::Table t,
                          harness::Plot p, double unigram, const std::string& path) {
  std::erase_if(groups, [&](const Group& g) { return !keep(g.cfg); });
  std::stable_sort(groups.begin(), groups.end(), [&](auto& a, auto& b) { return order(a.cfg) < order(b.cfg); });
  for (const Group& g : groups) {
    std::vector<std::string> row = label(g.cfg);
    summary(g.cells, unigram, row);
    t.rows.push_back(row);
    p.series.push_back(curve_series(g.cells, row[0] + ", " + row[1] + (row.size() > 4 ? ", " + row[2] : "")));
  }
  if (!t.rows.empty()) harness::plot_lines(p, path);
  return t;
}

int init_rank(const std::string& init) { return init == "0.02" ? 0 : init == "lecun" ? 1 : 2; }

harness::Table report(const std::string& out, const harness::Preset&, const std::vector<harness::CellResult>& rs) {
  Cells grads;
  std::map<std::string, Group> by_config;  // training cells by their config without the seed
  for (const harness::CellResult& r : rs) {
    if (config_of<InitWarmupConfig>(r.cell).measure == "grad_norms") {
      grads.push_back(&r);
      continue;
    }
    nlohmann::json key = r.cell.config;
    key.erase("seed"), key.erase("arm");
    Group& g = by_config[key.dump()];
    g.cfg = config_of<InitWarmupConfig>(r.cell), g.cells.push_back(&r);
  }
  std::vector<Group> groups;
  for (auto& [key, g] : by_config) groups.push_back(g);
  const InitWarmupConfig o = rs.empty() ? InitWarmupConfig{} : config_of<InitWarmupConfig>(rs.front().cell);
  const std::string objective = o.objective == "mlm" ? "masked-byte (15% [MASK])" : "next-byte (causal)";
  std::vector<harness::Table> tables;
  if (!grads.empty()) tables.push_back(grad_table(grads, out, objective));
  if (!groups.empty()) {
    const InitWarmupConfig& c = groups.front().cfg;
    const double unigram = groups.front().cells.front()->extra["unigram_entropy"];
    const double bigram = groups.front().cells.front()->extra["bigram_entropy"];
    size_t seeds = 0;
    for (const Group& g : groups) seeds = std::max(seeds, g.cells.size());
    const std::string note =
        "validation loss: " + objective + " cross-entropy (nats per predicted byte) on " + std::to_string(c.eval_batches) +
        " fixed held-out batches (the last 10% of the text) after the last step, mean ± SE over " + std::to_string(seeds) +
        " seeds (seed = init and data order; every configuration sees the same batches). stalled: validation loss above "
        "the unigram byte entropy " + fixed(unigram, 3) + " - 0.1 nats (nothing learnt from context; for reference the "
        "bigram entropy H(next | current byte) of the training text is " + fixed(bigram, 3) + "); diverged: a non-finite "
        "loss. Settings: depth " + std::to_string(c.depth) + ", d_model " + std::to_string(c.d_model) + ", " +
        std::to_string(c.steps) + " steps of " + std::to_string(c.batch) + " x " + std::to_string(c.seq_len) +
        " bytes, AdamW, warmup " + std::to_string(c.warmup) + " steps (linear, then constant) or none.";
    auto plot = [&](const std::string& title) {
      harness::Plot p;
      p.title = title, p.xlabel = "step", p.key = "top right";
      p.ylabel = "training loss (nats, mean of " + std::to_string(c.eval_every) + " steps)";
      return p;
    };
    const double lr = c.lr;  // (c) and (d): lr_factor 1
    auto ln = [](const InitWarmupConfig& g) { return std::string(ln_name(g.norm == "pre")); };
    auto pre = [](const InitWarmupConfig& g) { return (int)(g.norm == "pre"); };
    harness::Table tb, tc, td;
    tb.title = "(b) Warmup: post-LN vs pre-LN, init N(0, 0.02²), head transform";
    tb.columns = {"LN", "lr", "warmup", "validation loss (mean ± SE)", "stalled / diverged"};
    tb.right = {false, true, false, true, true};
    tc.title = "(c) Init std after a fixed budget (lr " + fixed(lr, 4) + " with warmup, head transform)";
    tc.columns = {"LN", "init", "validation loss (mean ± SE)", "stalled / diverged"};
    tc.right = {false, false, true, true};
    td.title = "(d) The output head: BERT's dense + gelu + LN transform before the tied projection, or none (init "
               "N(0, 0.02²), lr " + fixed(lr, 4) + " with warmup)";
    td.columns = {"LN", "head", "validation loss (mean ± SE)", "stalled / diverged"};
    td.right = {false, false, true, true};
    for (harness::Table* t : {&tb, &tc, &td}) t->notes.push_back(note);
    const std::string depth = std::to_string(c.depth);
    tables.push_back(loss_table(
        groups, [](auto& g) { return g.init == "0.02" && g.head_transform; },
        [&](auto& g) { return std::tuple{g.lr * g.lr_factor, pre(g), (int)(g.schedule != "warmup"), 0}; },
        [&](auto& g) {
          return std::vector<std::string>{ln(g), fixed(g.lr * g.lr_factor, 4),
                                          g.schedule == "warmup" ? std::to_string(g.warmup) + " steps" : "none"};
        },
        tb, plot("Training loss with and without warmup (depth " + depth + ")"), unigram, out + "/plots/warmup_loss"));
    tables.push_back(loss_table(
        groups, [](auto& g) { return g.schedule == "warmup" && g.lr_factor == 1 && g.head_transform; },
        [&](auto& g) { return std::tuple{0.0, pre(g), init_rank(g.init), 0}; },
        [&](auto& g) { return std::vector<std::string>{ln(g), init_label(g.init)}; }, tc,
        plot("Training loss by init (depth " + depth + ", warmup)"), unigram, out + "/plots/init_loss"));
    tables.push_back(loss_table(
        groups, [](auto& g) { return g.schedule == "warmup" && g.lr_factor == 1 && g.init == "0.02"; },
        [&](auto& g) { return std::tuple{0.0, pre(g), (int)!g.head_transform, 0}; },
        [&](auto& g) {
          return std::vector<std::string>{ln(g), g.head_transform ? "dense + gelu + LN, tied E" : "tied E only"};
        },
        td, plot("Training loss with and without the head transform (init N(0, 0.02²), warmup)"), unigram,
        out + "/plots/head_loss"));
  }
  std::erase_if(tables, [](const harness::Table& t) { return t.rows.empty(); });
  if (tables.empty()) return harness::Table{};
  harness::Table head = tables.front();  // the others follow as its notes, in the order before the harness
  for (size_t i = 1; i < tables.size(); i++) head.notes.push_back(tables[i].markdown());
  return head;
}

}  // namespace

// ---- the experiment and its command line --------------------------------------------------------------------------

harness::Experiment init_warmup_experiment() {
  harness::Experiment e = study_experiment(
      "init-warmup", "studies init-warmup: post-LN vs pre-LN: gradient norms at init, warmup, init std, MLM head");
  e.axes = {{{"norm", {"post", "pre"}}, "", "post (post-LN, BERT) or pre (pre-LN, GPT-2)"},
            {{"arm", {}}, "", "a section of the preset's arms_cfg (studies init-warmup list)"}};
  harness::typed_cells<InitWarmupConfig>(e, run_cell);
  e.resolve = [resolve = e.resolve](const harness::Preset& p, const std::vector<std::string>& v, const std::vector<std::string>& sets) {
    if (!p.raw.contains("arms_cfg") || !p.raw["arms_cfg"].contains(v[1])) {  // the arms are the preset's sections
      std::vector<std::string> known;
      for (auto& [arm, section] : p.raw.value("arms_cfg", nlohmann::json::object()).items()) known.push_back(arm);
      throw harness::ConfigError("unknown arm '" + v[1] + "' (" + p.path + " arms_cfg has: " + harness::join(known) + ")");
    }
    return resolve(p, v, sets);
  };
  e.report = report;
  e.cost = [](const harness::Cell& cell) {  // steps x depth; measuring the gradients at init trains nothing
    const auto c = config_of<InitWarmupConfig>(cell);
    return c.measure == "grad_norms" ? 1.0 : (double)c.steps * c.depth;
  };
  return e;
}

const LegacyFlags& init_warmup_legacy_flags() {
  auto lrs = [](const std::string& v) {  // lr a, and for two items the factor b / a of the 3x-lr arms
    const std::vector<double> lrs = harness::parse_real_list(v, "--lrs");
    if (lrs.size() > 2)
      throw harness::ConfigError("--lrs " + v + ": the preset's arms run lr and lr x lr_factor; give at most two");
    std::vector<std::string> w = {"--set", "lr=" + harness::json(lrs[0]).dump()};
    if (lrs.size() == 2) w.insert(w.end(), {"--set", "lr_factor=" + harness::json(lrs[1] / lrs[0]).dump()});
    return w;
  };
  static const LegacyFlags f = legacy_flags<InitWarmupConfig>(
      {"depths", "inits", "steps", "warmup", "eval_every", "d_model", "heads", "batch", "seq_len", "objective", "text"},
      {{"--train-depth", set_field("depth")}, {"--lrs", lrs}},
      {{"--large", {"--preset", "xl"}}, {"--no-train", {"--arms", "init-grads"}}});
  return f;
}

}  // namespace studies
