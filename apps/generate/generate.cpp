// apps/generate/generate.cpp - the sampling loop, the same for every model (see generate.h).
#include "apps/generate/generate.h"

#include <chrono>

#include "apps/generate/language_model.h"
#include "autograd/variable.h"

namespace gen {

using namespace dl;

static Tensor as_host_row(const Tensor& logits) { return logits.to(Device::cpu).to(DType::f32).contiguous(); }

Result generate(const Options& o, const std::function<void(const std::string&)>& on_text) {
  nn::check_sampling(o.sampling);
  if (o.tokens < 0) fail("generate: --tokens must be >= 0, found " + std::to_string(o.tokens));
  if (o.model.empty() == o.lra_cell.empty()) fail("generate: give one model: --model FILE (GPT-2) or --lra-cell DIR");
  NoGradGuard ng;
  LanguageModel lm = o.model.empty() ? open_lra_cell(o) : open_gpt2(o);
  std::vector<int64_t> ids = lm.prompt;
  if (lm.context > 0 && (int64_t)ids.size() >= lm.context)
    fail("generate: the prompt has " + std::to_string(ids.size()) + " tokens; the model's context is " +
         std::to_string(lm.context) + " positions");
  Generator draw(o.seed);
  Result r;
  r.prompt_tokens = (int64_t)ids.size();
  r.model = lm.name + (o.recompute ? ", recomputing the prefix" : "");
  const std::string full = "the context is full (" + std::to_string(lm.context) + " positions)";
  for (int64_t id : ids) r.prompt_text += lm.text(id);
  if (on_text) on_text(r.prompt_text);
  const auto t0 = std::chrono::steady_clock::now();
  Tensor logits;    // (V): the next token's
  int64_t fed = 0;  // positions in the streaming state
  if (!o.recompute)
    for (int64_t id : ids) logits = lm.step(id), fed++;
  for (int64_t n = 0; n < o.tokens; n++) {
    if (o.recompute) {
      if (lm.context > 0 && (int64_t)ids.size() > lm.context) {
        r.stopped = full;
        break;
      }
      logits = lm.recompute(ids);  // the whole prefix again
    }
    const Tensor row = as_host_row(logits);
    const int64_t next = nn::sample_token(row.data<float>(), lm.vocab, o.sampling, draw);
    ids.push_back(next);
    r.ids.push_back(next);
    if (o.stop_at_eos && next == lm.eos) {
      r.stopped = "the end-of-text token " + lm.text(next) + " (id " + std::to_string(next) + "; --no-stop-at-eos goes on)";
      break;
    }
    const std::string piece = lm.text(next);
    r.text += piece;
    if (on_text) on_text(piece);
    if (!o.recompute && n + 1 < o.tokens) {
      if (lm.context > 0 && fed >= lm.context) {
        r.stopped = full;
        break;
      }
      logits = lm.step(next), fed++;  // the state grows (a cache) or is updated in place (a recurrence) by one position
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace gen
