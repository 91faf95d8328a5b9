// apps/studies/cosent.cpp - see cosent.h: Spearman, the pair sets, the encoder and one training (cosent_study.cpp:
// the experiment). Shape letters: B pairs in a batch, N texts, T bytes, D d_model.
#include "cosent.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>

#include "apps/common/phase.h"
#include "autograd/ops.h"
#include "nn/losses.h"
#include "nn/models/sequence_backbone.h"
#include "optim/adam.h"
#include "optim/param_groups.h"
#include "optim/schedule.h"
#include "tasks/text_classification.h"
#include "tasks/tokenizer.h"

namespace studies {

using namespace dl;
namespace harness = dl::harness;

// ---- Spearman's rho ----------------------------------------------------------------------------------------------

std::vector<double> average_ranks(const std::vector<double>& x) {
  std::vector<size_t> order(x.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
  std::vector<double> r(x.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && x[order[j + 1]] == x[order[i]]) j++;
    const double avg = 0.5 * (double)(i + j) + 1.0;  // positions i..j hold ranks i+1..j+1
    for (size_t k = i; k <= j; k++) r[order[k]] = avg;
    i = j + 1;
  }
  return r;
}

double spearman(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2)
    throw std::invalid_argument("spearman: expected two lists of the same length >= 2, got " + std::to_string(x.size()) +
                                " and " + std::to_string(y.size()));
  const std::vector<double> rx = average_ranks(x), ry = average_ranks(y);
  const double m = 0.5 * (double)(x.size() + 1);  // the mean rank, with or without ties
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); i++) {
    sxy += (rx[i] - m) * (ry[i] - m), sxx += (rx[i] - m) * (rx[i] - m), syy += (ry[i] - m) * (ry[i] - m);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0.0;
}

// ---- the pair sets -----------------------------------------------------------------------------------------------

int pair_grade(const PairSplit& s, int grades, int a, int b) {
  if (s.doc[a] == s.doc[b]) return grades - 1;
  return s.group[a] == s.group[b] ? 1 : 0;
}

std::vector<TextPair> sample_pairs(const PairSplit& s, int grades, int n, std::mt19937_64& rng) {
  const int N = (int)s.texts.size();
  if (N < 2) throw std::runtime_error("sample_pairs: a split with " + std::to_string(N) + " texts has no pairs");
  std::map<int, std::vector<int>> by_doc;
  for (int i = 0; i < N; i++) by_doc[s.doc[i]].push_back(i);
  std::vector<TextPair> out;
  for (int k = 0; k < n; k++) {
    const int want = k % grades;
    bool found = false;
    for (int attempt = 0; attempt < 100000 && !found; attempt++) {
      const int a = (int)tasks::uniform_below(rng, N);
      int b;
      if (grades == 3 && want == 2) {  // a second passage of a's document
        const std::vector<int>& same = by_doc[s.doc[a]];
        if (same.size() < 2) continue;
        b = same[tasks::uniform_below(rng, same.size())];
      } else {
        b = (int)tasks::uniform_below(rng, N);
      }
      if (a == b || pair_grade(s, grades, a, b) != want) continue;
      out.push_back({a, b, want}), found = true;
    }
    if (!found)
      throw std::runtime_error("sample_pairs: found no pair of grade " + std::to_string(want) + " among " + std::to_string(N) +
                               " texts (too few documents or groups in this split?)");
  }
  return out;
}

namespace {

PairSplit to_split(const std::vector<tasks::LabeledText>& texts, bool passages) {
  PairSplit s;
  std::map<std::string, int> doc_index;
  for (const auto& t : texts) {
    const std::string doc = passages ? t.id.substr(0, t.id.find('@')) : t.id;  // brown ids: "ca01@384"
    auto it = doc_index.emplace(doc, (int)doc_index.size()).first;
    s.texts.push_back(t.text), s.ids.push_back(t.id), s.doc.push_back(it->second);
    s.group.push_back(passages ? t.group : t.label);
  }
  return s;
}

}  // namespace

PairTask make_pair_task(const std::string& name, const PairTaskConfig& c) {
  PairTask t;
  t.name = name;
  tasks::TextSplits sp;
  if (name == "brown") {
    tasks::DownstreamConfig dc;
    dc.seed = c.seed, dc.chunk_len = c.chunk_len, dc.data_dir = c.data_dir;
    sp = tasks::brown_genre_texts(dc);  // split by document (stratified by the 5 classes), then cut into passages
    t.grades = 3;
  } else if (name == "sentiment") {
    std::vector<tasks::LabeledText> all = tasks::sentiment_sentences(c.data_dir), kept;
    std::set<std::string> seen;  // the same sentence twice would put one text on both sides of the split
    for (auto& x : all)
      if (seen.insert(x.text).second) kept.push_back(x);
    sp = tasks::split_by_document(std::move(kept), 0.1, 0.1, c.seed);
    t.grades = 2;
  } else {
    throw std::invalid_argument("cosent: unknown pair task '" + name + "' (brown, sentiment)");
  }
  const bool passages = name == "brown";
  t.train = to_split(sp.train, passages), t.val = to_split(sp.val, passages), t.test = to_split(sp.test, passages);
  std::mt19937_64 rng(c.seed * 1000003 + 17);
  t.val_pairs = sample_pairs(t.val, t.grades, c.val_pairs, rng);
  t.test_pairs = sample_pairs(t.test, t.grades, c.test_pairs, rng);
  // The validation curve is measured often: keep only the val texts that its pairs use (the test split stays
  // whole, as the retrieval demo searches all of it).
  PairSplit used;
  std::map<int, int> index;
  for (auto& p : t.val_pairs)
    for (int* i : {&p.a, &p.b}) {
      auto [it, fresh] = index.emplace(*i, (int)used.texts.size());
      if (fresh)
        used.texts.push_back(t.val.texts[*i]), used.ids.push_back(t.val.ids[*i]), used.doc.push_back(t.val.doc[*i]),
            used.group.push_back(t.val.group[*i]);
      *i = it->second;
    }
  t.val = std::move(used);
  return t;
}

void tokenize_task(PairTask& t, const std::string& tokenizer, int merges, int max_len) {
  std::function<std::vector<int32_t>(const std::string&)> encode;
  tasks::ByteTokenizer bytes;
  tasks::BpeTokenizer bpe;
  if (tokenizer == "bytes") {
    encode = [&](const std::string& s) { return bytes.encode(s); }, t.vocab = bytes.vocab_size();
  } else if (tokenizer == "bpe") {
    std::string text;
    for (auto& x : t.train.texts) text += x + "\n";
    bpe = tasks::BpeTokenizer::train(text, merges);
    encode = [&](const std::string& s) { return bpe.encode(s); }, t.vocab = bpe.vocab_size();
  } else {
    throw std::invalid_argument("cosent: unknown tokenizer '" + tokenizer + "' (bpe, bytes)");
  }
  for (PairSplit* s : {&t.train, &t.val, &t.test}) {
    s->tokens.clear();
    for (auto& x : s->texts) {
      std::vector<int32_t> ids = encode(x);
      if ((int)ids.size() > max_len) ids.resize(max_len);
      if (ids.empty()) ids.push_back(tasks::special_ids::unk);  // an empty text is one unknown token
      s->tokens.push_back(std::move(ids));
    }
  }
}

// ---- the encoder -------------------------------------------------------------------------------------------------

namespace {

// The framework's sequence backbone (nn/models/sequence_backbone.h: pre-norm LayerNorm blocks of the registry layer, no
// dropout, a final LayerNorm); a sentence is the masked mean of its last states.
struct SentenceEncoder : nn::SequenceBackbone {
  static nn::SequenceBackboneOptions options(const CosentConfig& o, int vocab) {
    nn::SequenceBackboneOptions b;
    b.vocab = vocab, b.d_model = o.d_model, b.max_len = o.max_len, b.layers = o.layers, b.block.ffn_hidden = 2 * o.d_model;
    return b;
  }
  SentenceEncoder(const CosentConfig& o, int vocab, int grades, bool with_head, Generator& g)
      : SequenceBackbone(options(o, vocab), nn::registry_mixer(o.layer, {0.0, /*causal=*/false, o.max_len}), g) {
    if (with_head) head = register_module("head", std::make_shared<nn::Linear>(3 * o.d_model, grades, g));
  }
  std::string type_name() const override { return "SentenceEncoder"; }

  // token lists (each non-empty) -> u (N, D): the masked mean over the tokens of the last layer's normalised states.
  Var forward(const std::vector<const std::vector<int32_t>*>& texts) {
    const int64_t N = (int64_t)texts.size();
    int64_t T = 1;
    for (auto* s : texts) T = std::max<int64_t>(T, (int64_t)s->size());
    Tensor tok = zeros({N, T}, DType::i64), mask = zeros({N, T});  // padding: id 0, mask 0
    for (int64_t i = 0; i < N; i++)
      for (size_t t = 0; t < texts[i]->size(); t++)
        tok.data<int64_t>()[i * T + t] = (*texts[i])[t], mask.data<float>()[i * T + t] = 1;
    return pool(encode(tok, mask), mask);  // (N, D)
  }

  std::shared_ptr<nn::Linear> head;  // the softmax loss only
};

// cos(u_i, v_i) for rows of (B, D) -> (B)
Var row_cosine(const Var& u, const Var& v) {
  return div(sum(mul(u, v), {1}), sqrt(add_scalar(mul(sum(mul(u, u), {1}), sum(mul(v, v), {1})), 1e-12)));
}

// Unit-length embeddings of every text of a split, as rows of a plain matrix (N x D, row-major).
std::vector<float> embed_split(SentenceEncoder& m, const PairSplit& s, int64_t& D) {
  NoGradGuard ng;
  m.eval();
  std::vector<float> E;
  const size_t chunk = 128;
  for (size_t i = 0; i < s.texts.size(); i += chunk) {
    std::vector<const std::vector<int32_t>*> batch;
    for (size_t j = i; j < std::min(s.texts.size(), i + chunk); j++) batch.push_back(&s.tokens[j]);
    Tensor u = m.forward(batch).data().contiguous();
    D = u.size(1);
    for (int64_t r = 0; r < u.size(0); r++) {
      const float* p = u.data<float>() + r * D;
      double n2 = 0;
      for (int64_t k = 0; k < D; k++) n2 += (double)p[k] * p[k];
      const double inv = 1.0 / std::sqrt(n2 + 1e-24);
      for (int64_t k = 0; k < D; k++) E.push_back((float)(p[k] * inv));
    }
  }
  m.train();
  return E;
}

double dot(const float* a, const float* b, int64_t D) {
  double s = 0;
  for (int64_t k = 0; k < D; k++) s += (double)a[k] * b[k];
  return s;
}

double pairs_spearman(const std::vector<float>& E, int64_t D, const std::vector<TextPair>& pairs, double* cos_sd = nullptr) {
  std::vector<double> c, y;
  for (const auto& p : pairs) c.push_back(dot(&E[p.a * D], &E[p.b * D], D)), y.push_back(p.grade);
  if (cos_sd) {  // how spread out the cosines are: a collapsed encoder has every cosine near 1
    double m = 0, v = 0;
    for (double x : c) m += x / c.size();
    for (double x : c) v += (x - m) * (x - m) / c.size();
    *cos_sd = std::sqrt(v);
  }
  return spearman(c, y);
}

// Every query against all other texts of the split; relevant = the top grade. The rank of the first relevant
// text is 1 + the number of irrelevant texts that score above the best relevant one.
void retrieval(const PairTask& t, const std::vector<float>& E, int64_t D, int queries, uint64_t seed, TrainResult& r,
               bool want_examples) {
  const PairSplit& s = t.test;
  const int N = (int)s.texts.size();
  std::vector<int> q(N);
  std::iota(q.begin(), q.end(), 0);
  std::mt19937_64 rng(seed * 7919 + 5);  // the same queries for every training
  tasks::seeded_shuffle(q, rng);
  int used = 0;
  double r1 = 0, r5 = 0, mrr = 0;
  auto snippet = [](const std::string& x) {
    std::string o = x.substr(0, 70);
    std::replace(o.begin(), o.end(), '\n', ' ');
    return o + (x.size() > 70 ? "..." : "");
  };
  for (int qi = 0; qi < N && used < queries; qi++) {
    const int a = q[qi];
    double best_rel = -2;
    int top = -1;
    std::vector<double> sc(N);
    for (int b = 0; b < N; b++) {
      if (b == a) continue;
      sc[b] = dot(&E[a * D], &E[b * D], D);
      if (top < 0 || sc[b] > sc[top]) top = b;
      if (pair_grade(s, t.grades, a, b) == t.grades - 1) best_rel = std::max(best_rel, sc[b]);
    }
    if (best_rel < -1.5) continue;  // no relevant text for this query
    int rank = 1;
    for (int b = 0; b < N; b++)
      if (b != a && pair_grade(s, t.grades, a, b) != t.grades - 1 && sc[b] > best_rel) rank++;
    r1 += rank <= 1, r5 += rank <= 5, mrr += 1.0 / rank, used++;
    if (want_examples && r.examples.size() < 4)
      r.examples.push_back("query `" + s.ids[a] + "` \"" + snippet(s.texts[a]) + "\" -> top 1 `" + s.ids[top] + "` (" +
                           (pair_grade(s, t.grades, a, top) == t.grades - 1 ? "relevant" : "not relevant") + ", cos " +
                           std::to_string(sc[top]).substr(0, 5) + ") \"" + snippet(s.texts[top]) + "\"; first relevant at rank " +
                           std::to_string(rank));
  }
  if (used > 0) r.recall1 = r1 / used, r.recall5 = r5 / used, r.mrr = mrr / used;
}

}  // namespace

// ---- one training ------------------------------------------------------------------------------------------------

namespace {

// The training pairs of every step, as a dataset run_phase's Batcher hands out in order (no shuffling of its own):
// example k is one pair (tokens a, b; label its grade), batch s the pairs of step s. The draws are the loop's before
// the harness: each step `batch` pairs with the grades in turn, then shuffled, from rng.
tasks::Dataset pair_order(const PairTask& t, int steps, int batch, std::mt19937_64& rng) {
  tasks::Dataset d;
  d.name = t.name + "/train pairs";
  for (int step = 0; step < steps; step++) {
    std::vector<TextPair> pairs = sample_pairs(t.train, t.grades, batch, rng);
    std::shuffle(pairs.begin(), pairs.end(), rng);
    for (const TextPair& p : pairs) {
      tasks::Example e;
      e.tokens = {p.a, p.b}, e.label = p.grade;
      d.examples.push_back(std::move(e));
    }
  }
  d.vocab_size = (int32_t)t.train.texts.size(), d.num_classes = t.grades, d.max_len = 2;
  return d;
}

// One batch's loss: u then v from one forward of the 2B texts, then the arm's loss on the B pairs.
Var pair_loss(SentenceEncoder& m, const PairTask& t, const std::string& loss, const tasks::Batch& b, double lambda) {
  const int64_t B = b.batch_size;
  std::vector<const std::vector<int32_t>*> texts;
  for (int64_t i = 0; i < B; i++) texts.push_back(&t.train.tokens[b.tokens[2 * i]]);
  for (int64_t i = 0; i < B; i++) texts.push_back(&t.train.tokens[b.tokens[2 * i + 1]]);
  Var z = m.forward(texts);  // (2B, D): u then v
  Var u = narrow(z, 0, 0, B), v = narrow(z, 0, B, B);
  if (loss == "cosent") {
    Tensor y = Tensor::empty({B});
    for (int64_t i = 0; i < B; i++) y.data<float>()[i] = (float)b.labels[i];
    return nn::cosent_loss(row_cosine(u, v), y, lambda);
  }
  if (loss == "softmax") {  // SBERT: softmax(W [u, v, |u - v|]), (B, 3D) -> (B, grades)
    Tensor y = Tensor::empty({B}, DType::i64);
    for (int64_t i = 0; i < B; i++) y.data<int64_t>()[i] = b.labels[i];
    return cross_entropy(m.head->forward(cat({u, v, abs(sub(u, v))}, 1)), y);
  }
  Tensor y = Tensor::empty({B});  // cosine-MSE towards the grade scaled to [0, 1]
  for (int64_t i = 0; i < B; i++) y.data<float>()[i] = (float)b.labels[i] / (t.grades - 1);
  return mse_loss(row_cosine(u, v), Var(y));
}

}  // namespace

// AdamW (no decay on norms, biases and embeddings), warmup (a tenth of the steps) + cosine, the gradient norm clipped.
// The generator draws the initialisation; the pairs come from their own rng.
TrainResult train_encoder(const PairTask& t, const std::string& loss, double lr, int seed, const CosentConfig& c,
                          const harness::RunContext& ctx, bool want_examples) {
  if (loss != "cosent" && loss != "softmax" && loss != "cos_mse")
    throw std::invalid_argument("cosent: unknown loss '" + loss + "' (cosent, softmax, cos_mse)");
  Generator g((uint64_t)seed * 104729 + 3);
  if (t.vocab == 0) throw std::invalid_argument("train_encoder: the pair task is not tokenized (tokenize_task)");
  SentenceEncoder m(c, t.vocab, t.grades, loss == "softmax", g);
  optim::GroupingOptions go;
  go.lr = lr > 0 ? lr : 1e-3, go.weight_decay = c.weight_decay, go.no_decay_norm_bias_embed = true;
  optim::AdamW opt(optim::make_param_groups(m, go), {});
  optim::ScheduleConfig sc;
  sc.kind = "warmup_cosine", sc.warmup = std::max(1, c.steps / 10), sc.total = c.steps;
  const int steps = lr > 0 ? c.steps : 0;  // lr 0: the untrained encoder
  std::mt19937_64 rng((uint64_t)seed * 31337 + 11);
  const tasks::Dataset pairs = pair_order(t, steps, c.batch, rng);
  int64_t D = 0;
  auto val_spearman = [&] { return pairs_spearman(embed_split(m, t.val, D), D, t.val_pairs); };
  std::vector<harness::CurvePoint> curve = {{"train", 0, NAN, NAN, val_spearman(), 0}};  // accuracy: validation Spearman
  if (steps > 0) {
    tasks::BatcherConfig bc;
    bc.batch_size = c.batch, bc.shuffle = false, bc.drop_last = true;
    tasks::Batcher batches(pairs, bc);
    harness::PhaseParts parts;
    parts.model = &m, parts.opt = &opt, parts.batches = &batches, parts.schedule = optim::make_schedule(sc);
    parts.loss = [&](const tasks::Batch& b, const harness::Step&) { return pair_loss(m, t, loss, b, c.lambda); };
    parts.eval = [&] { return harness::EvalPoint{NAN, val_spearman()}; };
    if (loss == "cosent") parts.whole_batch_loss = "CoSENT ranks every pair of the batch against every other";
    harness::run_phase({"train", steps, 1, c.clip, c.eval_every, c.eval_every}, parts, ctx, curve);
  }
  TrainResult r;
  for (const harness::CurvePoint& p : curve) r.curve_steps.push_back(p.step), r.curve_val.push_back(p.accuracy);
  r.val = r.curve_val.back();
  if (r.val > 0)
    for (size_t i = 0; i < r.curve_val.size(); i++)
      if (r.curve_val[i] >= 0.9 * r.val) {
        r.steps_to_90 = (int)r.curve_steps[i];
        break;
      }
  std::vector<float> E = embed_split(m, t.test, D);
  r.test = pairs_spearman(E, D, t.test_pairs, &r.cos_sd);
  retrieval(t, E, D, c.queries, (uint64_t)c.data_seed, r, want_examples);
  return r;
}

harness::json TrainResult::to_json() const {
  return {{"val", val}, {"test", test},     {"steps_to_90", steps_to_90}, {"recall1", recall1},     {"recall5", recall5},
          {"mrr", mrr}, {"cos_sd", cos_sd}, {"curve_steps", curve_steps}, {"curve_val", curve_val}, {"examples", examples}};
}

TrainResult TrainResult::from_json(const harness::json& j) {
  TrainResult r;
  r.val = j.at("val"), r.test = j.at("test"), r.steps_to_90 = j.at("steps_to_90"), r.recall1 = j.at("recall1");
  r.recall5 = j.at("recall5"), r.mrr = j.at("mrr"), r.cos_sd = j.at("cos_sd");
  r.curve_steps = j.at("curve_steps").get<std::vector<double>>(), r.curve_val = j.at("curve_val").get<std::vector<double>>();
  r.examples = j.at("examples").get<std::vector<std::string>>();
  return r;
}

}  // namespace studies
