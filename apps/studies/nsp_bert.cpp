// apps/studies/nsp_bert.cpp - the data, the BERT's pretraining and the zero-shot scorer (see nsp_bert.h; the model is
// nn/models/bert.h); the study itself, its cells and its report are in nsp_bert_study.cpp.
//
// Shape letters: B batch, T padded length, C d_model, V vocabulary (261 bytes + specials), M masked positions.
#include "nsp_bert.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <set>

#include "apps/common/model_cache.h"
#include "apps/common/results.h"
#include "apps/common/signals.h"
#include "autograd/ops.h"
#include "optim/adam.h"
#include "optim/schedule.h"
#include "tasks/brown.h"
#include "tasks/english.h"
#include "tasks/objectives.h"
#include "tasks/tokenizer.h"

namespace studies {

using namespace dl;
namespace fs = std::filesystem;
namespace harness = dl::harness;
namespace ids = dl::tasks::special_ids;

constexpr int32_t kCls = ids::bos, kSep = ids::eos, kMask = ids::mask, kPad = ids::pad;

// ---- data ---------------------------------------------------------------------------------------------------------

// The last word of `s` (before its final '.') is an abbreviation or an initial, so the '.' ends no sentence.
static bool ends_with_abbreviation(const std::string& s) {
  static const std::set<std::string> abbr = {"Mr", "Mrs", "Ms", "Dr", "St", "Jr", "Sr", "Mt", "Co", "Inc", "Ltd", "vs",
                                             "No", "Gen", "Gov", "Sen", "Rep", "Rev", "Prof", "Lt", "Col", "Capt", "Sgt",
                                             "etc", "Fig", "Vol", "Ave", "Jan", "Feb", "Aug", "Sept", "Oct", "Nov", "Dec"};
  size_t end = s.size() - 1, begin = s.find_last_of(" (\"'", end);
  begin = begin == std::string::npos ? 0 : begin + 1;
  const std::string w = s.substr(begin, end - begin);
  return w.size() == 1 || abbr.count(w) || w.find('.') != std::string::npos;  // "J.", "Mr.", "U.S."
}

std::vector<std::string> split_sentences(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    while (!cur.empty() && cur.back() == ' ') cur.pop_back();
    if (cur.size() >= 2) out.push_back(cur);
    cur.clear();
  };
  const size_t n = text.size();
  for (size_t i = 0; i < n; i++) {
    const char c = text[i];
    if (std::isspace((unsigned char)c)) {
      if (!cur.empty() && cur.back() != ' ') cur += ' ';
      continue;
    }
    cur += c;
    if (c != '.' && c != '!' && c != '?') continue;
    size_t j = i + 1;
    while (j < n && (text[j] == '"' || text[j] == '\'' || text[j] == ')')) cur += text[j++];
    i = j - 1;
    size_t k = j;
    bool newline = false;
    while (k < n && std::isspace((unsigned char)text[k])) newline |= text[k++] == '\n';
    if (k == j && k < n) continue;                   // "3.5", "e.g.": no space after the mark
    if (c == '.' && ends_with_abbreviation(cur.substr(0, cur.find_last_of('.') + 1))) continue;
    const unsigned char next = k < n ? (unsigned char)text[k] : 'A';
    if (newline || std::isupper(next) || std::isdigit(next) || next == '"' || next == '\'' || next == '(') flush();
  }
  flush();
  return out;
}

std::vector<SentenceDoc> sentence_documents(std::string_view text) {
  std::vector<SentenceDoc> docs;
  size_t begin = 0;
  auto add = [&](size_t end) {
    if (end > begin) {
      SentenceDoc d = split_sentences(text.substr(begin, end - begin));
      if (!d.empty()) docs.push_back(std::move(d));
    }
  };
  tasks::Lines lines(text);
  size_t at = 0;
  for (std::string_view line; lines.next(line);) {
    const size_t line_begin = at;
    at += line.size() + 1;
    if (std::all_of(line.begin(), line.end(), [](char ch) { return std::isspace((unsigned char)ch); })) {
      add(line_begin), begin = std::min(at, text.size());
    }
  }
  add(text.size());
  return docs;
}

std::pair<std::vector<SentenceDoc>, std::vector<SentenceDoc>> split_documents(std::vector<SentenceDoc> docs, double val_frac,
                                                                              uint64_t seed) {
  std::mt19937_64 rng(seed);
  tasks::seeded_shuffle(docs, rng);
  const size_t nval = std::max<size_t>(2, (size_t)std::llround(docs.size() * val_frac));
  if (docs.size() < nval + 2) throw tasks::DataError("split_documents: need at least " + std::to_string(nval + 2) + " documents");
  std::vector<SentenceDoc> val(std::make_move_iterator(docs.begin()), std::make_move_iterator(docs.begin() + nval));
  docs.erase(docs.begin(), docs.begin() + nval);
  return {std::move(docs), std::move(val)};
}

std::vector<NspPair> make_nsp_pairs(const std::vector<SentenceDoc>& docs, uint64_t seed) {
  if (docs.size() < 2) throw tasks::DataError("make_nsp_pairs: need at least 2 documents, have " + std::to_string(docs.size()));
  std::mt19937_64 rng(seed);
  std::vector<NspPair> pairs;
  for (size_t d = 0; d < docs.size(); d++)
    for (size_t i = 0; i + 1 < docs[d].size(); i++) {
      NspPair p{docs[d][i], docs[d][i + 1], 0, (int32_t)d, (int32_t)i};
      if (tasks::uniform_below(rng, 2) == 1) {  // NotNext: a sentence of another document
        size_t e = tasks::uniform_below(rng, docs.size() - 1);
        e += e >= d;
        p.b = docs[e][tasks::uniform_below(rng, docs[e].size())], p.label = 1;
      }
      pairs.push_back(std::move(p));
    }
  return pairs;
}

static void append_bytes(std::vector<int32_t>& ids, std::string_view s) {
  for (unsigned char c : s) ids.push_back(tasks::ByteTokenizer::byte_offset + c);
}

std::vector<int32_t> encode_single(std::string_view a, int max_a) {
  std::vector<int32_t> out{kCls};
  append_bytes(out, a.substr(a.size() > (size_t)max_a ? a.size() - max_a : 0));
  out.push_back(kSep);
  return out;
}

std::vector<int32_t> encode_pair(std::string_view a, std::string_view b, int max_a, int max_b) {
  std::vector<int32_t> out = encode_single(a, max_a);
  append_bytes(out, b.substr(0, max_b));
  out.push_back(kSep);
  return out;
}

BertBatch bert_batch(const std::vector<std::vector<int32_t>>& seqs) { return nn::bert_batch(seqs, kSep); }

// ---- pretraining ----------------------------------------------------------------------------------------------------

MaskedBatch mask_batch(const std::vector<std::vector<int32_t>>& seqs, const std::vector<int32_t>& nsp_labels, double p,
                       std::mt19937_64& rng) {
  std::vector<std::vector<int32_t>> inputs, targets;
  for (auto& s : seqs) {
    tasks::TokenObjective o = tasks::mask_tokens(s, p, kMask, kPad, rng);
    for (size_t t = 0; t < s.size(); t++)
      if (s[t] < ids::count) o.inputs[t] = s[t], o.targets[t] = tasks::kIgnoreIndex;  // [CLS], [SEP] stay
    inputs.push_back(std::move(o.inputs)), targets.push_back(std::move(o.targets));
  }
  MaskedBatch m;
  m.x = bert_batch(inputs);
  std::vector<int64_t> at, tg;
  for (size_t i = 0; i < targets.size(); i++)
    for (size_t t = 0; t < targets[i].size(); t++)
      if (targets[i][t] != tasks::kIgnoreIndex) at.push_back((int64_t)i * m.x.T + t), tg.push_back(targets[i][t]);
  if (at.empty() && !seqs.empty() && seqs[0].size() > 2) {  // nothing drawn: mask the first byte, so the loss is defined
    at.push_back(1), tg.push_back(seqs[0][1]);
    m.x.ids.data<int64_t>()[1] = kMask;
  }
  m.at = Tensor::empty({(int64_t)at.size()}, DType::i64), m.targets = Tensor::empty({(int64_t)tg.size()}, DType::i64);
  std::copy(at.begin(), at.end(), m.at.data<int64_t>()), std::copy(tg.begin(), tg.end(), m.targets.data<int64_t>());
  m.nsp_labels = Tensor::empty({(int64_t)nsp_labels.size()}, DType::i64);
  std::copy(nsp_labels.begin(), nsp_labels.end(), m.nsp_labels.data<int64_t>());
  return m;
}

static tasks::Dataset pair_dataset(const std::vector<NspPair>& pairs, const PretrainOptions& o, const std::string& name) {
  tasks::Dataset d;
  d.name = name, d.vocab_size = (int32_t)o.bert.vocab, d.num_classes = 2, d.max_len = o.max_a + o.max_b + 3;
  for (auto& p : pairs) {
    tasks::Example e;
    e.tokens = encode_pair(p.a, p.b, o.max_a, o.max_b), e.label = p.label;
    d.examples.push_back(std::move(e));
  }
  return d;
}

PretrainMetrics evaluate_pretraining(BertForPreTraining& m, const std::vector<NspPair>& pairs, const PretrainOptions& o,
                                     uint64_t seed) {
  if (pairs.empty()) return {};  // every metric 0 (the Batcher below refuses an empty dataset)
  NoGradGuard ng;
  const bool was_training = m.is_training();
  m.eval();
  std::mt19937_64 rng(seed);
  PretrainMetrics r;
  double mlm = 0, nsp = 0;
  std::vector<int64_t> counts(m.bert->cfg.vocab, 0);
  // each batch is checked against the model being evaluated (its embeddings, positions and NSP's 2 classes), so a
  // byte id beyond the vocabulary is named here rather than by the embedding's gather
  const tasks::Dataset d = pair_dataset(pairs, o, "nsp_val_pairs");
  const tasks::Batcher collator(d, {64, 0, false});
  const harness::BatchLimits limits{(int32_t)m.bert->cfg.vocab, 2, (int32_t)m.bert->cfg.max_len, d.name};
  for (size_t s = 0; s < pairs.size(); s += 64) {
    std::vector<int64_t> rows;
    for (size_t i = s; i < std::min(pairs.size(), s + 64); i++) rows.push_back((int64_t)i);
    harness::check_batch(collator.collate(rows), limits, "[nsp-bert] evaluation batch " + std::to_string(s / 64));
    std::vector<std::vector<int32_t>> seqs;
    std::vector<int32_t> labels;
    for (size_t i = s; i < std::min(pairs.size(), s + 64); i++)
      seqs.push_back(encode_pair(pairs[i].a, pairs[i].b, o.max_a, o.max_b)), labels.push_back(pairs[i].label);
    MaskedBatch b = mask_batch(seqs, labels, o.mask_p, rng);
    Var h = m.bert->forward(b.x);
    Var ml = m.mlm_logits(h, b.at), nl = m.nsp_logits(h);
    const int64_t M = b.at.numel(), B = b.x.B, V = ml.size(1);
    mlm += cross_entropy(ml, b.targets).item() * M, nsp += cross_entropy(nl, b.nsp_labels).item() * B;
    Tensor lm = ml.data().contiguous(), ln = nl.data().contiguous();
    for (int64_t k = 0; k < M; k++) {
      const float* row = lm.data<float>() + k * V;
      const int64_t t = b.targets.data<int64_t>()[k];
      r.mlm_accuracy += (std::max_element(row, row + V) - row) == t, counts[t]++;
    }
    for (int64_t i = 0; i < B; i++) r.nsp_accuracy += (ln.data<float>()[2 * i + 1] > ln.data<float>()[2 * i]) == (labels[i] == 1);
    r.masked += M, r.pairs += B;
  }
  r.mlm_loss = mlm / std::max<int64_t>(1, r.masked), r.nsp_loss = nsp / std::max<int64_t>(1, r.pairs);
  r.mlm_accuracy /= std::max<int64_t>(1, r.masked), r.nsp_accuracy /= std::max<int64_t>(1, r.pairs);
  r.mlm_majority = (double)*std::max_element(counts.begin(), counts.end()) / std::max<int64_t>(1, r.masked);
  m.train(was_training);
  return r;
}

nlohmann::json PretrainMetrics::to_json() const {
  return {{"mlm_loss", mlm_loss},         {"nsp_loss", nsp_loss}, {"mlm_accuracy", mlm_accuracy},
          {"nsp_accuracy", nsp_accuracy}, {"mlm_majority", mlm_majority}, {"masked", masked}, {"pairs", pairs}};
}

static void check_lengths(const PretrainOptions& o) {
  if (o.max_a < 1 || o.max_b < 1 || o.max_a + o.max_b + 3 > o.bert.max_len)
    throw std::invalid_argument("nsp-bert: max_a " + std::to_string(o.max_a) + " + max_b " + std::to_string(o.max_b) +
                                " + 3 specials must be positive and fit max_len " + std::to_string(o.bert.max_len));
}

void pretrain_bert(BertForPreTraining& m, Generator& g, const std::vector<SentenceDoc>& train_docs,
                   const std::vector<SentenceDoc>& val_docs, const PretrainOptions& o, const harness::RunContext& ctx,
                   nlohmann::json& info) {
  check_lengths(o);
  const std::vector<NspPair> train_pairs = make_nsp_pairs(train_docs, o.seed + 1);
  std::vector<NspPair> val_pairs = make_nsp_pairs(val_docs, o.seed + 2);
  if (val_pairs.size() > (size_t)o.val_pairs) val_pairs.resize(o.val_pairs);
  const tasks::Dataset train = pair_dataset(train_pairs, o, "nsp_pairs");
  {  // the metrics of the untrained model: a fresh one drawn from the same seed is the model at step 0
    Generator g0(o.seed);
    BertForPreTraining fresh(o.bert, g0);
    info["before"] = evaluate_pretraining(fresh, val_pairs, o).to_json();
  }
  optim::AdamWOptions ao;
  ao.lr = o.lr;
  optim::AdamW opt(m.parameters(true), ao);
  tasks::Batcher batches(train, {o.batch, o.seed + 3, true, true});
  harness::PhaseParts parts;
  parts.model = &m, parts.opt = &opt, parts.batches = &batches, parts.rngs = {{"dropout", &g}};
  parts.limits = {(int32_t)o.bert.vocab, 2, (int32_t)o.bert.max_len, train.name};  // the embeddings, NSP's 2 classes
  optim::ScheduleConfig sc;
  sc.kind = "warmup_cosine", sc.warmup = std::max(1, o.steps / 10), sc.total = o.steps;
  parts.schedule = optim::make_schedule(sc);
  parts.loss = [&](const tasks::Batch& b, const harness::Step& st) {
    std::vector<std::vector<int32_t>> seqs;
    for (int32_t i = 0; i < b.batch_size; i++)
      seqs.emplace_back(b.tokens.begin() + (int64_t)i * b.seq_len, b.tokens.begin() + (int64_t)i * b.seq_len + b.lengths[i]);
    std::mt19937_64 rng(o.seed * 0x9E3779B97F4A7C15ull + (uint64_t)st.step * 131 + st.micro);  // masking: a function of the step
    MaskedBatch mb = mask_batch(seqs, b.labels, o.mask_p, rng);
    Var h = m.bert->forward(mb.x);
    return cross_entropy(m.mlm_logits(h, mb.at), mb.targets) + cross_entropy(m.nsp_logits(h), mb.nsp_labels);
  };
  parts.eval = [&] {
    PretrainMetrics e = evaluate_pretraining(m, val_pairs, o);
    return harness::EvalPoint{e.mlm_loss + e.nsp_loss, e.nsp_accuracy};
  };
  std::vector<harness::CurvePoint> curve;
  const int every = std::max(1, o.steps / 5);
  harness::PhaseResult r = harness::run_phase({"pretrain", o.steps, 1, 1.0, every, every}, parts, ctx, curve);
  info["after"] = evaluate_pretraining(m, val_pairs, o).to_json();
  nlohmann::json jc = nlohmann::json::array();
  for (auto& p : curve) jc.push_back(p.to_json());
  info["curve"] = jc;
  info["train_pairs"] = train_pairs.size(), info["val_pairs"] = val_pairs.size();
  info["example_pairs"] = nlohmann::json::array();
  for (size_t i = 0; i < std::min<size_t>(6, val_pairs.size()); i++)
    info["example_pairs"].push_back({{"a", val_pairs[i].a}, {"b", val_pairs[i].b}, {"is_next", val_pairs[i].label == 0}});
  info["train_documents"] = train_docs.size(), info["val_documents"] = val_docs.size();
  info["steps_per_s_this_process"] = r.seconds > 0 ? r.steps_run / r.seconds : 0;
}

std::string pretrain_key(const PretrainOptions& o) {
  const BertConfig& c = o.bert;
  return "f" + std::to_string(tasks::fortune_file_count()) + "-L" + std::to_string(c.layers) + "-d" + std::to_string(c.d_model) +
         "-h" + std::to_string(c.heads) + "-ff" + std::to_string(c.dim_ff) + (c.norm_first ? "-preln" : "-postln") + (c.sinusoidal_positions ? "-sinpos" : "") + "-drop" +
         std::to_string(c.dropout) + "-s" + std::to_string(o.steps) + "-b" + std::to_string(o.batch) + "-lr" + std::to_string(o.lr) +
         "-a" + std::to_string(o.max_a) + "-b" + std::to_string(o.max_b) + "-T" + std::to_string(c.max_len) + "-seed" + std::to_string(o.seed);
}

namespace {
void load_cached(Pretrained& p, const nlohmann::json& info) {
  nn::LoadReport rep = p.model->load(p.path);
  if (!rep.ok()) throw nn::CheckpointError(p.path + ": " + rep.str());
  p.info = info;
}
}  // namespace

Pretrained pretrained_english_bert(const PretrainOptions& o, const std::string& cache_dir, const harness::RunContext* cell) {
  check_lengths(o);
  const std::string dir = (cache_dir.empty() ? tasks::data_cache_dir() + "/studies/nsp_bert" : cache_dir) + "/" + pretrain_key(o);
  Pretrained p;
  p.gen = std::make_shared<Generator>(o.seed);
  p.model = std::make_shared<BertForPreTraining>(o.bert, *p.gen);
  p.path = dir + "/bert.safetensors";
  harness::RunContext ctx;
  if (cell) ctx.comm = cell->comm, ctx.quiet = cell->quiet, ctx.profile = cell->profile, ctx.stop_after = cell->stop_after;
  harness::ModelCache cache(dir, ctx, false);  // --jobs workers and ranks: one builds it, the others wait, then read it
  if (cache.built()) {
    load_cached(p, cache.info());
    return p;
  }
  harness::RunContext pctx = cache.build_context("[nsp-bert pretraining]", "[nsp-bert] pretraining the BERT once");
  pctx.out = dir;
  harness::install_stop_handlers();  // Ctrl-C / SIGTERM: checkpoint after the current step, then stop
  auto t0 = std::chrono::steady_clock::now();
  tasks::EnglishCorpus corpus = tasks::english_corpus();
  auto [train_docs, val_docs] = split_documents(sentence_documents(corpus.text), 0.05, o.seed + 7);
  pretrain_bert(*p.model, *p.gen, train_docs, val_docs, o, pctx, p.info);
  p.info["corpus"] = {{"brown_documents", corpus.brown_documents}, {"fortune_files", corpus.fortune_files},
                      {"bytes", corpus.text.size()}};
  p.info["seconds_this_process"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  p.info["key"] = pretrain_key(o);
  cache.finish(p.info, [&] { p.model->save(p.path, {{"format", "pt"}, {"dl.study", "nsp_bert"}, {"dl.key", pretrain_key(o)}}); });
  return p;
}

// ---- zero-shot ------------------------------------------------------------------------------------------------------

NspLogitsFn model_nsp_logits(BertForPreTraining& m, int max_a, int max_b, int batch) {
  return [&m, max_a, max_b, batch](const std::vector<std::pair<std::string, std::string>>& pairs) {
    NoGradGuard ng;
    m.eval();
    std::vector<std::array<double, 2>> out;
    for (size_t s = 0; s < pairs.size(); s += batch) {
      std::vector<std::vector<int32_t>> seqs;
      for (size_t i = s; i < std::min(pairs.size(), s + batch); i++) seqs.push_back(encode_pair(pairs[i].first, pairs[i].second, max_a, max_b));
      Tensor l = m.nsp_logits(m.bert->forward(bert_batch(seqs))).data().contiguous();  // (B, 2)
      for (size_t i = 0; i < seqs.size(); i++) out.push_back({l.data<float>()[2 * i], l.data<float>()[2 * i + 1]});
    }
    return out;
  };
}

PromptScores score_prompts(const std::vector<std::string>& texts, const std::vector<std::vector<std::string>>& templates,
                           const NspLogitsFn& nsp) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (auto& t : texts)
    for (auto& label : templates)
      for (auto& prompt : label) pairs.emplace_back(t, prompt);
  const std::vector<std::array<double, 2>> logits = nsp(pairs);
  if (logits.size() != pairs.size())
    throw std::runtime_error("score_prompts: the NSP scorer returned " + std::to_string(logits.size()) + " rows for " +
                             std::to_string(pairs.size()) + " pairs");
  PromptScores p(texts.size());
  size_t k = 0;
  for (size_t i = 0; i < texts.size(); i++)
    for (auto& label : templates) {
      p[i].emplace_back();
      for (size_t t = 0; t < label.size(); t++, k++)
        p[i].back().push_back(1 / (1 + std::exp(logits[k][1] - logits[k][0])));  // softmax(logits)[0] = P(IsNext)
    }
  return p;
}

int zero_shot_label(const std::vector<std::vector<double>>& s, int template_index) {
  int best = 0;
  double best_score = -1;
  for (size_t l = 0; l < s.size(); l++) {
    double v = 0;
    if (template_index < 0) {
      for (double x : s[l]) v += x / s[l].size();
    } else {
      v = s[l].at(template_index);
    }
    if (v > best_score) best = (int)l, best_score = v;
  }
  return best;
}

double zero_shot_accuracy(const PromptScores& p, const std::vector<int32_t>& labels, int template_index) {
  int64_t right = 0;
  for (size_t i = 0; i < p.size(); i++) right += zero_shot_label(p[i], template_index) == labels[i];
  return p.empty() ? 0 : (double)right / p.size();
}

}  // namespace studies
