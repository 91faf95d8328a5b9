// apps/generate - sample text from a byte-level GPT-2 (the FPT app's cached language model, or any GPT-2 safetensors
// file whose vocabulary is bytes): see generate.h.
//   ./build/generate --model data_cache/fpt/language-<key>/transformer.safetensors --prompt "The " --tokens 200 \
//                    --temperature 0.8 --top-k 40 --top-p 0.95 --seed 0
// Prints the text as it comes, then (on stderr) the tokens per second; --recompute: no key/value cache.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "apps/common/experiment.h"
#include "apps/generate/generate.h"

int main(int argc, char** argv) {
  CLI::App app{"generate: sample text from a byte-level GPT-2 language model (temperature, top-k, top-p, a seed)"};
  gen::Options o;
  int threads = 2;
  app.add_option("--model", o.model, "GPT-2 safetensors file (HF names), e.g. the FPT cache's transformer.safetensors")
      ->required();
  app.add_option("--heads", o.heads, "attention heads (default: info.json beside the model)");
  app.add_option("--prompt", o.prompt, "the text to continue (bytes)");
  app.add_option("--tokens", o.tokens, "tokens (bytes) to generate")->check(CLI::NonNegativeNumber);
  app.add_option("--temperature", o.sampling.temperature, "0: greedy")->check(CLI::NonNegativeNumber);
  app.add_option("--top-k", o.sampling.top_k, "keep the k most probable (0: all)")->check(CLI::NonNegativeNumber);
  app.add_option("--top-p", o.sampling.top_p, "keep the smallest set reaching this probability mass")
      ->check(CLI::Range(1e-9, 1.0));
  app.add_option("--seed", o.seed, "the sampling seed: the same seed, the same text");
  app.add_flag("--recompute", o.recompute, "run the whole prefix at every token (no key/value cache)");
  app.add_option("--threads", threads, "CPU threads")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    dl::harness::set_threads(threads);
    std::cout << o.prompt << std::flush;
    gen::Result r = gen::generate(o, [](char c) { std::cout << c << std::flush; });
    std::cout << std::endl;  // the text before the timing line on a terminal
    if (!r.stopped.empty()) std::cerr << "generate: stopped early: " << r.stopped << "\n";
    const int64_t n = (int64_t)r.text.size();
    std::fprintf(stderr, "generate: %lld tokens in %.3f s: %.1f tokens/s (%s; prompt %lld tokens)\n", (long long)n, r.seconds,
                 r.seconds > 0 ? n / r.seconds : 0.0, o.recompute ? "recomputing the prefix" : "key/value cache",
                 (long long)r.prompt_tokens);
  } catch (const std::exception& e) {
    std::cerr << "generate: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
