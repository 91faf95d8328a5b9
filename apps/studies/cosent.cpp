// apps/studies/cosent.cpp - see cosent.h. Shape letters: B pairs in a batch, N texts, T bytes, D d_model.
#include "cosent.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>

#include "apps/common/experiment.h"
#include "apps/common/report.h"
#include "apps/common/results.h"
#include "apps/common/stats.h"
#include "autograd/ops.h"
#include "cli.h"
#include "nn/losses.h"
#include "nn/models/sequence_backbone.h"
#include "optim/adam.h"
#include "optim/clip.h"
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
    if (!found) throw std::runtime_error("sample_pairs: found no pair of grade " + std::to_string(want) + " among " +
                                         std::to_string(N) + " texts (too few documents or groups in this split?)");
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
  static nn::SequenceBackboneOptions options(const CosentOptions& o, int vocab) {
    nn::SequenceBackboneOptions b;
    b.vocab = vocab, b.d_model = o.d_model, b.max_len = o.max_len, b.layers = o.layers, b.block.ffn_hidden = 2 * o.d_model;
    return b;
  }
  SentenceEncoder(const CosentOptions& o, int vocab, int grades, bool with_head, Generator& g)
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

TrainResult train_encoder(const PairTask& t, const std::string& loss, double lr, int seed, const CosentOptions& o,
                          bool want_examples) {
  if (loss != "cosent" && loss != "softmax" && loss != "cos_mse")
    throw std::invalid_argument("cosent: unknown loss '" + loss + "' (cosent, softmax, cos_mse)");
  Generator g((uint64_t)seed * 104729 + 3);
  if (t.vocab == 0) throw std::invalid_argument("train_encoder: the pair task is not tokenized (tokenize_task)");
  SentenceEncoder m(o, t.vocab, t.grades, loss == "softmax", g);
  optim::GroupingOptions go;
  go.lr = lr > 0 ? lr : 1e-3, go.weight_decay = o.weight_decay, go.no_decay_norm_bias_embed = true;
  optim::AdamW opt(optim::make_param_groups(m, go), {});
  optim::ScheduleConfig sc;
  sc.kind = "warmup_cosine", sc.warmup = std::max(1, o.steps / 10), sc.total = o.steps;
  const optim::Schedule schedule = optim::make_schedule(sc);
  std::mt19937_64 rng((uint64_t)seed * 31337 + 11);
  TrainResult r;
  int64_t D = 0;
  auto eval_val = [&](int step) {
    std::vector<float> E = embed_split(m, t.val, D);
    r.curve_steps.push_back(step), r.curve_val.push_back(pairs_spearman(E, D, t.val_pairs));
  };
  eval_val(0);
  const int steps = lr > 0 ? o.steps : 0;  // lr 0: the untrained encoder
  for (int step = 1; step <= steps; step++) {
    std::vector<TextPair> batch = sample_pairs(t.train, t.grades, o.batch, rng);
    std::shuffle(batch.begin(), batch.end(), rng);
    const int64_t B = (int64_t)batch.size();
    std::vector<const std::vector<int32_t>*> texts;
    for (auto& p : batch) texts.push_back(&t.train.tokens[p.a]);
    for (auto& p : batch) texts.push_back(&t.train.tokens[p.b]);
    Var z = m.forward(texts);  // (2B, D): u then v
    Var u = narrow(z, 0, 0, B), v = narrow(z, 0, B, B);
    Var l;
    if (loss == "cosent") {
      Tensor y = Tensor::empty({B});
      for (int64_t i = 0; i < B; i++) y.data<float>()[i] = (float)batch[i].grade;
      l = nn::cosent_loss(row_cosine(u, v), y, o.lambda);
    } else if (loss == "softmax") {  // SBERT: softmax(W [u, v, |u - v|]), (B, 3D) -> (B, grades)
      Tensor y = Tensor::empty({B}, DType::i64);
      for (int64_t i = 0; i < B; i++) y.data<int64_t>()[i] = batch[i].grade;
      l = cross_entropy(m.head->forward(cat({u, v, abs(sub(u, v))}, 1)), y);
    } else {  // cosine-MSE towards the grade scaled to [0, 1]
      Tensor y = Tensor::empty({B});
      for (int64_t i = 0; i < B; i++) y.data<float>()[i] = (float)batch[i].grade / (t.grades - 1);
      l = mse_loss(row_cosine(u, v), Var(y));
    }
    if (!std::isfinite(l.item())) throw std::runtime_error("cosent: " + loss + " loss is not finite at step " + std::to_string(step));
    optim::apply_schedule(opt, schedule, step - 1);
    opt.zero_grad();
    l.backward();
    optim::clip_grad_norm(m.parameters(true), o.clip);
    opt.step();
    if (step % o.eval_every == 0 || step == steps) eval_val(step);
  }
  r.val = r.curve_val.back();
  if (r.val > 0)
    for (size_t i = 0; i < r.curve_val.size(); i++)
      if (r.curve_val[i] >= 0.9 * r.val) {
        r.steps_to_90 = (int)r.curve_steps[i];
        break;
      }
  std::vector<float> E = embed_split(m, t.test, D);
  r.test = pairs_spearman(E, D, t.test_pairs, &r.cos_sd);
  retrieval(t, E, D, o.queries, o.data.seed, r, want_examples);
  return r;
}

// ---- the study ---------------------------------------------------------------------------------------------------

namespace {

using dl::harness::fixed;  // apps/common/report.h
std::string lr_str(double lr) {
  std::ostringstream os;
  os << lr;
  return os.str();
}

nlohmann::json result_json(const TrainResult& r) {
  return {{"val", r.val},         {"test", r.test},       {"steps_to_90", r.steps_to_90}, {"recall1", r.recall1},
          {"recall5", r.recall5}, {"mrr", r.mrr},         {"cos_sd", r.cos_sd}, {"curve_steps", r.curve_steps}, {"curve_val", r.curve_val},
          {"examples", r.examples}};
}

}  // namespace

void run_cosent(const CosentOptions& o) {
  std::filesystem::create_directories(o.out + "/plots");
  nlohmann::json j = {{"options", {{"steps", o.steps}, {"batch", o.batch}, {"seeds", o.seeds}, {"lrs", o.lrs},
                                   {"d_model", o.d_model}, {"layers", o.layers}, {"layer", o.layer}, {"lambda", o.lambda},
                                   {"max_len", o.max_len}, {"chunk_len", o.data.chunk_len}, {"tokenizer", o.tokenizer},
                                   {"bpe_merges", o.bpe_merges}}},
                      {"tasks", nlohmann::json::object()}};
  harness::Table main_t, lr_t;
  main_t.title = "CoSENT vs SBERT softmax vs cosine-MSE: Spearman x 100 of cos(u, v) against the grade";
  main_t.columns = {"pairs", "loss", "lr", "seeds", "val Spearman", "test Spearman", "steps to 90%", "R@1 (%)", "R@5 (%)", "MRR x 100", "sd of test cos"};
  main_t.right = {false, false, true, true, true, true, true, true, true, true, true};
  lr_t.title = "Learning rates tried (seed 0, validation Spearman x 100 after the full budget)";
  lr_t.columns = {"pairs", "loss", "lr", "val Spearman", "chosen"};
  lr_t.right = {false, false, true, true, false};
  std::vector<std::string> examples_md;
  for (const std::string& task : o.tasks) {
    const auto t0 = std::chrono::steady_clock::now();
    PairTask t = make_pair_task(task, o.data);
    tokenize_task(t, o.tokenizer, o.bpe_merges, o.max_len);
    std::cerr << "[cosent] " << task << ": " << t.train.texts.size() << " / " << t.val.texts.size() << " / "
              << t.test.texts.size() << " texts (train / val / test), " << t.val_pairs.size() << " val and "
              << t.test_pairs.size() << " test pairs\n";
    nlohmann::json& jt = j["tasks"][task];
    jt["texts"] = {t.train.texts.size(), t.val.texts.size(), t.test.texts.size()};
    harness::Plot p;
    p.title = task + ": validation Spearman of cos(u, v) vs step (mean ± SE over seeds)";
    p.xlabel = "step", p.ylabel = "Spearman", p.key = "bottom right";
    auto row = [&](const std::string& loss, const std::string& lr, const std::vector<TrainResult>& rs) {
      std::vector<double> val, test, s90, r1, r5, mrr, sd;
      for (auto& r : rs) {
        val.push_back(r.val), test.push_back(r.test), r1.push_back(r.recall1), r5.push_back(r.recall5), mrr.push_back(r.mrr);
        sd.push_back(r.cos_sd);
        if (r.steps_to_90 >= 0) s90.push_back(r.steps_to_90);
      }
      main_t.rows.push_back({task, loss, lr, std::to_string(rs.size()), harness::format_mean_se(harness::mean_se(val)),
                             harness::format_mean_se(harness::mean_se(test)),
                             s90.size() == rs.size() && lr != "0" ? harness::format_mean_se(harness::mean_se(s90), 1, 0) : "-",
                             harness::format_mean_se(harness::mean_se(r1)), harness::format_mean_se(harness::mean_se(r5)),
                             harness::format_mean_se(harness::mean_se(mrr)), harness::format_mean_se(harness::mean_se(sd), 1, 3)});
    };
    std::vector<TrainResult> untrained;
    for (int s = 0; s < o.seeds; s++) untrained.push_back(train_encoder(t, "cosent", 0, s, o));
    row("untrained", "0", untrained);
    for (auto& r : untrained) jt["untrained"].push_back(result_json(r));
    std::map<std::string, std::vector<double>> test_by_loss;
    for (const std::string& loss : o.losses) {
      std::vector<TrainResult> tried;
      size_t best = 0;
      for (size_t k = 0; k < o.lrs.size(); k++) {
        tried.push_back(train_encoder(t, loss, o.lrs[k], 0, o, true));
        std::cerr << "[cosent] " << task << " " << loss << " lr " << o.lrs[k] << " seed 0: val " << fixed(tried.back().val, 3)
                  << "\n";
        if (tried[k].val > tried[best].val) best = k;
        jt["lr_search"][loss].push_back({{"lr", o.lrs[k]}, {"val", tried[k].val}});
      }
      for (size_t k = 0; k < o.lrs.size(); k++)
        lr_t.rows.push_back({task, loss, lr_str(o.lrs[k]), fixed(100 * tried[k].val, 1), k == best ? "yes" : ""});
      std::vector<TrainResult> rs = {tried[best]};  // seed 0 at the chosen lr is the search's own run
      for (int s = 1; s < o.seeds; s++) {
        rs.push_back(train_encoder(t, loss, o.lrs[best], s, o));
        std::cerr << "[cosent] " << task << " " << loss << " lr " << o.lrs[best] << " seed " << s << ": val "
                  << fixed(rs.back().val, 3) << " test " << fixed(rs.back().test, 3) << "\n";
      }
      row(loss, lr_str(o.lrs[best]), rs);
      jt["chosen_lr"][loss] = o.lrs[best];
      for (auto& r : rs) jt["runs"][loss].push_back(result_json(r)), test_by_loss[loss].push_back(r.test);
      harness::Series curve;
      curve.title = loss + " (lr " + lr_str(o.lrs[best]) + ")";
      curve.x = rs[0].curve_steps;
      for (size_t i = 0; i < curve.x.size(); i++) {
        std::vector<double> at;
        for (auto& r : rs) at.push_back(r.curve_val[i]);
        harness::MeanSE e = harness::mean_se(at);
        curve.y.push_back(e.mean), curve.err.push_back(e.se);
      }
      p.series.push_back(curve);
      if (!rs[0].examples.empty()) {
        examples_md.push_back("**" + task + ", " + loss + " (seed 0)**\n");
        for (auto& e : rs[0].examples) examples_md.push_back("- " + e + "\n");
        examples_md.push_back("\n");
      }
    }
    for (const std::string& other : o.losses)  // paired over seeds: the same data, seeds and budget
      if (other != "cosent" && test_by_loss.count("cosent") && o.seeds >= 2) {
        harness::MeanSE d = harness::paired_difference(test_by_loss[other], test_by_loss["cosent"], 0);
        main_t.rows.push_back({task, "cosent - " + other, "", std::to_string(o.seeds), "",
                               harness::format_mean_se(d, 100, 1, true), "", "", "", "", ""});
        jt["cosent_minus"][other] = {{"mean", d.mean}, {"se", d.se}};
      }
    harness::plot_lines(p, o.out + "/plots/" + task + "_spearman_vs_step");
    std::cerr << "[cosent] " << task << " done in "
              << fixed(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0) << " s\n";
  }
  main_t.notes.push_back(
      "Spearman x 100 between cos(u, v) and the gold grade on the held-out pairs, mean ± standard error over seeds "
      "(a seed draws the initialisation and the training pairs; the split and the val/test pairs are fixed). Each loss "
      "had the same budget: " + std::to_string(o.steps) + " steps of " + std::to_string(o.batch) +
      " pairs, AdamW, warmup + cosine schedule; its lr was chosen on the validation Spearman of seed 0 (table below). "
      "softmax: SBERT's classifier on [u, v, |u - v|], evaluated by cos(u, v) with the classifier dropped. "
      "Steps to 90%: the first evaluation step (every " + std::to_string(o.eval_every) +
      ") at which the validation Spearman reaches 90% of its final value. Retrieval: each query is a test text, ranked "
      "against all other test texts by cosine; relevant = the same document (brown) or the same polarity (sentiment). "
      "'cosent - X': the paired per-seed difference of test Spearman. sd of test cos: the standard deviation of "
      "cos(u, v) over the test pairs (near 0: the encoder maps every text to nearly the same direction).");
  main_t.notes.push_back(lr_t.markdown());
  if (!examples_md.empty()) {
    std::string ex = "## Retrieval examples\n\n";
    for (auto& e : examples_md) ex += e;
    main_t.notes.push_back(ex);
  }
  j["table"] = main_t.to_json();
  harness::write_text_atomic(o.out + "/cosent.json", j.dump(2) + "\n");
  harness::write_text_atomic(o.out + "/cosent.md", main_t.markdown());
  std::cout << main_t.markdown();
}

}  // namespace studies

// ---- the subcommand ---------------------------------------------------------------------------------------------
namespace studies {

CosentOptions cosent_preset(const std::string& name) {
  CosentOptions o;  // "default": a few minutes on 2 cores
  if (name == "large") {  // the setting of the first tables of docs/studies/cosent.md
    o.steps = 300, o.lrs = {1e-3, 3e-3, 1e-2};
  } else if (name != "default") {
    throw CLI::ValidationError("--preset", "'" + name + "' is not one of default, large");
  }
  return o;
}

void add_cosent_command(CLI::App& app) {
  auto o = std::make_shared<CosentOptions>();
  auto tasks_s = std::make_shared<std::string>(), losses_s = std::make_shared<std::string>(),
       lrs_s = std::make_shared<std::string>(), preset = std::make_shared<std::string>("default");
  auto threads = std::make_shared<int>(2);
  CLI::App* c = app.add_subcommand("cosent", "CoSENT vs SBERT softmax vs cosine-MSE for sentence encoders (Spearman)");
  c->add_option("--preset", *preset, "default (a few minutes) or large (300 steps, lrs 1e-3,3e-3,1e-2); flags win")
      ->capture_default_str();
  c->add_option("--out", o->out, "output folder")->capture_default_str();
  c->add_option("--tasks", *tasks_s, "pair sets: brown,sentiment");
  c->add_option("--losses", *losses_s, "losses: cosent,softmax,cos_mse");
  c->add_option("--lrs", *lrs_s, "learning-rate grid, chosen on validation (default 3e-3,1e-2)");
  c->add_option("--seeds", o->seeds, "seeds per loss")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--steps", o->steps, "training steps (the same for every loss)")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--batch", o->batch, "pairs per step")->capture_default_str()->check(CLI::Range(2, 4096));
  c->add_option("--eval-every", o->eval_every, "steps between validation points")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--d-model", o->d_model, "encoder width")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--layers", o->layers, "encoder blocks")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--layer", o->layer, "registry layer of each block (nn/registry.cpp)")->capture_default_str();
  c->add_option("--lambda", o->lambda, "CoSENT's scale")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--tokenizer", o->tokenizer, "bpe (trained on the train texts) or bytes")->capture_default_str()->check(CLI::IsMember({"bpe", "bytes"}));
  c->add_option("--bpe-merges", o->bpe_merges, "BPE merges")->capture_default_str()->check(CLI::Range(0, 100000));
  c->add_option("--max-len", o->max_len, "tokens kept per text")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--chunk-len", o->data.chunk_len, "brown: bytes per passage")->capture_default_str()->check(CLI::Range(16, 100000));
  c->add_option("--val-pairs", o->data.val_pairs, "validation pairs")->capture_default_str()->check(CLI::Range(4, 1000000));
  c->add_option("--test-pairs", o->data.test_pairs, "test pairs")->capture_default_str()->check(CLI::Range(4, 1000000));
  c->add_option("--queries", o->queries, "retrieval queries")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--threads", *threads, "CPU threads")->capture_default_str()->check(CLI::PositiveNumber);
  c->callback([=] {
    CosentOptions r = *o;                             // the defaults and every flag given
    const CosentOptions p = cosent_preset(*preset);  // an unknown preset fails here, naming both
    if (c->count("--steps") == 0) r.steps = p.steps;  // the preset, except where a flag was given as well
    r.lrs = lrs_s->empty() ? p.lrs : parse_reals(*lrs_s, "--lrs");
    if (!tasks_s->empty()) r.tasks = parse_names(*tasks_s, "--tasks", {"brown", "sentiment"});
    if (!losses_s->empty()) r.losses = parse_names(*losses_s, "--losses", {"cosent", "softmax", "cos_mse"});
    nn::find_layer(r.layer);  // an unknown layer fails here, naming the known ones
    harness::set_threads(*threads);
    run_cosent(r);
  });
}

}  // namespace studies
