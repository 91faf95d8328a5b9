// apps/fpt/pretrain.cpp - the language and bit-memory pretrained transformers (see pretrain.h).
#include "pretrain.h"

#include <chrono>
#include <cmath>
#include <fstream>

#include "apps/common/model_cache.h"
#include "data.h"
#include "model.h"
#include "nn/models/gpt2.h"
#include "optim/adam.h"
#include "optim/schedule.h"
#include "tasks/brown.h"
#include "tasks/english.h"
#include "tensor/safetensors.h"

namespace fpt {

using namespace dl;
namespace harness = dl::harness;

std::string english_corpus(nlohmann::json* what) {
  tasks::EnglishCorpus c = tasks::english_corpus();
  if (what)
    *what = {{"brown_documents", c.brown_documents},
             {"brown_bytes", c.brown_bytes},
             {"fortune_files", c.fortune_files},
             {"fortune_bytes", c.fortune_bytes},
             {"bytes", c.text.size()}};
  return std::move(c.text);
}

// Non-overlapping windows of context + 1 bytes (inputs and next-byte targets) from a byte range.
static tasks::Dataset windows(const std::string& text, size_t begin, size_t end, int context, const std::string& name) {
  tasks::Dataset d;
  d.name = name, d.vocab_size = 256, d.max_len = context + 1;
  for (size_t at = begin; at + context + 1 <= end; at += context) {
    tasks::Example e;
    e.tokens.assign((const unsigned char*)text.data() + at, (const unsigned char*)text.data() + at + context + 1);
    d.examples.push_back(std::move(e));
  }
  return d;
}

static std::string key_of(const std::string& source, const CellConfig& c) {
  const int steps = source == "language" ? c.lm_steps : c.bitmem_steps;
  return source + (source == "language" ? "-f" + std::to_string(tasks::fortune_file_count()) : "") + "-L" +
         std::to_string(c.layers) + "-d" + std::to_string(c.d_model) + "-h" + std::to_string(c.heads) + "-s" +
         std::to_string(steps) + (source == "language" ? "-ctx" + std::to_string(c.lm_context) : "") + "-b" +
         std::to_string(c.lm_batch) + "-lr" + std::to_string(c.lm_lr) + "-drop" + std::to_string(c.dropout);
}

// Both sources train with AdamW (its default decay 0.01) at lm_lr: the peak of the LM's warmup-cosine schedule, the
// bit-memory source's constant rate. lm_lr is in the cache key, so it must be the rate the optimizer uses.
static optim::AdamWOptions source_optimizer(const CellConfig& c) {
  optim::AdamWOptions o;
  o.lr = c.lm_lr;
  return o;
}

// The byte LM's training on the harness (resumable from its checkpoints); g is the generator its dropout draws from.
static harness::PhaseResult train_language(const CellConfig& c, const harness::RunContext& ctx, nn::GPT2Model& lm, Generator& g,
                                           nlohmann::json& info) {
  nlohmann::json corpus;
  const std::string text = english_corpus(&corpus);
  const size_t split = text.size() * 95 / 100;
  tasks::Dataset train = windows(text, 0, split, c.lm_context, "english/train"),
                 val = windows(text, split, text.size(), c.lm_context, "english/val");
  optim::AdamW opt(lm.parameters(true), source_optimizer(c));
  tasks::Batcher batches(train, {c.lm_batch, 17, true, true});
  auto tokens = [](const tasks::Batch& b, int64_t from, int64_t len) {
    Tensor t = Tensor::empty({b.batch_size, len}, DType::i64);
    for (int64_t i = 0; i < b.batch_size; i++)
      for (int64_t s = 0; s < len; s++) t.data<int64_t>()[i * len + s] = b.tokens[i * b.seq_len + from + s];
    return t;
  };
  auto lm_loss = [&](const tasks::Batch& b) {
    return lm.loss(lm.forward(tokens(b, 0, b.seq_len - 1)), tokens(b, 1, b.seq_len - 1));
  };
  harness::PhaseParts parts;
  parts.model = &lm, parts.opt = &opt, parts.batches = &batches, parts.rngs = {{"dropout", &g}};
  // a window's bytes are the inputs and (shifted by one) the targets: ids in the LM's vocab (wte and the tied
  // lm_head), rows of n_positions + 1 (the inputs are all but the last byte); no labels
  parts.limits.vocab = (int32_t)lm.cfg.vocab_size, parts.limits.positions = (int32_t)lm.cfg.n_positions + 1;
  parts.limits.split = train.name;
  optim::ScheduleConfig sc;
  sc.kind = "warmup_cosine", sc.warmup = std::min(200, c.lm_steps / 10), sc.total = c.lm_steps;
  parts.schedule = optim::make_schedule(sc);
  parts.loss = [&](const tasks::Batch& b, const harness::Step&) { return lm_loss(b); };
  parts.eval = [&] {
    NoGradGuard ng;
    lm.eval();
    tasks::Batcher vb(val, {c.lm_batch, 0, false});
    double s = 0;
    const int64_t nb = std::min<int64_t>(vb.batches_per_epoch(), 16);  // the same 16 x lm_batch windows every time
    harness::BatchLimits limits = parts.limits;
    limits.split = val.name;
    for (int64_t i = 0; i < nb; i++) {
      tasks::Batch b = vb.next();
      harness::check_batch(b, limits, "[language pretraining] evaluation batch " + std::to_string(i));
      s += lm_loss(b).item();
    }
    return harness::EvalPoint{s / nb, -1};
  };
  std::vector<harness::CurvePoint> curve;
  harness::PhaseResult r =
      harness::run_phase({"lm", c.lm_steps, 1, 1.0, std::max(1, c.lm_steps / 5), std::max(1, c.lm_steps / 5)}, parts, ctx, curve);
  json jc = json::array();
  for (auto& p : curve) jc.push_back(p.to_json());
  const double val_loss = curve.empty() ? NAN : curve.back().val_loss;
  info = {{"source", "language"},
          {"corpus", corpus},
          {"train_windows", train.examples.size()},
          {"val_windows", val.examples.size()},
          {"val_loss_per_byte", val_loss},
          {"val_perplexity_per_byte", std::exp(val_loss)},
          {"curve", jc}};
  return r;
}

PretrainedInfo pretrained_transformer(const std::string& source, const CellConfig& c, const harness::RunContext& ctx,
                                      bool rebuild) {
  if (source != "language" && source != "bit_memory")
    throw ConfigError("unknown pretraining source '" + source + "' (language, bit_memory)");
  const std::string dir = tasks::data_cache_dir() + "/fpt/" + key_of(source, c);
  harness::ModelCache cache(dir, ctx, rebuild);  // --jobs workers (or runs) may want it at once: one builds it
  PretrainedInfo p{dir + "/transformer.safetensors", cache.info()};
  if (cache.built()) return p;
  const harness::RunContext pctx =
      cache.build_context("[" + source + " pretraining]", "[fpt] building the " + source + "-pretrained transformer once");
  auto t0 = std::chrono::steady_clock::now();
  Generator g(12345);
  nlohmann::json info;
  harness::PhaseResult r;
  std::map<std::string, Tensor> weights;
  if (source == "language") {
    nn::GPT2Model lm(gpt2_config(c), g);
    r = train_language(c, pctx, lm, g, info);
    for (auto& [n, v] : lm.state_dict()) weights[n] = v;  // transformer.* (lm_head is tied to wte)
  } else {
    CellConfig b = c;
    b.task = "bit_memory", b.arm = "full", b.bits = 100, b.patterns = 5, b.patch = 10, b.train_size = 20000, b.val_size = 500,
    b.test_size = 500;
    const FptTask& task = fpt_task(b);
    FptModel m(b, task, g);
    optim::AdamW opt(m.parameters(true), source_optimizer(c));
    tasks::Batcher batches(task.data.train, {c.lm_batch, 23, true, true});
    harness::PhaseParts parts;
    parts.model = &m, parts.opt = &opt, parts.batches = &batches, parts.rngs = {{"dropout", &g}};
    parts.loss = [&](const tasks::Batch& bt, const harness::Step&) { return m.loss(to_batch(task, bt)); };
    parts.eval = [&] {
      NoGradGuard ng;
      m.eval();
      tasks::Batcher vb(task.data.val, {64, 0, false});
      int64_t right = 0, n = 0;
      for (int64_t i = 0; i < vb.batches_per_epoch(); i++) right += m.correct(to_batch(task, vb.next()), &n);
      return harness::EvalPoint{NAN, (double)right / n};
    };
    std::vector<harness::CurvePoint> curve;
    r = harness::run_phase(
        {"bit_memory", c.bitmem_steps, 1, 1.0, std::max(1, c.bitmem_steps / 5), std::max(1, c.bitmem_steps / 5)}, parts, pctx,
        curve);
    json jc = json::array();
    for (auto& p : curve) jc.push_back(p.to_json());
    info = {{"source", "bit_memory"},
            {"bits", 100},
            {"patterns", 5},
            {"patch", 10},
            {"val_bit_accuracy", curve.empty() ? NAN : curve.back().accuracy},
            {"curve", jc}};
    for (auto& [n, v] : m.state_dict())
      if (n.starts_with("transformer.")) weights[n] = v;
  }
  info["steps"] = source == "language" ? c.lm_steps : c.bitmem_steps;
  info["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  info["steps_per_s"] = r.seconds > 0 ? r.steps_run / r.seconds : 0;
  info["architecture"] = {{"layers", c.layers}, {"d_model", c.d_model}, {"heads", c.heads}};
  cache.finish(info, [&] { save_safetensors(p.path, weights, {{"format", "pt"}, {"dl.fpt_source", source}}); });
  p.info = info;
  return p;
}

}  // namespace fpt
