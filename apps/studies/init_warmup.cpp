// apps/studies/init_warmup.cpp - see init_warmup.h.
#include "init_warmup.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/common/experiment.h"
#include "apps/common/report.h"
#include "apps/common/results.h"
#include "apps/common/stats.h"
#include "cli.h"
#include "nn/init.h"
#include "optim/adam.h"
#include "optim/schedule.h"
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

void init_parameters(nn::Module& m, const std::string& init, Generator& g) {
  if (init != "0.02" && init != "lecun" && init != "xavier")
    throw std::invalid_argument("init_parameters: unknown init '" + init + "' (known: 0.02, lecun, xavier)");
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

// ---- the study ----------------------------------------------------------------------------------------------------
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

Data load_data(const InitWarmupOptions& o) {
  Data d;
  std::string text = o.text_file.empty() ? tasks::brown_pretraining_text() : harness::read_text(o.text_file);
  if ((int64_t)text.size() < 20 * (o.seq_len + 1))
    throw std::invalid_argument("init-warmup: the text has " + std::to_string(text.size()) + " bytes; it needs at least " +
                                std::to_string(20 * (o.seq_len + 1)) + " for --seq-len " + std::to_string(o.seq_len));
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

ByteLmConfig model_config(const InitWarmupOptions& o, int depth, bool norm_first, const std::string& init, bool head) {
  ByteLmConfig c;
  c.d_model = o.d_model, c.heads = o.heads, c.dim_ff = 4 * o.d_model, c.max_len = o.seq_len, c.depth = depth;
  c.norm_first = norm_first, c.head_transform = head, c.init = init, c.causal = o.objective == "causal";
  return c;
}

// One training run: AdamW (lr, betas 0.9/0.999, weight decay 0.01 on every parameter), linear warmup over
// o.warmup steps then constant (or constant from step 0), no gradient clipping (clipping would hide the instability
// the study looks for). The batches depend on the seed only, so every configuration sees the same data.
struct RunResult {
  std::vector<double> curve;  // mean training loss of each eval_every-step window
  double val = NAN;           // validation loss after the last step (NaN when diverged)
  bool diverged = false;      // a non-finite loss stopped the run
};

RunResult train_run(const ByteLmConfig& c, bool warmup, double lr, int seed, const Data& d, const InitWarmupOptions& o) {
  Generator g(1000 + seed);
  ByteLm m(c, g);
  optim::AdamWOptions ao;
  ao.lr = lr;
  optim::AdamW opt(m.parameters(), ao);
  const optim::Schedule sched = warmup ? optim::linear_warmup(o.warmup) : optim::constant_schedule();
  RunResult r;
  double window = 0;
  for (int step = 0; step < o.steps; step++) {
    optim::apply_schedule(opt, sched, step);
    LmBatch b = lm_batch(d.train, o.batch, o.seq_len, o.objective, (uint64_t)seed * 1000003 + step);
    opt.zero_grad();
    Var loss = lm_loss(m, b);
    const double l = loss.item();
    if (!std::isfinite(l)) {
      r.diverged = true;
      return r;
    }
    loss.backward();
    opt.step();
    window += l;
    if ((step + 1) % o.eval_every == 0) r.curve.push_back(window / o.eval_every), window = 0;
  }
  NoGradGuard ng;
  double s = 0;
  for (const LmBatch& b : d.val_batches) s += lm_loss(m, b).item();
  r.val = s / d.val_batches.size();
  if (!std::isfinite(r.val)) r.diverged = true;
  return r;
}

}  // namespace

void run_init_warmup(const InitWarmupOptions& o) {
  for (const std::string& i : o.inits)
    if (init_label(i) == i) throw std::invalid_argument("init-warmup: unknown init '" + i + "' (known: 0.02, lecun, xavier)");
  if (o.d_model % o.heads != 0)
    throw std::invalid_argument("init-warmup: --d-model " + std::to_string(o.d_model) + " is not a multiple of --heads " +
                                std::to_string(o.heads));
  if (o.lrs.empty()) throw std::invalid_argument("init-warmup: no learning rate (--lrs)");
  if (o.warmup >= o.steps && o.train)
    throw std::invalid_argument("init-warmup: --warmup " + std::to_string(o.warmup) + " must be below --steps " +
                                std::to_string(o.steps));
  if (o.objective != "causal" && o.objective != "mlm")
    throw std::invalid_argument("init-warmup: unknown objective '" + o.objective + "' (causal, mlm)");
  std::filesystem::create_directories(o.out + "/plots");
  const Data d = load_data(o);
  const std::string objective_name = o.objective == "mlm" ? "masked-byte (15% [MASK])" : "next-byte (causal)";
  const std::string text_name = o.text_file.empty() ? "the Brown corpus" : o.text_file;
  nlohmann::json j = {{"settings",
                       {{"d_model", o.d_model}, {"heads", o.heads}, {"batch", o.batch}, {"seq_len", o.seq_len},
                        {"seeds", o.seeds}, {"train_depth", o.train_depth}, {"steps", o.steps}, {"warmup", o.warmup},
                        {"lrs", o.lrs}, {"objective", o.objective},
                        {"unigram_entropy", d.unigram}, {"bigram_entropy", d.bigram}}},
                      {"grad_norms", nlohmann::json::array()},
                      {"runs", nlohmann::json::array()}};
  std::string md;

  // (a) gradient norm of every layer at initialisation, one fixed batch, a model per seed
  harness::Table ta;
  ta.title = "(a) Gradient norm per layer at initialisation";
  ta.columns = {"depth", "LN", "init", "|g| first layer", "|g| last layer", "first / last"};
  ta.right = {true, false, false, true, true, true};
  for (int depth : o.depths) {
    harness::Plot p;
    p.title = "Gradient norm of each layer at init, depth " + std::to_string(depth);
    p.xlabel = "layer (1 = next to the input)", p.ylabel = "|dL/dtheta_layer|", p.logy = true, p.key = "outside right";
    for (bool nf : {false, true})
      for (const std::string& init : o.inits) {
        std::vector<std::vector<double>> per_seed;
        std::vector<double> first, last, ratio;
        for (int s = 0; s < o.seeds; s++) {
          Generator g(1000 + s);
          ByteLm m(model_config(o, depth, nf, init, true), g);
          per_seed.push_back(layer_grad_norms(m, d.grad_batch));
          first.push_back(per_seed.back().front()), last.push_back(per_seed.back().back());
          ratio.push_back(first.back() / last.back());
        }
        harness::Series se;
        se.title = std::string(ln_name(nf)) + ", " + init_label(init);
        nlohmann::json mean_by_layer = nlohmann::json::array(), se_by_layer = nlohmann::json::array();
        for (int l = 0; l < depth; l++) {
          std::vector<double> v;
          for (const auto& ps : per_seed) v.push_back(ps[l]);
          harness::MeanSE e = harness::mean_se(v);
          se.x.push_back(l + 1), se.y.push_back(e.mean), se.err.push_back(e.se);
          mean_by_layer.push_back(e.mean), se_by_layer.push_back(e.se);
        }
        p.series.push_back(se);
        ta.rows.push_back({std::to_string(depth), ln_name(nf), init_label(init), pm(harness::mean_se(first), 4),
                           pm(harness::mean_se(last), 4), pm(harness::mean_se(ratio), 3)});
        j["grad_norms"].push_back({{"depth", depth}, {"ln", ln_name(nf)}, {"init", init}, {"mean", mean_by_layer},
                                   {"se", se_by_layer}, {"per_seed", per_seed}});
        std::cerr << "[init-warmup] grad norms depth " << depth << " " << se.title << ": first/last "
                  << harness::mean_se(ratio).mean << "\n";
      }
    harness::plot_lines(p, o.out + "/plots/grad_norms_depth" + std::to_string(depth));
  }
  ta.notes.push_back(
      "|g| = the 2-norm of the gradient of the " + objective_name + " loss with respect to all parameters of one encoder "
      "layer, at initialisation, on one fixed batch of " + std::to_string(o.batch) + " x " + std::to_string(o.seq_len) +
      " bytes of " + text_name + "; d_model " + std::to_string(o.d_model) + ", " + std::to_string(o.heads) +
      " heads, d_ff " + std::to_string(4 * o.d_model) + ", with BERT's head transform; mean ± SE over " +
      std::to_string(o.seeds) + " init seeds. first / last < 1: the layers next to the input get smaller gradients.");
  md += ta.markdown() + "\n";

  if (o.train) {
    // (b)-(d): training runs, one cache so the cells the tables share are trained once
    std::map<std::string, std::vector<RunResult>> cache;
    auto runs = [&](bool nf, const std::string& init, bool head, bool warmup, double lr) -> const std::vector<RunResult>& {
      const std::string key = std::string(ln_name(nf)) + "|" + init + "|" + (head ? "transform" : "plain") + "|" +
                              (warmup ? "warmup" : "none") + "|lr " + fixed(lr, 4);
      auto it = cache.find(key);
      if (it != cache.end()) return it->second;
      std::vector<RunResult> rs;
      for (int s = 0; s < o.seeds; s++) {
        rs.push_back(train_run(model_config(o, o.train_depth, nf, init, head), warmup, lr, s, d, o));
        std::cerr << "[init-warmup] " << key << " seed " << s << ": val loss " << rs.back().val
                  << (rs.back().diverged ? " (diverged)" : "") << "\n";
        j["runs"].push_back({{"ln", ln_name(nf)}, {"init", init}, {"head", head ? "transform" : "plain"},
                             {"warmup", warmup}, {"lr", lr}, {"seed", s}, {"val", rs.back().diverged ? nlohmann::json() : nlohmann::json(rs.back().val)},
                             {"diverged", rs.back().diverged}, {"curve", rs.back().curve}});
      }
      return cache[key] = rs;
    };
    // A run "stalls" when its validation loss is no better than the unigram byte entropy minus 0.1 nats, i.e. it has
    // learnt (almost) nothing from the context.
    auto summary = [&](const std::vector<RunResult>& rs, std::vector<std::string>& row) {
      std::vector<double> vals;
      int diverged = 0, stalled = 0;
      for (const RunResult& r : rs) {
        if (r.diverged) diverged++;
        else vals.push_back(r.val), stalled += r.val > d.unigram - 0.1;
      }
      row.push_back(vals.empty() ? "-" : pm(harness::mean_se(vals), 3));
      row.push_back(std::to_string(stalled) + " / " + std::to_string(diverged) + " of " + std::to_string(rs.size()));
    };
    auto curve_series = [&](const std::vector<RunResult>& rs, const std::string& title) {
      harness::Series s;
      s.title = title;
      for (size_t k = 0; k < (size_t)(o.steps / o.eval_every); k++) {
        std::vector<double> v;
        for (const RunResult& r : rs)
          if (k < r.curve.size()) v.push_back(r.curve[k]);
        if (v.size() < rs.size()) break;  // a seed diverged before this window: the mean would mislead
        harness::MeanSE e = harness::mean_se(v);
        s.x.push_back((k + 1) * o.eval_every), s.y.push_back(e.mean), s.err.push_back(e.se);
      }
      return s;
    };
    auto loss_plot = [&](const std::string& title) {
      harness::Plot p;
      p.title = title, p.xlabel = "step", p.ylabel = "training loss (nats, mean of " + std::to_string(o.eval_every) + " steps)";
      p.key = "top right";
      return p;
    };
    const std::string setting = "depth " + std::to_string(o.train_depth) + ", d_model " + std::to_string(o.d_model) + ", " +
                                std::to_string(o.steps) + " steps of " + std::to_string(o.batch) + " x " +
                                std::to_string(o.seq_len) + " bytes, AdamW, warmup " +
                                std::to_string(o.warmup) + " steps (linear, then constant) or none";
    const std::string columns_note =
        "validation loss: " + objective_name + " cross-entropy (nats per predicted byte) on " + std::to_string(o.eval_batches) + " fixed held-out batches " +
        "(the last 10% of the text) after the last step, mean ± SE over " + std::to_string(o.seeds) +
        " seeds (seed = init and data order; every configuration sees the same batches). stalled: validation loss above " +
        "the unigram byte entropy " + fixed(d.unigram, 3) + " - 0.1 nats (nothing learnt from context; for reference the " +
        "bigram entropy H(next | current byte) of the training text is " + fixed(d.bigram, 3) + "); diverged: a " +
        "non-finite loss. Settings: " + setting + ".";

    harness::Table tb;
    tb.title = "(b) Warmup: post-LN vs pre-LN, init N(0, 0.02²), head transform";
    tb.columns = {"LN", "lr", "warmup", "validation loss (mean ± SE)", "stalled / diverged"};
    tb.right = {false, true, false, true, true};
    harness::Plot pb = loss_plot("Training loss with and without warmup (depth " + std::to_string(o.train_depth) + ")");
    for (double lr : o.lrs)
      for (bool nf : {false, true})
        for (bool w : {true, false}) {
          const auto& rs = runs(nf, "0.02", true, w, lr);
          std::vector<std::string> row = {ln_name(nf), fixed(lr, 4), w ? std::to_string(o.warmup) + " steps" : "none"};
          summary(rs, row);
          tb.rows.push_back(row);
          pb.series.push_back(
              curve_series(rs, std::string(ln_name(nf)) + ", lr " + fixed(lr, 4) + (w ? ", warmup" : ", no warmup")));
        }
    tb.notes.push_back(columns_note);
    harness::plot_lines(pb, o.out + "/plots/warmup_loss");
    md += tb.markdown() + "\n";

    harness::Table tc;
    tc.title = "(c) Init std after a fixed budget (lr " + fixed(o.lrs[0], 4) + " with warmup, head transform)";
    tc.columns = {"LN", "init", "validation loss (mean ± SE)", "stalled / diverged"};
    tc.right = {false, false, true, true};
    harness::Plot pc = loss_plot("Training loss by init (depth " + std::to_string(o.train_depth) + ", warmup)");
    for (bool nf : {false, true})
      for (const std::string& init : o.inits) {
        const auto& rs = runs(nf, init, true, true, o.lrs[0]);
        std::vector<std::string> row = {ln_name(nf), init_label(init)};
        summary(rs, row);
        tc.rows.push_back(row);
        pc.series.push_back(curve_series(rs, std::string(ln_name(nf)) + ", " + init_label(init)));
      }
    tc.notes.push_back(columns_note);
    harness::plot_lines(pc, o.out + "/plots/init_loss");
    md += tc.markdown() + "\n";

    harness::Table td;
    td.title = "(d) The output head: BERT's dense + gelu + LN transform before the tied projection, or none (init "
               "N(0, 0.02²), lr " + fixed(o.lrs[0], 4) + " with warmup)";
    td.columns = {"LN", "head", "validation loss (mean ± SE)", "stalled / diverged"};
    td.right = {false, false, true, true};
    harness::Plot pd = loss_plot("Training loss with and without the head transform (init N(0, 0.02²), warmup)");
    for (bool nf : {false, true})
      for (bool head : {true, false}) {
        const auto& rs = runs(nf, "0.02", head, true, o.lrs[0]);
        std::vector<std::string> row = {ln_name(nf), head ? "dense + gelu + LN, tied E" : "tied E only"};
        summary(rs, row);
        td.rows.push_back(row);
        pd.series.push_back(curve_series(rs, std::string(ln_name(nf)) + (head ? ", transform" : ", no transform")));
      }
    td.notes.push_back(columns_note);
    harness::plot_lines(pd, o.out + "/plots/head_loss");
    md += td.markdown() + "\n";
  }
  harness::write_text_atomic(o.out + "/init_warmup.json", j.dump(1) + "\n");
  harness::write_text_atomic(o.out + "/init_warmup.md", md);
  std::cout << md;
}

}  // namespace studies

// ---- the subcommand ---------------------------------------------------------------------------------------------
namespace studies {

InitWarmupOptions init_warmup_preset(const std::string& name) {
  InitWarmupOptions o;  // "default": a few minutes on 2 cores
  if (name == "large") {  // the setting of the first tables of docs/studies/init_warmup.md
    o.steps = 300, o.warmup = 60;
  } else if (name == "xl") {  // nearer the papers' widths and depths (not timed; far longer)
    o.d_model = 128, o.train_depth = 12, o.steps = 2000, o.warmup = 200, o.eval_every = 50, o.seeds = 5, o.batch = 32;
  } else if (name != "default") {
    throw CLI::ValidationError("--preset", "'" + name + "' is not one of default, large, xl");
  }
  return o;
}

void add_init_warmup_command(CLI::App& app) {
  auto o = std::make_shared<InitWarmupOptions>();
  auto preset = std::make_shared<std::string>("default");
  auto depths = std::make_shared<std::string>(), inits = std::make_shared<std::string>(), lrs = std::make_shared<std::string>();
  auto no_train = std::make_shared<bool>(false), large = std::make_shared<bool>(false);
  auto threads = std::make_shared<int>(2);
  CLI::App* c = app.add_subcommand("init-warmup", "post-LN vs pre-LN: gradient norms at init, warmup, init std, MLM head");
  c->add_option("--preset", *preset, "default (a few minutes), large (300 steps, warmup 60) or xl (as --large); flags win")
      ->capture_default_str();
  c->add_option("--out", o->out, "output folder")->capture_default_str();
  c->add_option("--seeds", o->seeds, "seeds per cell")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--depths", *depths, "depths for the gradient norms at init, e.g. 2,4,8,12,24");
  c->add_option("--inits", *inits, "inits among 0.02, lecun (N(0, 1/fan_in)), xavier");
  c->add_option("--train-depth", o->train_depth, "depth of the trained models")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--steps", o->steps, "training steps")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--warmup", o->warmup, "warmup steps (the warmup runs)")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--lrs", *lrs, "AdamW peak learning rates for the warmup runs, e.g. 1e-3,3e-3 (the first for the rest)");
  c->add_option("--eval-every", o->eval_every, "steps per point of the loss curves")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--d-model", o->d_model, "model width")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--heads", o->heads, "attention heads")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--batch", o->batch, "windows per batch")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--seq-len", o->seq_len, "bytes per window")->capture_default_str()->check(CLI::Range(2, 4096));
  c->add_option("--objective", o->objective, "causal (next byte) or mlm (15% masked bytes)")
      ->capture_default_str()
      ->check(CLI::IsMember({"causal", "mlm"}));
  c->add_option("--text", o->text_file, "a UTF-8 text file instead of the Brown corpus");
  c->add_flag("--no-train", *no_train, "only the gradient norms at init");
  c->add_flag("--large", *large, "the same as --preset xl: d_model 128, depth 12, 2000 steps (warmup 200), 5 seeds, batch 32");
  c->add_option("--threads", *threads, "CPU threads")->capture_default_str()->check(CLI::PositiveNumber);
  c->callback([=] {
    if (*large && c->count("--preset") > 0 && *preset != "xl")
      throw CLI::ValidationError("--large", "is --preset xl and cannot go with --preset " + *preset);
    const InitWarmupOptions p = init_warmup_preset(*large ? "xl" : *preset);  // an unknown preset fails here
    InitWarmupOptions r = *o;  // the defaults and every flag given; then the preset, except where a flag was given
    auto unset = [&](const char* flag) { return c->count(flag) == 0; };
    if (unset("--d-model")) r.d_model = p.d_model;
    if (unset("--train-depth")) r.train_depth = p.train_depth;
    if (unset("--steps")) r.steps = p.steps;
    if (unset("--warmup")) r.warmup = p.warmup;
    if (unset("--eval-every")) r.eval_every = p.eval_every;
    if (unset("--seeds")) r.seeds = p.seeds;
    if (unset("--batch")) r.batch = p.batch;
    if (!depths->empty()) r.depths = parse_ints(*depths, "--depths");
    if (!lrs->empty()) r.lrs = parse_reals(*lrs, "--lrs");
    if (!inits->empty()) {
      r.inits.clear();
      std::stringstream ss(*inits);
      for (std::string item; std::getline(ss, item, ',');) {
        if (init_label(item) == item) throw CLI::ValidationError("--inits", "'" + item + "' is not one of 0.02, lecun, xavier");
        r.inits.push_back(item);
      }
    }
    r.train = !*no_train;
    harness::set_threads(*threads);
    run_init_warmup(r);
  });
}

}  // namespace studies
