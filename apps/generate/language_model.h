// apps/generate/language_model.h - a causal language model as generation sees it: feed one token, get the next token's
// logits; its prompt already encoded; a token's printed text. The two openers build one from a GPT-2 file (with its
// tokenizer when the vocabulary is larger than bytes) and from an lra_benchmark spt-causal cell. The model and its
// streaming state live in the closures.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "apps/generate/generate.h"
#include "tensor/tensor.h"

namespace gen {

struct LanguageModel {
  std::string name;             // e.g. "GPT-2 (key/value cache)", for the timing line
  int64_t vocab = 0;            // logits per step
  int64_t context = 0;          // the most positions it reads (0: no limit)
  std::vector<int64_t> prompt;  // the encoded prompt (never empty)
  int64_t eos = -1;             // the end-of-text token (GPT-2's "<|endoftext|>"), or -1 when it has none
  // a fresh streaming state for n sequences (step's batch)
  std::function<void(int64_t n)> start;
  // one token per sequence in (n) -> each one's next-token logits (n, V); the state advances by one position
  std::function<dl::Tensor(const std::vector<int64_t>&)> step;
  // n prefixes of one length through forward (no state), ids row by row (n T) -> the logits after each one's last
  // token (n, V)
  std::function<dl::Tensor(const std::vector<int64_t>& ids, int64_t n)> recompute;
  std::function<std::string(int64_t)> text;  // a token as printed: its bytes
};

LanguageModel open_gpt2(const Options& o);
LanguageModel open_lra_cell(const Options& o);

}  // namespace gen
