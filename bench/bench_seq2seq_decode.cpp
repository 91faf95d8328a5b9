// bench/bench_seq2seq_decode.cpp - what greedy decoding of pretrained_convs' encoder-decoder costs per target token,
// on the decoder's stream (Seq2SeqModel::greedy: start_decode, then decode_step per token) against the plain twin
// that runs decode_logits over the whole prefix for every token (greedy_by_recompute), for target lengths T.
//   stream     token t costs the cross-attention over the S source positions plus, for the Transformer, attention
//              over t cached keys (O(t)), for a convolution a window of K inputs (O(K)): per token nearly flat in T
//   recompute  token t runs the decoder over t + 1 positions: per token O(T) for every mixer, O(T^2) attention inside
// The model is pretrained_convs' "small" preset (d_model 96, d_ff 384, 2 + 2 layers, 4 heads, kernel 7, the app's byte
// vocabulary with 64 sentinels; untrained weights: speed only) at its evaluation batch (32 rows, source length 128),
// with no stop token so every row decodes T tokens. Each call is timed `reps` times after one warm-up call (the
// median kept); per token = the greedy call / T (what an evaluation pays, the encoder included) and, beside it, the
// decoding alone: (greedy call - encode) / T. Each length also checks that the two give the same tokens.
//   ./build/bench_seq2seq_decode [--mixers transformer,lightconv] [--lengths 8,16,32,64,128] [--batch 32] [--src 128]
//                                [--reps 5] [--threads 1] [--out DIR]
// Writes DIR/seq2seq_decode.tsv (default DIR: runs/bench_seq2seq_decode).
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_timing.h"
#include "nn/models/seq2seq.h"
#include "tasks/tokenizer.h"

using namespace dl;
using bench::ms_since, bench::median, bench::time_ms, bench::split_commas;


// pretrained_convs' small preset (apps/pretrained_convs/presets/small.json); match_params left out (d_ff 384 for both)
static nn::Seq2SeqConfig small_preset(const std::string& mixer) {
  nn::Seq2SeqConfig c;
  c.vocab_size = tasks::ByteTokenizer{64}.vocab_size(), c.d_model = 96, c.d_ff = 384, c.num_layers = 2;
  c.num_decoder_layers = 2, c.num_heads = 4, c.mixer = mixer, c.kernel_sizes = {7}, c.dilations = {1, 2};
  return c;
}

int main(int argc, char** argv) {
  std::vector<std::string> mixers = {"transformer", "lightconv"};
  std::vector<int64_t> lengths = {8, 16, 32, 64, 128};
  int64_t B = 32, S = 128, reps = 5, threads = 1;
  std::string out = "runs/bench_seq2seq_decode";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--mixers") mixers = split_commas(v);
    else if (k == "--lengths") {
      lengths.clear();
      for (auto& x : split_commas(v)) lengths.push_back(std::stoll(x));
    } else if (k == "--batch") B = std::stoll(v);
    else if (k == "--src") S = std::stoll(v);
    else if (k == "--reps") reps = std::stoll(v);
    else if (k == "--threads") threads = std::stoll(v);
    else if (k == "--out") out = v;
    else {
      std::fprintf(stderr, "bench_seq2seq_decode: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  omp_set_num_threads((int)threads);
  openblas_set_num_threads((int)threads);
  NoGradGuard ng;
  std::filesystem::create_directories(out);
  const std::string path = out + "/seq2seq_decode.tsv", tmp = path + ".tmp";
  std::ofstream tsv(tmp);
  tsv << "mixer\ttarget_len\tencode_ms\tstream_ms_per_token\trecompute_ms_per_token\tstream_decode_ms_per_token\t"
         "recompute_decode_ms_per_token\n";
  std::printf("batch %lld, source length %lld, %lld thread(s); ms per target token: greedy / T [decoding alone]\n", (long long)B,
              (long long)S, (long long)threads);
  std::printf("%-12s %5s %9s %20s %20s %7s %7s\n", "mixer", "T", "encode ms", "stream ms", "recompute ms", "ratio", "[alone]");
  for (const std::string& mixer : mixers) {
    Generator g(0);
    nn::Seq2SeqModel m(small_preset(mixer), g);
    m.eval();
    Tensor ids = Tensor::empty({B, S}, DType::i64), mask = full({B, S}, 1.0);
    for (int64_t i = 0; i < B * S; i++) ids.data<int64_t>()[i] = 5 + (int64_t)(g.next_u64() % 256);  // byte ids
    const double enc = time_ms(reps, [&] { m.encode(ids, mask); });
    for (int64_t T : lengths) {
      Tensor a, b;
      const double st = time_ms(reps, [&] { a = m.greedy(ids, mask, T, /*stop_id=*/-1); });
      const double rc = time_ms(reps, [&] { b = m.greedy_by_recompute(ids, mask, T, -1); });
      if (a.to_vector() != b.to_vector())
        std::printf("  %s T=%lld: the stream and the recompute chose different tokens\n", mixer.c_str(), (long long)T);
      const double sp = st / T, rp = rc / T, sd = (st - enc) / T, rd = (rc - enc) / T;
      std::printf("%-12s %5lld %9.2f %9.3f [%8.3f] %9.3f [%8.3f] %6.1fx %6.1fx\n", mixer.c_str(), (long long)T, enc, sp, sd, rp,
                  rd, rp / sp, rd / sd);
      tsv << mixer << "\t" << T << "\t" << enc << "\t" << sp << "\t" << rp << "\t" << sd << "\t" << rd << "\n";
    }
  }
  tsv.close();
  std::filesystem::rename(tmp, path);  // whole or not at all
  std::printf("table: %s\n", path.c_str());
  return 0;
}
