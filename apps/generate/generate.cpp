// apps/generate/generate.cpp - the sampling loop, the same for every model (see generate.h).
#include "apps/generate/generate.h"

#include <algorithm>
#include <chrono>

#include "apps/generate/language_model.h"
#include "autograd/variable.h"

namespace gen {

using namespace dl;

static Tensor as_host_rows(const Tensor& logits, int64_t n, int64_t V) {
  return logits.to(Device::cpu).to(DType::f32).reshape({n, V}).contiguous();
}

// The samples advance together, one position a round: each round every sequence that is still going samples a token
// from its own generator (seed + i) and its own logits row; one that stopped (at the end-of-text token) is fed its last
// token again, and what comes back is not read, so each sample is what it would be alone.
Result generate(const Options& o, const std::function<void(const std::string&)>& on_text) {
  nn::check_sampling(o.sampling);
  if (o.tokens < 0) fail("generate: --tokens must be >= 0, found " + std::to_string(o.tokens));
  if (o.samples < 1) fail("generate: --samples must be >= 1, found " + std::to_string(o.samples));
  if (o.model.empty() == o.lra_cell.empty()) fail("generate: give one model: --model FILE (GPT-2) or --lra-cell DIR");
  NoGradGuard ng;
  LanguageModel lm = o.model.empty() ? open_lra_cell(o) : open_gpt2(o);
  const int64_t N = o.samples;
  const std::vector<int64_t>& prompt = lm.prompt;
  if (lm.context > 0 && (int64_t)prompt.size() >= lm.context)
    fail("generate: the prompt has " + std::to_string(prompt.size()) + " tokens; the model's context is " +
         std::to_string(lm.context) + " positions");
  std::vector<Generator> draws;
  for (int64_t i = 0; i < N; i++) draws.emplace_back(o.seed + (uint64_t)i);
  Result r;
  r.samples.resize(N);
  r.prompt_tokens = (int64_t)prompt.size();
  r.model = lm.name + (o.recompute ? ", recomputing the prefix" : "") + (N > 1 ? ", " + std::to_string(N) + " samples" : "");
  const std::string full = "the context is full (" + std::to_string(lm.context) + " positions)";
  for (int64_t id : prompt) r.prompt_text += lm.text(id);
  const bool stream = on_text && N == 1;
  if (stream) on_text(r.prompt_text);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<int64_t> last(N, prompt.back()), seqs;  // seqs: the N sequences row by row, all one length (recompute)
  for (int64_t i = 0; i < N; i++) seqs.insert(seqs.end(), prompt.begin(), prompt.end());
  std::vector<bool> going(N, true);
  Tensor logits;    // (N, V): each sequence's next token's
  int64_t fed = 0;  // positions in the streaming state
  if (!o.recompute) {
    lm.start(N);
    for (int64_t id : prompt) logits = lm.step(std::vector<int64_t>(N, id)), fed++;
  }
  auto stop_all = [&](const std::string& why) {
    for (int64_t i = 0; i < N; i++)
      if (going[i]) r.samples[i].stopped = why, going[i] = false;
  };
  for (int64_t n = 0; n < o.tokens; n++) {
    if (o.recompute) {
      const int64_t T = (int64_t)seqs.size() / N;
      if (lm.context > 0 && T > lm.context) {
        stop_all(full);
        break;
      }
      logits = lm.recompute(seqs, N);  // the whole prefixes again
    }
    const Tensor rows = as_host_rows(logits, N, lm.vocab);
    for (int64_t i = 0; i < N; i++) {
      if (!going[i]) continue;
      Sample& sm = r.samples[i];
      const int64_t next = nn::sample_token(rows.data<float>() + i * lm.vocab, lm.vocab, o.sampling, draws[i]);
      sm.ids.push_back(next), last[i] = next, r.generated++;
      if (o.stop_at_eos && next == lm.eos) {
        sm.stopped = "the end-of-text token " + lm.text(next) + " (id " + std::to_string(next) + "; --no-stop-at-eos goes on)";
        going[i] = false;
        continue;
      }
      const std::string piece = lm.text(next);
      sm.text += piece;
      if (stream) on_text(piece);
    }
    if (std::find(going.begin(), going.end(), true) == going.end() || n + 1 == o.tokens) break;
    if (o.recompute) {
      std::vector<int64_t> longer;  // each row one token longer (a stopped row repeats its last: not read)
      const int64_t T = (int64_t)seqs.size() / N;
      for (int64_t i = 0; i < N; i++) {
        longer.insert(longer.end(), seqs.begin() + i * T, seqs.begin() + (i + 1) * T);
        longer.push_back(last[i]);
      }
      seqs = std::move(longer);
    } else {
      if (lm.context > 0 && fed >= lm.context) {
        stop_all(full);
        break;
      }
      logits = lm.step(last), fed++;  // the state grows (a cache) or is updated in place (a recurrence) by one position
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.text = r.samples[0].text, r.ids = r.samples[0].ids, r.stopped = r.samples[0].stopped;
  return r;
}

}  // namespace gen
