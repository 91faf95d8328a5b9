// apps/studies/unilm.cpp - the model of `studies unilm`, its two losses, the evaluation and one training on run_phase
// (see unilm.h; the pairs and the batches are in unilm_data.cpp, the cells and the report in unilm_study.cpp). Shape letters: N sequences in a
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

UnilmArm parse_arm(const std::string& a) {
  if (a == "joint") return {true, true, UnilmMask::prefix};
  if (a == "gen") return {true, false, UnilmMask::prefix};
  if (a == "con") return {false, true, UnilmMask::prefix};
  if (a == "gen_causal") return {true, false, UnilmMask::causal};
  if (a == "untrained") return {false, false, UnilmMask::prefix};
  throw std::invalid_argument("unilm: unknown arm '" + a + "' (untrained, joint, gen, con, gen_causal)");
}

namespace {

std::vector<UnilmPair> first(const std::vector<UnilmPair>& v, int n) {
  return std::vector<UnilmPair>(v.begin(), v.begin() + std::min(v.size(), (size_t)std::max(0, n)));
}

// The arm's loss on one batch of pairs: seq2seq on "[CLS] A [SEP] B [SEP]" and/or SimBERT's contrastive loss between
// A's vector (the pair's [CLS] under the prefix mask, else A encoded alone) and B's.
Var arm_loss(UnilmModel& m, const UnilmArm& arm, const std::vector<const UnilmPair*>& batch, double scale) {
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
    Var l = similarity_loss(u, v, scale);
    loss = loss.defined() ? add(loss, l) : l;
  }
  return loss;
}

// The validation points by step (token accuracy, recall@1), kept in a file beside the checkpoints: the phase's own
// curve (restored on resume) holds one number per point.
using ValCurve = std::map<int, std::pair<double, double>>;
ValCurve read_val_curve(const std::string& path) {
  ValCurve c;
  if (!std::filesystem::exists(path)) return c;
  for (auto& p : harness::parse_json(harness::read_text(path), path)) c[p.at(0).get<int>()] = {p.at(1), p.at(2)};
  return c;
}
void write_val_curve(const std::string& path, const ValCurve& c) {
  nlohmann::json j = nlohmann::json::array();
  for (auto& [step, v] : c) j.push_back({step, v.first, v.second});
  harness::write_text_atomic(path, j.dump() + "\n");
}

}  // namespace

UnilmRun train_unilm(const UnilmData& data, const UnilmConfig& o, const harness::RunContext& ctx, const UnilmMask* mask_override) {
  UnilmArm arm = parse_arm(o.arm);
  if (mask_override) arm.mask = *mask_override;
  const UnilmMask eval_mask = arm.mask == UnilmMask::full ? UnilmMask::prefix : arm.mask;  // decoding has no future
  const auto t0 = std::chrono::steady_clock::now();
  Generator g((uint64_t)o.seed * 7919 + 13);  // outlives the model: its attention layers keep a pointer to it
  UnilmModel m(o.model(), g);
  const std::vector<UnilmPair> val = first(data.val, o.val_pairs);
  const std::string curve_path = ctx.dir + "/val_curve.json";
  ValCurve vc = ctx.resume ? read_val_curve(curve_path) : ValCurve{};
  int done = 0;  // the steps taken: the phase evaluates after a step's update
  auto eval_val = [&] {
    UnilmEval e = evaluate_unilm(m, val, 0, eval_mask);
    vc[done] = {e.token_acc, e.recall1};
    if (ctx.writer()) write_val_curve(curve_path, vc);
    if (!ctx.quiet && ctx.writer())
      std::cerr << ctx.label << " step " << done << ": val token acc " << std::setprecision(3) << e.token_acc << ", R@1 "
                << e.recall1 << "\n";
    return e;
  };
  eval_val();  // step 0: the initialisation
  std::vector<harness::CurvePoint> curve;
  if ((arm.gen || arm.con) && o.steps > 0) {  // untrained: the initialisation only
    // The training set: the pairs of every step in the order drawn (uniform, with replacement), for a Batcher that
    // does not shuffle; a row's tokens are its "[CLS] A [SEP] B [SEP]" (checked against the vocabulary), the loss
    // reads its pair.
    std::mt19937_64 rng((uint64_t)o.seed * 104729 + 7);
    std::vector<size_t> drawn;
    tasks::Dataset train;
    train.name = "unilm/train", train.vocab_size = (int32_t)unilm_ids::vocab;
    for (int64_t i = 0; i < (int64_t)o.steps * o.batch; i++) {
      drawn.push_back(tasks::uniform_below(rng, data.train.size()));
      UnilmBatch row = pair_batch({&data.train[drawn.back()]}, UnilmMask::prefix);
      tasks::Example e;
      e.tokens.assign(row.tok.data<int64_t>(), row.tok.data<int64_t>() + row.tok.numel());
      train.max_len = std::max<int32_t>(train.max_len, (int32_t)e.tokens.size());
      train.examples.push_back(std::move(e));
    }
    tasks::Batcher batches(train, {o.batch, 0, false, true});
    optim::GroupingOptions go;
    go.lr = o.lr, go.weight_decay = o.weight_decay, go.no_decay_norm_bias_embed = true;
    optim::AdamW opt(optim::make_param_groups(m, go), {});
    optim::ScheduleConfig sc;
    sc.kind = "warmup_cosine", sc.warmup = std::max(1, o.steps / 10), sc.total = o.steps;
    harness::PhaseParts parts;
    parts.model = &m, parts.opt = &opt, parts.batches = &batches, parts.schedule = optim::make_schedule(sc);
    parts.limits = {train.vocab_size, 0, train.max_len, train.name};
    parts.loss = [&](const tasks::Batch& b, const harness::Step& st) {
      std::vector<const UnilmPair*> batch;
      for (int64_t i : b.indices) batch.push_back(&data.train[drawn[i]]);
      done = st.step + 1;
      return arm_loss(m, arm, batch, o.scale);
    };
    parts.eval = [&] { return harness::EvalPoint{std::numeric_limits<double>::quiet_NaN(), eval_val().token_acc}; };
    if (arm.con) parts.whole_batch_loss = "the contrastive loss takes the batch's other pairs as negatives";
    harness::run_phase({"train", o.steps, 1, o.clip, o.eval_every, o.checkpoint_every}, parts, ctx, curve);
  }
  UnilmRun r;
  r.curve_steps.push_back(0), r.curve_token_acc.push_back(vc.at(0).first), r.curve_recall1.push_back(vc.at(0).second);
  for (const harness::CurvePoint& p : curve) {
    const auto it = vc.find(p.step);
    if (it == vc.end()) throw std::runtime_error(curve_path + ": no validation point at step " + std::to_string(p.step));
    r.curve_steps.push_back(p.step), r.curve_token_acc.push_back(p.accuracy), r.curve_recall1.push_back(it->second.second);
  }
  r.test = evaluate_unilm(m, first(data.test, o.test_pairs), o.decode_pairs, eval_mask, 6);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace studies
