// bench/bench_generation.cpp - what one more token costs at a given context length, three ways (issue 40's picture of
// why the recurrent view matters):
//   s4d        a stack of causal S4D residual blocks stepping its recurrence (SequenceLayer::step): the state is the
//              same size at every position, so the cost per token is flat
//   gpt2       GPT-2 stepping on its key/value cache (GPT2Model::step): attention reads every cached position, so the
//              cost grows with the context
//   recompute  GPT-2 without a cache: the whole prefix through forward for each token, growing faster still
// Same width and depth for both models (untrained weights: speed only). For each context length t it steps the model
// to position t, then times `reps` more steps (the recompute arm: `reps` forwards of t positions) and reports the
// median ms per token.
//   ./build/bench_generation [--d 128] [--layers 4] [--lengths 64,256,1024,4096] [--reps 16] [--out DIR]
// Writes DIR/generation_speed.tsv and, with gnuplot, DIR/generation_speed.png (default DIR: runs/bench_generation).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_timing.h"
#include "nn/models/gpt2.h"
#include "nn/registry.h"
#include "nn/residual_block.h"

using namespace dl;
using bench::Clock, bench::ms_since, bench::median;


int main(int argc, char** argv) {
  int64_t D = 128, layers = 4, reps = 16;
  std::vector<int64_t> lengths = {64, 256, 1024, 4096};
  std::string out = "runs/bench_generation";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--d") D = std::stoll(v);
    else if (k == "--layers") layers = std::stoll(v);
    else if (k == "--reps") reps = std::stoll(v);
    else if (k == "--out") out = v;
    else if (k == "--lengths") {
      lengths.clear();
      std::stringstream ss(v);
      for (std::string x; std::getline(ss, x, ',');) lengths.push_back(std::stoll(x));
    } else {
      std::fprintf(stderr, "bench_generation: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  omp_set_num_threads(1);
  NoGradGuard ng;
  Generator g(0);
  const int64_t max_t = *std::max_element(lengths.begin(), lengths.end()) + reps + 1;
  // the S4D stack: pre-norm residual blocks around causal S4D (d_state 64), as lra_benchmark's causal backbone
  std::vector<std::shared_ptr<nn::ResidualBlock>> s4d;
  nn::BackboneOptions bo;
  bo.causal = true;
  for (int64_t l = 0; l < layers; l++)
    s4d.push_back(std::make_shared<nn::ResidualBlock>(
        nn::make_layer("s4d", D, nn::backbone_config(nn::find_layer("s4d"), bo), g), D, nn::ResidualBlockOptions{}, g));
  nn::GPT2Config c;
  c.vocab_size = 256, c.n_positions = max_t, c.n_embd = D, c.n_layer = layers, c.n_head = std::max<int64_t>(1, D / 64);
  nn::GPT2Model gpt(c, g);
  gpt.eval();
  for (auto& b : s4d) b->eval();
  int64_t params = 0;
  for (auto& b : s4d) params += b->num_parameters();
  std::printf("width %lld, %lld layers; S4D stack %lld parameters, GPT-2 %lld (embeddings included); 1 thread\n",
              (long long)D, (long long)layers, (long long)params, (long long)gpt.num_parameters());
  std::filesystem::create_directories(out);
  std::ofstream tsv(out + "/generation_speed.tsv");
  tsv << "context\ts4d_ms\tgpt2_cache_ms\tgpt2_recompute_ms\n";
  std::printf("%8s %12s %14s %18s\n", "context", "s4d ms/tok", "gpt2 cache ms", "gpt2 recompute ms");
  std::vector<nn::StreamState> ss;
  for (auto& b : s4d) ss.push_back(b->start_stream(1));
  nn::StreamState gs = gpt.start_stream(1);
  Tensor x = randn({1, D}, g), tok = from_vector(std::vector<int64_t>{65}, {1});
  auto s4d_step = [&] {
    Var h(x);
    for (size_t l = 0; l < s4d.size(); l++) h = s4d[l]->step(h, ss[l]);
  };
  int64_t pos = 0;
  for (int64_t t : lengths) {
    while (pos < t) s4d_step(), gpt.step(tok, gs), pos++;  // advance both streams to position t
    std::vector<double> a, b, r;
    for (int64_t i = 0; i < reps; i++) {  // each model timed on its own (interleaved, GPT-2's cache evicts S4D's weights)
      auto t0 = Clock::now();
      s4d_step();
      a.push_back(ms_since(t0));
    }
    for (int64_t i = 0; i < reps; i++) {
      auto t0 = Clock::now();
      gpt.step(tok, gs);
      b.push_back(ms_since(t0));
    }
    pos += reps;
    std::vector<int64_t> ids(t, 65);
    for (int64_t i = 0; i < std::max<int64_t>(1, reps / 4); i++) {  // fewer: each is a whole forward
      auto t0 = Clock::now();
      gpt.forward(from_vector(ids, {1, t}));
      r.push_back(ms_since(t0));
    }
    std::printf("%8lld %12.3f %14.3f %18.3f\n", (long long)t, median(a), median(b), median(r));
    tsv << t << "\t" << median(a) << "\t" << median(b) << "\t" << median(r) << "\n";
  }
  tsv.close();
  const std::string gp = "set terminal pngcairo size 800,480; set output '" + out +
                         "/generation_speed.png'; set logscale xy; set xlabel 'context length (positions)'; "
                         "set ylabel 'ms per generated token'; set key top left; set grid; "
                         "set title 'One more token: S4D recurrence vs GPT-2 with and without a key/value cache'; "
                         "plot '" + out + "/generation_speed.tsv' using 1:2 with linespoints title 'S4D step (recurrence)', "
                         "'' using 1:3 with linespoints title 'GPT-2 step (key/value cache)', "
                         "'' using 1:4 with linespoints title 'GPT-2 forward over the prefix (no cache)'";
  if (std::system(("gnuplot -e \"" + gp + "\" 2>/dev/null").c_str()) == 0)
    std::printf("plot: %s/generation_speed.png\n", out.c_str());
  return 0;
}
