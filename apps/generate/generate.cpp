// apps/generate/generate.cpp - see generate.h.
#include "apps/generate/generate.h"

#include <chrono>
#include <functional>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "nn/models/gpt2.h"

namespace gen {

using namespace dl;
namespace fs = std::filesystem;

// n_head is not in a safetensors file's shapes: --heads, or the FPT cache's info.json ("architecture": {"heads"}).
static int64_t heads_of(const Options& o) {
  if (o.heads > 0) return o.heads;
  const fs::path info = fs::path(o.model).parent_path() / "info.json";
  if (fs::exists(info)) {
    std::ifstream in(info);
    nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("architecture") && j["architecture"].contains("heads") &&
        j["architecture"]["heads"].is_number_integer())
      return j["architecture"]["heads"].get<int64_t>();
    fail("generate: " + info.string() + " has no integer architecture.heads: give --heads");
  }
  fail("generate: the number of attention heads is not stored in " + o.model + " and no info.json lies beside it: give --heads");
}

Result generate(const Options& o, const std::function<void(char)>& on_token) {
  nn::check_sampling(o.sampling);
  if (o.tokens < 0) fail("generate: --tokens must be >= 0, found " + std::to_string(o.tokens));
  if (!fs::exists(o.model)) fail("generate: no model file " + o.model);
  nn::GPT2Config c = nn::gpt2_config_from_file(o.model, heads_of(o));
  if (c.vocab_size > 256)
    fail("generate: " + o.model + " has " + std::to_string(c.vocab_size) +
         " tokens; only byte-level models (at most 256) can be used: GPT-2's BPE tokenizer is not built yet");
  if (c.n_embd % c.n_head != 0)
    fail("generate: n_embd " + std::to_string(c.n_embd) + " is not divisible by " + std::to_string(c.n_head) + " heads");
  Generator init(0), draw(o.seed);
  nn::GPT2Model m(c, init);
  nn::load_gpt2_hf(m, o.model);
  m.eval();
  NoGradGuard ng;
  std::vector<int64_t> ids;
  for (unsigned char ch : o.prompt) ids.push_back(ch);
  if (ids.empty()) ids.push_back('\n');  // something to start from
  Result r;
  r.prompt_tokens = (int64_t)ids.size();
  if ((int64_t)ids.size() >= c.n_positions)
    fail("generate: the prompt has " + std::to_string(ids.size()) + " bytes; the model's context is " +
         std::to_string(c.n_positions) + " positions");
  const auto t0 = std::chrono::steady_clock::now();
  nn::StreamState s = m.start_stream(1);
  Tensor logits;  // (1, V): the next token's
  if (!o.recompute)
    for (int64_t id : ids) logits = m.step(from_vector(std::vector<int64_t>{id}, {1}), s).data();
  const std::string full = "the context is full (" + std::to_string(c.n_positions) + " positions)";
  for (int64_t n = 0; n < o.tokens; n++) {
    if (o.recompute) {
      const int64_t T = (int64_t)ids.size();
      if (T > c.n_positions) {
        r.stopped = full;
        break;
      }
      Tensor all = m.forward(from_vector(ids, {1, T})).data();  // (1, T, V): the whole prefix again
      logits = all.narrow(1, T - 1, 1).reshape({1, c.vocab_size}).contiguous();
    }
    Tensor row = logits.to(Device::cpu).to(DType::f32).contiguous();
    const int64_t next = nn::sample_token(row.data<float>(), c.vocab_size, o.sampling, draw);
    ids.push_back(next);
    r.text.push_back((char)next);
    if (on_token) on_token((char)next);
    if (!o.recompute && n + 1 < o.tokens) {
      if (s.pos >= c.n_positions) {
        r.stopped = full;
        break;
      }
      logits = m.step(from_vector(std::vector<int64_t>{next}, {1}), s).data();  // the cache grows by one position
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace gen
