// apps/generate - sample from a causal language model: a GPT-2 safetensors file (byte-level, or with GPT-2's tokenizer
// files) or an lra_benchmark spt-causal cell; see generate.h.
//   ./build/generate --model data_cache/fpt/language-<key>/transformer.safetensors --prompt "The " --tokens 200 \
//                    --temperature 0.8 --top-k 40 --top-p 0.95 --seed 0
//   ./build/generate --model gpt2/model.safetensors --heads 12 --tokenizer gpt2/ --prompt "Hello, I'm" --tokens 50
//   ./build/generate --lra-cell runs/lra_benchmark/cells/<listops__s4d__spt-causal__seed0> --prompt "[MAX 2 9" --tokens 40
//   ./build/generate --model <GPT-2 file> --export-onnx gpt2.onnx [--length T] [--batch 4] [--seed 0]   # ONNX + check file
//   ./build/generate --model <GPT-2 file> --export-onnx gpt2_step.onnx --kv-cache   # the cached step (past keys / values)
// Prints the text as it comes (a token's bytes as they are), then on stderr the tokens per second; --recompute: no
// streaming state (the whole prefix at every token); GPT-2 stops at <|endoftext|> unless --no-stop-at-eos.
// --samples N: N texts stepped together as a batch, printed at the end, each after a line "--- sample i (seed S)".
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "apps/common/experiment.h"
#include "apps/generate/generate.h"

int main(int argc, char** argv) {
  CLI::App app{"generate: sample tokens from a GPT-2 or an lra_benchmark spt-causal cell (temperature, top-k, top-p, a seed)"};
  gen::Options o;
  int threads = 2;
  auto* model =
      app.add_option("--model", o.model, "GPT-2 safetensors file (HF names), e.g. the FPT cache's transformer.safetensors");
  auto* cell = app.add_option("--lra-cell", o.lra_cell, "an lra_benchmark cell folder trained with --regime spt-causal");
  model->excludes(cell);
  app.add_option("--heads", o.heads, "GPT-2's attention heads (default: info.json beside the model)");
  app.add_option("--vocab", o.vocab, "GPT-2's vocab.json (with --merges), for a vocabulary larger than bytes");
  app.add_option("--merges", o.merges, "GPT-2's merges.txt (with --vocab)");
  app.add_option("--tokenizer-json", o.tokenizer_json, "GPT-2's tokenizer as Hugging Face's tokenizer.json (ByteLevel BPE)");
  app.add_option("--tokenizer", o.tokenizer_dir, "a folder holding vocab.json and merges.txt, or tokenizer.json");
  app.add_option("--prompt", o.prompt,
                 "the start: text for GPT-2; an LRA cell's task tokens (ListOps symbols, bytes, or ids; default: the "
                 "first 8 tokens of test example 0)");
  app.add_option("--tokens", o.tokens, "tokens to generate")->check(dl::harness::at_least(0));
  app.add_option("--temperature", o.sampling.temperature, "0: greedy")->check(dl::harness::at_least(0));
  app.add_option("--top-k", o.sampling.top_k, "keep the k most probable (0: all)")->check(dl::harness::at_least(0));
  app.add_option("--top-p", o.sampling.top_p, "keep the smallest set reaching this probability mass")
      ->check(dl::harness::number_in(0, 1, true));
  app.add_option("--seed", o.seed, "the sampling seed: the same seed, the same text");
  app.add_option("--samples", o.samples,
                 "texts from the same prompt, stepped together as one batch; sample i is the text of --seed + i alone")
      ->check(dl::harness::at_least(1));
  app.add_flag("--stop-at-eos,!--no-stop-at-eos", o.stop_at_eos,
               "stop at GPT-2's <|endoftext|> when its tokenizer has it (default on)");
  app.add_flag("--recompute", o.recompute, "run the whole prefix at every token (no key/value cache or recurrent state)");
  app.add_option("--threads", threads, "CPU threads")->check(dl::harness::at_least(1));
  gen::ExportOptions e;
  auto* onnx = app.add_option("--export-onnx", e.onnx,
                              "write the GPT-2 of --model as ONNX (input_ids -> logits) and a check file beside it, "
                              "instead of sampling");
  app.add_option("--length", e.length, "--export-onnx: the graph's positions (default: the model's context)")
      ->check(dl::harness::at_least(1))
      ->needs(onnx);
  app.add_option("--batch", e.batch, "--export-onnx: rows of the check file's example batch (random ids from --seed)")
      ->check(dl::harness::at_least(1))
      ->needs(onnx);
  app.add_flag("--kv-cache", e.kv_cache,
               "--export-onnx: the cached step instead (input_ids and past keys / values -> logits and present keys / "
               "values); --length is then the check example's positions (default 8), half of them cached")
      ->needs(onnx);
  CLI11_PARSE(app, argc, argv);
  try {
    dl::harness::set_threads(threads);
    if (!e.onnx.empty()) {
      std::cout << gen::export_gpt2(o, e) << std::endl;
      return 0;
    }
    gen::Result r = gen::generate(o, [](const std::string& piece) { std::cout << piece << std::flush; });
    if (o.samples == 1) {  // streamed as it came
      std::cout << std::endl;  // the text before the timing line on a terminal
      if (!r.stopped.empty()) std::cerr << "generate: stopped early: " << r.stopped << "\n";
    } else {
      for (size_t i = 0; i < r.samples.size(); i++) {
        std::cout << "--- sample " << i << " (seed " << o.seed + i << ")\n" << r.prompt_text << r.samples[i].text << std::endl;
        if (!r.samples[i].stopped.empty()) std::cerr << "generate: sample " << i << " stopped early: " << r.samples[i].stopped << "\n";
      }
    }
    const int64_t n = r.generated;
    std::fprintf(stderr, "generate: %lld tokens in %.3f s: %.1f tokens/s (%s; prompt %lld tokens)\n", (long long)n, r.seconds,
                 r.seconds > 0 ? n / r.seconds : 0.0, r.model.c_str(), (long long)r.prompt_tokens);
  } catch (const std::exception& e) {
    std::cerr << "generate: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
