// apps/generate/gpt2_source.cpp - a GPT-2 safetensors file as a LanguageModel (language_model.h): bytes as tokens when
// its vocabulary has at most 256 entries, GPT-2's BPE (tasks/gpt2_bpe.h) from vocab.json + merges.txt or from Hugging
// Face's tokenizer.json (tasks/gpt2_tokenizer_json.h) otherwise.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>

#include "apps/generate/language_model.h"
#include "autograd/variable.h"  // NoGradGuard
#include "nn/models/gpt2.h"
#include "nn/onnx/check_file.h"
#include "nn/onnx/graph.h"
#include "tasks/gpt2_bpe.h"
#include "tasks/gpt2_tokenizer_json.h"
#include "tensor/safetensors.h"

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
  load_safetensors(o.model);  // a file that is no safetensors file is named as such before the missing --heads
  fail("generate: the number of attention heads is not stored in " + o.model + " and no info.json lies beside it: give --heads");
}

// The tokenizer the options name: --tokenizer-json FILE, --vocab and --merges, or --tokenizer DIR (its vocab.json and
// merges.txt, or its tokenizer.json when those two are absent); nothing when none is named.
static std::shared_ptr<tasks::Gpt2Bpe> tokenizer_of(const Options& o) {
  std::string vocab = o.vocab, merges = o.merges, json = o.tokenizer_json;
  if ((int)!o.tokenizer_dir.empty() + (int)!json.empty() + (int)!(vocab.empty() && merges.empty()) > 1)
    fail("generate: give one tokenizer: --tokenizer DIR, --tokenizer-json FILE, or --vocab and --merges");
  if (!o.tokenizer_dir.empty()) {
    const fs::path d(o.tokenizer_dir);
    if (fs::exists(d / "vocab.json") || fs::exists(d / "merges.txt") || !fs::exists(d / "tokenizer.json"))
      vocab = (d / "vocab.json").string(), merges = (d / "merges.txt").string();  // a missing one is named by the reader
    else json = (d / "tokenizer.json").string();
  }
  if (!json.empty()) return std::make_shared<tasks::Gpt2Bpe>(tasks::load_gpt2_tokenizer_json(json));
  if (vocab.empty() != merges.empty())
    fail("generate: GPT-2's tokenizer needs both files: --vocab vocab.json and --merges merges.txt");
  if (vocab.empty()) return nullptr;
  return std::make_shared<tasks::Gpt2Bpe>(tasks::Gpt2Bpe::load(vocab, merges));
}

// The GPT-2 of --model with its weights, in eval mode (--heads or info.json for n_head).
static std::shared_ptr<nn::GPT2Model> load_gpt2(const Options& o) {
  if (!fs::exists(o.model)) fail("generate: no model file " + o.model);
  nn::GPT2Config c = nn::gpt2_config_from_file(o.model, heads_of(o));
  if (c.n_embd % c.n_head != 0)
    fail("generate: n_embd " + std::to_string(c.n_embd) + " is not divisible by " + std::to_string(c.n_head) + " heads");
  Generator init(0);
  auto m = std::make_shared<nn::GPT2Model>(c, init);
  nn::load_gpt2_hf(*m, o.model);
  m->eval();
  return m;
}

LanguageModel open_gpt2(const Options& o) {
  const std::shared_ptr<nn::GPT2Model> m = load_gpt2(o);
  const nn::GPT2Config& c = m->cfg;
  const std::shared_ptr<tasks::Gpt2Bpe> bpe = tokenizer_of(o);
  if (!bpe && c.vocab_size > 256)
    fail("generate: " + o.model + " has " + std::to_string(c.vocab_size) +
         " tokens, more than bytes: give its tokenizer (--vocab vocab.json --merges merges.txt, "
         "--tokenizer-json tokenizer.json, or --tokenizer DIR)");
  if (bpe && bpe->vocab_size() != c.vocab_size)
    fail("generate: the tokenizer has " + std::to_string(bpe->vocab_size()) + " tokens and " + o.model + " has " +
         std::to_string(c.vocab_size) + "; expected the same vocabulary");
  LanguageModel lm;
  lm.name = std::string("GPT-2, ") + (bpe ? "BPE tokens" : "bytes") + ", key/value cache";
  lm.vocab = c.vocab_size, lm.context = c.n_positions;
  if (bpe) {
    for (int32_t id : bpe->encode(o.prompt)) lm.prompt.push_back(id);
    const std::optional<int32_t> eot = bpe->find("<|endoftext|>");  // 50256 in GPT-2's files
    if (eot) lm.eos = *eot;
    if (lm.prompt.empty()) lm.prompt.push_back(eot.value_or(bpe->encode("\n")[0]));  // GPT-2's start
    lm.text = [bpe](int64_t id) { return bpe->token_bytes((int32_t)id); };
  } else {
    for (unsigned char ch : o.prompt) lm.prompt.push_back(ch);
    if (lm.prompt.empty()) lm.prompt.push_back('\n');  // something to start from
    lm.text = [](int64_t id) { return std::string(1, (char)id); };
  }
  const int64_t V = c.vocab_size;
  auto s = std::make_shared<nn::StreamState>();
  lm.start = [m, s](int64_t n) { *s = m->start_stream(n); };
  lm.step = [m, s](const std::vector<int64_t>& ids) {
    return m->step(from_vector(ids, {(int64_t)ids.size()}), *s).data();  // (n, V)
  };
  lm.recompute = [m, V](const std::vector<int64_t>& ids, int64_t n) {
    const int64_t T = (int64_t)ids.size() / n;
    Tensor all = m->forward(from_vector(ids, {n, T})).data();  // (n, T, V)
    return all.narrow(1, T - 1, 1).reshape({n, V}).contiguous();
  };
  return lm;
}

// --kv-cache: the cached step (GPT2Model::export_onnx_with_past); the check file's example is a call with T / 2 positions
// in the cache (the framework's keys and values after stepping through T / 2 random ids) and T - T / 2 new ids.
static std::string export_gpt2_step(nn::GPT2Model& m, const Options& o, const ExportOptions& e, int64_t T) {
  if (T < 2) fail("generate: --kv-cache needs --length of at least 2 (the check's example: cached positions and new ones)");
  nn::onnx::Graph g("gpt2_with_past");
  m.export_onnx_with_past(g);
  g.save(e.onnx);
  const int64_t P = T / 2, B = e.batch, L = m.cfg.n_layer;
  Generator draw(o.seed);
  const Tensor ids = randint(0, m.cfg.vocab_size, {B, T}, draw);
  NoGradGuard ng;
  nn::StreamState s = m.start_stream(B);
  std::map<std::string, Tensor> in, out;
  for (int64_t t = 0; t < T; t++) {
    if (t == P)
      for (int64_t i = 0; i < L; i++)
        in["past_key_values." + std::to_string(i) + ".key"] = s.t[2 * i], in["past_key_values." + std::to_string(i) + ".value"] = s.t[2 * i + 1];
    m.step(ids.narrow(1, t, 1).reshape({B}).contiguous(), s);
  }
  in["input_ids"] = ids.narrow(1, P, T - P).contiguous();
  out["logits"] = m.forward(ids).data().narrow(1, P, T - P).contiguous();  // (B, T - P, V)
  for (int64_t i = 0; i < L; i++)
    out["present." + std::to_string(i) + ".key"] = s.t[2 * i], out["present." + std::to_string(i) + ".value"] = s.t[2 * i + 1];
  nn::onnx::write_check_file(e.onnx, in, out);
  return o.model + ": wrote " + e.onnx + " and " + nn::onnx::check_file_path(e.onnx) +
         " (the cached step: input_ids (batch, new) and past_key_values.<i>.key / .value (batch, " +
         std::to_string(m.cfg.n_head) + ", past, " + std::to_string(m.cfg.n_embd / m.cfg.n_head) + ") -> logits (batch, new, " +
         std::to_string(m.cfg.vocab_size) + ") and present.<i>.key / .value; the check file's example: " + std::to_string(P) +
         " cached, " + std::to_string(T - P) + " new)";
}

std::string export_gpt2(const Options& o, const ExportOptions& e) {
  if (o.model.empty()) fail("generate: --export-onnx exports a GPT-2 file (--model); an lra_benchmark cell exports with "
                            "`lra_benchmark export --cell DIR --onnx FILE`");
  if (e.batch < 1) fail("generate: --batch must be at least 1, found " + std::to_string(e.batch));
  const std::shared_ptr<nn::GPT2Model> m = load_gpt2(o);
  const int64_t T = e.length > 0 ? e.length : e.kv_cache ? std::min<int64_t>(8, m->cfg.n_positions) : m->cfg.n_positions;
  if (T > m->cfg.n_positions)
    fail("generate: --length " + std::to_string(T) + " is past the model's " + std::to_string(m->cfg.n_positions) + " positions");
  if (e.kv_cache) return export_gpt2_step(*m, o, e, T);
  nn::onnx::Graph g("gpt2");
  m->export_onnx(g, T);
  g.save(e.onnx);
  // the check file: a batch of random ids and the framework's logits for them (docs/onnx.md, "Checking a file")
  Generator draw(o.seed);
  const Tensor ids = randint(0, m->cfg.vocab_size, {e.batch, T}, draw);
  Tensor logits;
  {
    NoGradGuard ng;
    logits = m->forward(ids).data();
  }
  nn::onnx::write_check_file(e.onnx, {{"input_ids", ids}}, {{"logits", logits}});
  return o.model + ": wrote " + e.onnx + " and " + nn::onnx::check_file_path(e.onnx) + " (input_ids (batch, " +
         std::to_string(T) + ") -> logits (batch, " + std::to_string(T) + ", " + std::to_string(m->cfg.vocab_size) +
         "), dynamic batch)";
}

}  // namespace gen
