// apps/generate/lra_source.cpp - an lra_benchmark spt-causal cell as a LanguageModel (language_model.h): the model of
// the cell's pretraining (its last checkpoint in <cell>/pretrain/, LM head included - the backbone.safetensors the
// fine-tuning loads leaves the head out), rebuilt from the config in <cell>/model.safetensors, stepping the backbone's
// stream (nn/models/sequence_backbone.h) and reading pretrain_head's logits at every position.
#include <filesystem>
#include <memory>
#include <sstream>

#include "apps/common/config.h"
#include "apps/generate/language_model.h"
#include "apps/lra_benchmark/data.h"
#include "apps/lra_benchmark/model.h"
#include "optim/checkpoint.h"
#include "tasks/listops.h"
#include "tasks/tokenizer.h"
#include "tensor/safetensors.h"

namespace gen {

using namespace dl;
namespace fs = std::filesystem;

namespace {

constexpr int32_t kByteVocab = 261;  // the byte tasks' ids: tasks/tokenizer.h's five specials, then byte + 5

// The task's tokens as text: ListOps' symbols, bytes for the byte tasks, ids otherwise (each followed by a space).
std::string token_text(const std::string& task, int32_t vocab, int64_t id) {
  if (task == "listops") {
    static const char* names[] = {"<pad>", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "[MIN", "[MAX", "[MED", "[SM", "]"};
    return (id >= 0 && id < tasks::listops_vocab::size ? names[id] : std::to_string(id)) + std::string(" ");
  }
  if (vocab == kByteVocab) {
    static const char* specials[] = {"<pad>", "<eos>", "<unk>", "<bos>", "<mask>"};
    return id < tasks::special_ids::count ? specials[id] : std::string(1, (char)(id - tasks::ByteTokenizer::byte_offset));
  }
  return std::to_string(id) + " ";
}

// --prompt in the task's tokens; empty: the first (at most 8) tokens of test example 0.
std::vector<int64_t> prompt_ids(const std::string& prompt, const lra::CellConfig& c, const tasks::TaskData& data, int32_t vocab) {
  std::vector<int32_t> ids;
  if (prompt.empty()) {
    if (data.test.examples.empty() || data.test.examples[0].tokens.empty()) fail("generate: no --prompt and no test example");
    const auto& t = data.test.examples[0].tokens;
    ids.assign(t.begin(), t.begin() + (std::ptrdiff_t)std::min<size_t>(8, t.size()));
  } else if (c.task == "listops") {
    ids = tasks::tokenize_listops(prompt, "--prompt");
  } else if (vocab == kByteVocab) {
    ids = tasks::ByteTokenizer{}.encode(prompt);
  } else {  // token ids separated by spaces
    std::istringstream in(prompt);
    for (std::string w; in >> w;) {
      size_t used = 0;
      int64_t id = -1;
      try {
        id = std::stoll(w, &used);
      } catch (const std::exception&) {
      }
      if (used != w.size() || id < 0 || id >= vocab)
        fail("generate: --prompt token \"" + w + "\": expected a token id of " + c.task + " in [0, " + std::to_string(vocab) +
             ")");
      ids.push_back((int32_t)id);
    }
  }
  return std::vector<int64_t>(ids.begin(), ids.end());
}

}  // namespace

LanguageModel open_lra_cell(const Options& o) {
  const fs::path dir(o.lra_cell);
  if (!fs::is_directory(dir)) fail("generate: --lra-cell " + o.lra_cell + ": no such folder");
  const std::string model_file = (dir / "model.safetensors").string();
  if (!fs::exists(model_file))
    fail("generate: " + model_file + " is missing: the cell's config is read from its metadata (is " + o.lra_cell +
         " a finished lra_benchmark cell?)");
  const lra::CellConfig c =
      harness::checked_config_in_metadata<lra::CellConfig>(load_safetensors(model_file).metadata, model_file, "lra_benchmark");
  if (c.regime != "spt-causal")
    fail("generate: " + c.key() + " was trained with the regime " + c.regime +
         "; generation needs an spt-causal cell (next-token pretraining with causal mixers)");
  const auto ck = optim::latest_checkpoint((dir / "pretrain").string());
  if (!ck)
    fail("generate: " + (dir / "pretrain").string() +
         " holds no checkpoint: the pretrained model with its LM head is read from it");
  const tasks::TaskData& data = lra::task_data(c);
  const lra::TaskShape shape = lra::shape_of(data);
  Generator g((uint64_t)c.seed);
  auto m = std::make_shared<lra::LraModel>(c, shape, /*causal=*/true, g);
  m->load(ck->model_path);
  m->eval();

  LanguageModel lm;
  bool constant = true;
  for (size_t i = 0; i < m->num_blocks(); i++) constant = constant && m->block(i).mixer().streams_in_constant_memory();
  lm.name = "lra_benchmark " + c.key() + " pretraining step " + std::to_string(ck->step) + ", streaming " +
            (constant ? "in constant memory per token" : "with a state that grows with the context");
  lm.vocab = shape.vocab;
  lm.context = m->options().positions == "none" ? 0 : shape.max_len;  // a positions table ends; a recurrence does not
  lm.prompt = prompt_ids(o.prompt, c, data, shape.vocab);
  if (lm.prompt.empty()) fail("generate: the prompt encodes to no tokens");
  const std::string task = c.task;
  const int32_t V = shape.vocab;
  lm.text = [task, V](int64_t id) { return token_text(task, V, id); };
  auto s = std::make_shared<nn::StreamState>();
  lm.start = [m, s](int64_t n) { *s = m->start_stream(n); };
  lm.step = [m, s](const std::vector<int64_t>& ids) {
    Var h = m->step(from_vector(ids, {(int64_t)ids.size()}), *s);  // (n, D) after the final norm
    return m->pretrain_logits(h).data();                           // (n, V)
  };
  lm.recompute = [m, V](const std::vector<int64_t>& ids, int64_t n) {
    const int64_t T = (int64_t)ids.size() / n;
    lra::Inputs in;
    in.tokens = from_vector(ids, {n, T}), in.mask = ones({n, T});
    Tensor all = m->pretrain_logits(m->encode(in)).data();  // (n, T, V)
    return all.narrow(1, T - 1, 1).reshape({n, V}).contiguous();
  };
  return lm;
}

}  // namespace gen
