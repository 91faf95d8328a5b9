// apps/generate/generate.h - sampling tokens from a causal language model, one token at a time on the model's
// streaming state, with temperature, top-k and top-p (nn/models/sampling.h) and a seed: the same seed and options give
// the same tokens. Two kinds of model (language_model.h opens them):
//   GPT-2   a Hugging Face safetensors file (nn/models/gpt2.h), stepped on its key/value cache (memory and work per
//           token grow with the context). Byte-level (at most 256 tokens, e.g. the FPT app's cached language model):
//           the prompt's bytes are the ids. Larger vocabularies need GPT-2's tokenizer, vocab.json + merges.txt
//           (tasks/gpt2_bpe.h) or Hugging Face's tokenizer.json (tasks/gpt2_tokenizer_json.h): the prompt is encoded
//           with it and each token's bytes are printed as it comes (a character may arrive in two tokens: the
//           bytes are printed as they are, the terminal joins them).
//   an LRA cell   a cell of apps/lra_benchmark pretrained with spt-causal (next-token prediction with causal mixers):
//           the pretraining phase's last checkpoint (<cell>/pretrain/, the model with its LM head, pretrain_head.*)
//           and the cell's config (the dl.config of <cell>/model.safetensors). The backbone streams one position at a
//           time (nn/models/sequence_backbone.h): S4D and the other state-space mixers in constant memory per token.
//           The prompt is the task's tokens: ListOps' symbols ("[MAX 2 9"), bytes for the byte tasks, ids otherwise.
// --recompute runs the whole prefix through forward at every token instead (no streaming state): the same greedy
// text, and the cost the state saves.
// End of text: a GPT-2 whose tokenizer has "<|endoftext|>" (id 50256 in GPT-2's own files) stops when it samples that
// token (stop_at_eos, on by default; --no-stop-at-eos samples on past it, printing it as its text). The end token is
// the last of Result::ids and is not printed. Byte-level models and LRA cells have no end token.
// Several samples (Options::samples) are one batch on the model's state: sample i is the text of seed + i alone.
// What it is not (yet): a server, or a batch of different prompts; special tokens in a GPT-2 prompt are
// encoded as text (no "<|endoftext|>" splitting); a tokenizer whose vocabulary differs in size from the model's
// (nanoGPT's padded 50304) is refused.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nn/models/sampling.h"

namespace gen {

struct Options {
  // the model: one of
  std::string model;     // GPT-2 safetensors (HF names, with or without the "transformer." prefix)
  std::string lra_cell;  // an lra_benchmark spt-causal cell folder
  int64_t heads = 0;     // GPT-2: 0 = info.json beside the model (the FPT cache writes it), else an error asking for --heads
  // GPT-2's tokenizer: vocab.json and merges.txt, or HF's tokenizer.json, or a folder holding either
  std::string vocab, merges, tokenizer_json, tokenizer_dir;
  std::string prompt;  // GPT-2: text; an LRA cell: the task's tokens (empty: the first 8 tokens of test example 0)
  int64_t tokens = 100;
  dl::nn::SamplingOptions sampling;
  uint64_t seed = 0;
  int64_t samples = 1;  // sequences from the same prompt, stepped together as one batch; sample i draws from seed + i
  bool recompute = false;
  bool stop_at_eos = true;  // stop at the model's end-of-text token, when it has one
};

struct Sample {
  std::string text;          // the generated tokens as printed (the prompt not included)
  std::vector<int64_t> ids;  // the generated token ids (the end-of-text token last, when it stopped generation)
  std::string stopped;       // why it stopped before `tokens`, or empty
};
struct Result {
  std::vector<Sample> samples;  // Options::samples of them; sample i is what samples = 1 with seed + i gives
  // sample 0's, as before there were several
  std::string text;
  std::vector<int64_t> ids;
  std::string stopped;
  std::string prompt_text;    // the prompt as the model read it (its tokens' text)
  int64_t prompt_tokens = 0;  // fed before the first sampled token
  double seconds = 0;         // the sampled tokens' time (the prompt's too with streaming: it is stepped through)
  int64_t generated = 0;      // tokens sampled, over all samples
  std::string model;          // what was sampled from, and how (for the timing line)
};

// --export-onnx: the GPT-2 of --model as an ONNX file instead of sampling (GPT2Model::export_onnx, docs/onnx.md):
// input_ids (batch, length) int64 -> logits (batch, length, V), the batch dynamic; beside it the check file
// (nn/onnx/check_file.h) with `batch` rows of random ids (from Options::seed) and the framework's logits for them.
// With kv_cache, the cached step instead (GPT2Model::export_onnx_with_past): input_ids (batch, new) and the keys and
// values of the positions before -> logits (batch, new, V) and the keys and values with the new positions added, so a
// runtime samples one token per call; its check file's example has length / 2 positions cached and the rest new.
struct ExportOptions {
  std::string onnx;    // the .onnx file to write
  int64_t length = 0;  // positions of the graph: 0 = the model's context (n_positions); with kv_cache the check
                       // example's, 0 = 8 (at most the context)
  int64_t batch = 4;   // rows of the check file's example
  bool kv_cache = false;
};
// Returns the line to print; a bad option or file is named.
std::string export_gpt2(const Options& o, const ExportOptions& e);

// on_text: called first with the prompt's text, then with each generated token's text (bytes, possibly part of a UTF-8
// character) as it comes; with several samples, not at all (Result::samples holds their texts)
Result generate(const Options& o, const std::function<void(const std::string&)>& on_text = {});

}  // namespace gen
