// bench/bench_onnx_forward.cpp - forward speed beside ONNX Runtime (issue 40): what a user who deploys with ONNX
// Runtime would see against running the framework itself, on the same exported models and inputs, in one run.
//
//   transformer  lra_benchmark's Transformer backbone (LraModel: token embedding, rotary self-attention, pre-norm
//                blocks, masked mean pool, linear head) on byte tokens, exported by lra::export_onnx
//   s4d          the same backbone with S4D mixers (exported in convolution form for the length L, docs/onnx.md)
//   gpt2         a GPT-2-small-shaped model (12 layers, width 768, 12 heads, vocabulary 50257: 124M parameters,
//                untrained weights) over T positions, logits for every position (GPT2Model::export_onnx)
// Each model is exported once; for each batch size (1: latency, 32: throughput) the bench draws an input batch, times
// `reps` forwards of ours (eval mode, no autograd graph) after one warm-up, then runs bench/ort_forward.js on the same
// file and inputs with the same thread count (ONNX Runtime's CPU provider, all graph optimisations, one warm-up). The
// ORT side also reports the largest difference between its outputs and ours, so both timed the same computation
// (not checked for GPT-2 at batch 32: its logits are 1.6 GB). Ratio = ORT median / ours (above 1: we are faster).
//
//   ./build/bench_onnx_forward [--threads 2] [--reps 5] [--len 256] [--d 128] [--layers 4] [--batches 1,32]
//                              [--models transformer,s4d,gpt2] [--gpt2-layers 12] [--out DIR]
// Writes DIR/onnx_forward.jsonl (one object per model and batch) and DIR/onnx_forward.md (default DIR:
// runs/bench_onnx_forward). Needs node and onnxruntime-node in the data cache (scripts/setup.sh).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "apps/common/config.h"
#include "apps/lra_benchmark/export.h"
#include "bench/bench_timing.h"
#include "nn/models/gpt2.h"
#include "nn/onnx/check_file.h"
#include "nn/onnx/graph.h"
#include "tensor/safetensors.h"

using namespace dl;
using bench::time_ms, bench::split_commas;
using json = nlohmann::json;
using dl::harness::ConfigError;

// ONNX Runtime's median ms (and its largest output difference from ours, < 0 when not checked) on model + inputs.
static json run_ort(const std::string& model, const std::string& inputs, int threads, int reps) {
  const std::string cmd =
      "node bench/ort_forward.js '" + model + "' '" + inputs + "' " + std::to_string(threads) + " " + std::to_string(reps);
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("bench_onnx_forward: cannot start '" + cmd + "'");
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int rc = pclose(p);
  if (rc != 0 || out.empty())
    throw std::runtime_error("bench_onnx_forward: '" + cmd + "' failed (exit " + std::to_string(WEXITSTATUS(rc)) +
                             "); is onnxruntime-node installed (scripts/setup.sh)?");
  return json::parse(out.substr(out.find('{')));
}

struct Options {
  int threads = 2, reps = 5;
  int64_t len = 256, d = 128, layers = 4, gpt2_layers = 12;
  std::vector<int64_t> batches = {1, 32};
  std::vector<std::string> models = {"transformer", "s4d", "gpt2"};
  std::string out = "runs/bench_onnx_forward";
};

static Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    const std::string k = argv[i];
    if (i + 1 >= argc) throw ConfigError("bench_onnx_forward: option " + k + " needs a value");
    const std::string v = argv[i + 1];
    if (k == "--threads") o.threads = std::stoi(v);
    else if (k == "--reps") o.reps = std::stoi(v);
    else if (k == "--len") o.len = std::stoll(v);
    else if (k == "--d") o.d = std::stoll(v);
    else if (k == "--layers") o.layers = std::stoll(v);
    else if (k == "--gpt2-layers") o.gpt2_layers = std::stoll(v);
    else if (k == "--out") o.out = v;
    else if (k == "--models") o.models = split_commas(v);
    else if (k == "--batches") {
      o.batches.clear();
      for (const std::string& b : split_commas(v)) o.batches.push_back(std::stoll(b));
    } else
      throw ConfigError("bench_onnx_forward: unknown option " + k +
                        " (--threads --reps --len --d --layers --gpt2-layers --batches --models --out)");
  }
  for (const std::string& m : o.models)
    if (m != "transformer" && m != "s4d" && m != "gpt2")
      throw ConfigError("bench_onnx_forward: --models: unknown model '" + m + "' (transformer, s4d, gpt2)");
  return o;
}

// One model at one batch size: ours and ORT's, as a JSON row.
static json measure(const std::string& model, int64_t params, int64_t B, double ours_ms, const json& ort) {
  json row = {{"model", model},
              {"batch", B},
              {"params", params},
              {"ours_ms", ours_ms},
              {"ort_ms", ort["median_ms"]},
              {"ratio", ort["median_ms"].get<double>() / ours_ms},
              {"max_abs_diff", ort["max_abs_diff"]},
              {"ort_version", ort["ort"]},
              {"threads", ort["threads"]}};
  std::printf("%-12s batch %3lld  ours %10.2f ms  onnxruntime %10.2f ms  ratio %5.2f  max |diff| %s\n", model.c_str(),
              (long long)B, ours_ms, ort["median_ms"].get<double>(), row["ratio"].get<double>(),
              ort["max_abs_diff"].dump().c_str());
  std::fflush(stdout);
  return row;
}

// lra_benchmark's backbone with `mixer`, exported at each batch size through lra::export_onnx (its check file holds
// the inputs and our logits).
static std::vector<json> bench_lra(const std::string& mixer, const Options& o) {
  lra::CellConfig c;
  c.model = mixer, c.d_model = (int)o.d, c.layers = (int)o.layers, c.heads = 4, c.d_state = 64, c.dropout = 0;
  lra::TaskShape t;
  t.vocab = 256, t.classes = 2, t.max_len = (int)o.len;
  Generator g(0);
  lra::LraModel m(c, t, /*causal=*/false, g);
  m.eval();
  std::vector<json> rows;
  for (int64_t B : o.batches) {
    const std::string path = o.out + "/" + mixer + "_b" + std::to_string(B) + ".onnx";
    lra::export_onnx(m, path, B, /*seed=*/B);
    TensorFile check = load_safetensors(nn::onnx::check_file_path(path));
    lra::Inputs in;
    in.tokens = check.at("tokens"), in.mask = check.at("mask");
    const double ours = time_ms(o.reps, [&] { m.classify(in); });
    rows.push_back(
        measure(mixer, m.num_parameters(), B, ours, run_ort(path, nn::onnx::check_file_path(path), o.threads, o.reps)));
  }
  return rows;
}

static std::vector<json> bench_gpt2(const Options& o) {
  nn::GPT2Config c;
  c.n_layer = o.gpt2_layers, c.n_positions = std::max<int64_t>(1024, o.len);
  Generator g(0);
  nn::GPT2Model m(c, g);
  m.eval();
  const std::string path = o.out + "/gpt2.onnx";
  nn::onnx::Graph graph("gpt2_small_shaped");
  m.export_onnx(graph, o.len);
  graph.save(path);
  std::vector<json> rows;
  for (int64_t B : o.batches) {
    Tensor ids = randint(0, c.vocab_size, {B, o.len}, g);
    const std::string inputs = o.out + "/gpt2_b" + std::to_string(B) + ".inputs.safetensors";
    if (B * o.len * c.vocab_size <= (int64_t)1 << 28)  // our logits beside the inputs, so ORT's are compared with them
      save_safetensors(inputs, {{"input_ids", ids}, {"logits", m.forward(ids).data().contiguous()}});
    else save_safetensors(inputs, {{"input_ids", ids}});
    const double ours = time_ms(o.reps, [&] { m.forward(ids); });
    rows.push_back(measure("gpt2", m.num_parameters(), B, ours, run_ort(path, inputs, o.threads, o.reps)));
  }
  return rows;
}

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  omp_set_num_threads(o.threads);
  NoGradGuard ng;
  std::filesystem::create_directories(o.out);
  std::printf("forward only, %d threads (ours: OpenMP; ONNX Runtime: intra-op), median of %d after one warm-up, T = %lld\n",
              o.threads, o.reps, (long long)o.len);
  std::vector<json> rows;
  for (const std::string& m : o.models) {
    std::vector<json> r = m == "gpt2" ? bench_gpt2(o) : bench_lra(m, o);
    rows.insert(rows.end(), r.begin(), r.end());
  }
  std::string jsonl, md = "| model | params | batch | ours (ms) | ONNX Runtime (ms) | ORT / ours | max abs diff |\n"
                          "| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  char line[512];
  for (const json& r : rows) {
    jsonl += r.dump() + "\n";
    std::snprintf(line, sizeof line, "| %s | %lld | %lld | %.2f | %.2f | %.2f | %s |\n", r["model"].get<std::string>().c_str(),
                  (long long)r["params"].get<int64_t>(), (long long)r["batch"].get<int64_t>(), r["ours_ms"].get<double>(),
                  r["ort_ms"].get<double>(), r["ratio"].get<double>(),
                  r["max_abs_diff"].is_null() ? "not checked" : r["max_abs_diff"].dump().c_str());
    md += line;
  }
  atomic_write_file(o.out + "/onnx_forward.jsonl", jsonl);
  atomic_write_file(o.out + "/onnx_forward.md", md);
  std::printf("\n%s\nwritten: %s/onnx_forward.{jsonl,md}\n", md.c_str(), o.out.c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_onnx_forward: error: %s\n", e.what());
  return 1;
}
