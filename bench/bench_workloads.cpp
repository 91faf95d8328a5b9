// bench/bench_workloads.cpp - the four reference training steps of issue 7, built from our nn modules with the
// shapes and parameter counts of bench/torch_workloads.py (its PyTorch twin), plus a length-scaling table.
//
//   bench_workloads transformer_listops [--len 512] [--steps 5] [--warmup 2] [--threads 2] [--attention best]
//   bench_workloads scaling [--steps 2] [--batch 2] [--min-len 256] [--max-len 4096] [--rounds 1] [--kinds a,b,...]
//   bench_workloads kernels [--len 4096] [--batch 2] [--steps 5]   # the attention primitives alone, ms and GFLOP/s
//   bench_workloads s4d --profile        # also one step op by op on stderr (autograd/profile.h): where the time goes
//   bench_workloads transformer_listops --device cuda [--batch 64] [--len 1024]   # the step on the GPU
//   bench_workloads gpt_char --precision bf16   # matrix products in bf16 (tensor/bf16.h); the line gains "precision"
//
// One step = zero_grad, forward, loss, backward, AdamW step (lr 1e-3, wd 0.01), fp32 (or --precision bf16), fixed seed, timed after warm-up;
// the median is reported. Output: one JSON line with the same fields as torch_workloads.py plus
//   model_gflop   model FLOPs per step (the model's own count, below), gflops = model_gflop / median step time,
//   minflt_per_step  minor page faults per timed step (getrusage ru_minflt deltas; 0 means no fresh pages were touched),
//   alloc_peak_mb    the caching allocator's peak bytes in use,
//   cpu_ms_per_step  user + system CPU time per timed step, all threads (spinning OpenMP workers count; with
//                    --threads 1 it is a load-independent proxy for the work, useful on a busy machine).
// Run one workload per process: peak_rss_mb is the process's ru_maxrss.
//
// --device cuda (apps/common/device.h): the model's parameters and the batch move to the device before the first step
// (the Transformer's sinusoid table too), each timed step ends with the device's synchronize(), and attention takes
// the path MultiheadAttention takes on a device with --attention best (the default): the device's flash primitive
// (cuda/ops/attention_tc.cuh; DL_ATTENTION_TC=0 for its rows' kernels instead of its tensor-core tiles), as the apps run; --attention composed times the composed path (cuBLAS products, a T x T
// matrix); packed and fused are CPU kernels and refused there. Until 2026-12-05 the device always ran composed, which
// the first GPU run measured. --batch B and --len L set the batch and the length (defaults:
// each workload's CPU size) to reach GPU sizes. The JSON line then also holds "device" and "batch"; the CPU line is
// unchanged (bench/run_vs_torch.sh reads it).
//
// FLOPs: a step is 3 x the model's forward_flops (bench/workload_models.h), which sums its layers' own counts
// (nn/sequence_layer.h's convention: a multiply-add is 2; matrix products, attention's allowed query-key pairs - the
// causal GPT's T (T + 1) / 2, whatever part of the T^2 square a kernel computes -, the S4D kernel's Vandermonde sums
// and its FFTs; an embedding lookup is free). Before 2026-12-05 it was a formula of the parameters (docs/performance.md
// gives both counts per workload; docs/results' older lines hold the old one).
#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <omp.h>

#include "apps/common/config.h"
#include "apps/common/device.h"
#include "autograd/ops.h"
#include "autograd/profile.h"
#include "tensor/bf16.h"
#include "nn/attention/attention.h"
#include "nn/fused/flash_attention.h"
#include "nn/fused/fused_attention.h"
#include "nn/layers.h"
#include "nn/attention/linear_attention.h"
#include "nn/recurrent/lstm.h"
#include "nn/fused/qkv_attention.h"
#include "nn/ssm/s4d.h"
#include "optim/adam.h"
#include "tensor/allocator.h"
#include "tensor/backend.h"
#include "bench/workload_models.h"

extern "C" void openblas_set_num_threads(int);

using namespace dl;
using namespace dl::nn;

namespace {

// ---------------------------------------------------------------------------------------------------
// The command line. Every mistake in it - no workload, an unknown one, an unknown flag or kind, a value that is not a
// number or out of range - is a usage error: the message, the usage text naming the known workloads, exit status 2,
// before any model is built. (fail() throws; uncaught, it ended the program in std::terminate.)
const std::vector<std::string> kWorkloads = {"transformer_listops", "s4d", "lstm_bits", "gpt_char", "scaling", "kernels"};
const std::vector<std::string> kScalingKinds = {"attention",       "fused_attention",  "qkv_attention", "flash_attention",
                                                "mha",             "linear_attention", "s4d"};
const std::vector<std::string> kKernelKinds = {"qkv_attention", "flash_attention"};

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}
bool contains(const std::vector<std::string>& names, const std::string& n) {
  return std::find(names.begin(), names.end(), n) != names.end();
}

void print_usage(std::FILE* f) {
  std::fprintf(f,
               "usage: bench_workloads WORKLOAD [--len L] [--steps N] [--warmup N] [--threads N]\n"
               "                       [--attention best|packed|composed|fused] [--profile] [--batch B]\n"
               "                       [--device cpu|cuda] [--precision fp32|bf16]\n"
               "                       [--min-len L --max-len L --rounds N --kinds a,b (scaling, kernels)]\n"
               "workloads: %s\n"
               "kinds of scaling: %s\nkinds of kernels: %s\n",
               joined(kWorkloads).c_str(), joined(kScalingKinds).c_str(), joined(kKernelKinds).c_str());
}

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "bench_workloads: %s\n", msg.c_str());
  print_usage(stderr);
  std::exit(2);
}

// `flag`'s value as an integer in [min, 2^31), the whole text read (std::stoi would take "5x" as 5 and throw on "x").
int parse_int(const std::string& flag, const std::string& text, int min) {
  int v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec == std::errc::result_out_of_range) usage_error(flag + " is out of range, found " + text);
  if (ec != std::errc() || p != end) usage_error(flag + " needs an integer, found '" + text + "'");
  if (v < min) usage_error(flag + " must be at least " + std::to_string(min) + ", found " + text);
  return v;
}

// ---------------------------------------------------------------------------------------------------
// Models: bench/workload_models.h (the twins of torch_workloads.py's classes).
using namespace dl::nn::bench;

Attn parse_attn(const std::string& s) {
  if (s == "best") return Attn::best;
  if (s == "packed") return Attn::packed;
  if (s == "composed") return Attn::composed;
  if (s == "fused") return Attn::fused;
  usage_error("--attention must be best, packed, composed or fused, found '" + s + "'");
}

// ---------------------------------------------------------------------------------------------------
struct Workload {
  std::shared_ptr<Module> model;
  std::function<Var()> loss;  // forward + loss
  int64_t tokens = 0;
  double flops = 0;  // model FLOPs per step
};

// batch: 0 for the workload's own (32, or 64 for lstm_bits). The batch is drawn on the host (the same numbers on
// either device) and moved to `device` with the model (apps/common/device.h's place_model).
Workload build(const std::string& name, int64_t L, Attn fused, Device device, int64_t batch) {
  static Generator g(0);
  g.manual_seed(0);
  Generator dg(1);
  Workload w;
  auto on = [device](const Tensor& t) { return t.to(device); };
  if (name == "transformer_listops") {
    const int64_t B = batch ? batch : 32, C = 128, NL = 4;
    auto m = std::make_shared<TransformerClassifier>(20, C, 4, NL, 512, 10, L, 0.1, fused, g);
    m->pe = on(m->pe);  // a plain member, not a parameter: place_model does not see it
    Tensor x = on(randint(0, 20, {B, L}, dg)), y = on(randint(0, 10, {B}, dg));
    w.model = m;
    w.loss = [m, x, y] { return cross_entropy(m->forward(x), y); };
    w.tokens = B * L;
    w.flops = train_step_flops(m->forward_flops(B, L));
  } else if (name == "s4d") {
    const int64_t B = batch ? batch : 32, H = 128, NL = 4;
    auto m = std::make_shared<S4DClassifier>(256, H, 64, NL, 10, 0.1, g);
    Tensor x = on(randint(0, 256, {B, L}, dg)), y = on(randint(0, 10, {B}, dg));
    w.model = m;
    w.loss = [m, x, y] { return cross_entropy(m->forward(x), y); };
    w.tokens = B * L;
    w.flops = train_step_flops(m->forward_flops(B, L));
  } else if (name == "lstm_bits") {
    const int64_t B = batch ? batch : 64;
    auto m = std::make_shared<LSTMBits>(8, 256, 2, g);
    Tensor x = on(randn({B, L, 8}, dg)), y = on(randint(0, 2, {B}, dg));
    w.model = m;
    w.loss = [m, x, y] { return cross_entropy(m->forward(Var(x)), y); };
    w.tokens = B * L;
    w.flops = train_step_flops(m->forward_flops(B, L));
  } else if (name == "gpt_char") {
    const int64_t B = batch ? batch : 32, C = 128, NL = 4, V = 256;
    auto m = std::make_shared<GPT>(V, L, C, 4, NL, 0.1, fused, g);
    Tensor xy = randint(0, V, {B, L + 1}, dg);
    Tensor x = on(xy.narrow(1, 0, L).contiguous()), t = on(xy.narrow(1, 1, L).contiguous().reshape({B * L}));
    w.model = m;
    w.loss = [m, x, t, B, L] { return cross_entropy(reshape(m->forward(x), {B * L, V}), t); };
    w.tokens = B * L;
    w.flops = train_step_flops(m->forward_flops(B, L));
  } else {
    fail("bench_workloads: unknown workload '" + name + "' (transformer_listops, s4d, lstm_bits, gpt_char, scaling)");
  }
  w.model->train();
  harness::place_model(*w.model, device);
  return w;
}

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
long minflt() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return r.ru_minflt;
}
double cpu_s() {  // user + system time of the whole process (all threads)
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return r.ru_utime.tv_sec + r.ru_stime.tv_sec + 1e-6 * (r.ru_utime.tv_usec + r.ru_stime.tv_usec);
}
double peak_rss_mb() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return r.ru_maxrss / 1024.0;
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct StepStats {
  double ms = 0, loss = 0, minflt_per_step = 0, cpu_ms = 0;
};

// warm-up steps, then `steps` timed steps of zero_grad / forward / backward / AdamW; with `profile`, one more step
// whose ops are timed (autograd/profile.h) and reported on stderr (the optimizer step as its own line).
// On a device, each timed step ends with the backend's synchronize(): the time is the GPU's work, not its queueing.
StepStats time_steps(Module& model, const std::function<Var()>& loss_fn, int warmup, int steps, bool profile = false,
                     Device device = Device::cpu) {
  Backend* sync = device == Device::cpu ? nullptr : &require_backend(device, "bench_workloads");
  optim::AdamWOptions ao;
  ao.lr = 1e-3;
  ao.weight_decay = 0.01;
  optim::AdamW opt(model.parameters(), ao);
  std::vector<double> times;
  StepStats s;
  long f0 = 0;
  double c0 = 0;
  for (int i = 0; i < warmup + steps; i++) {
    if (i == warmup) f0 = minflt(), c0 = cpu_s();
    double t0 = now_s();
    opt.zero_grad();
    Var loss = loss_fn();
    loss.backward();
    opt.step();
    if (sync) sync->synchronize();
    double dt = now_s() - t0;
    if (i >= warmup) times.push_back(dt);
    s.loss = loss.item();
  }
  if (profile) {
    opt.zero_grad();
    double t_opt = 0;
    {
      ProfileScope scope;
      loss_fn().backward();
      const double t0 = now_s();
      opt.step();
      t_opt = 1000.0 * (now_s() - t0);
    }
    std::fprintf(stderr, "%s\nAdamW step (not in the table): %.1f ms\n",
                 profile_report("ops of one training step", 20).c_str(), t_opt);
  }
  s.ms = 1000.0 * median(times);
  s.minflt_per_step = steps > 0 ? (double)(minflt() - f0) / steps : 0;
  s.cpu_ms = steps > 0 ? 1000.0 * (cpu_s() - c0) / steps : 0;
  return s;
}

// ---------------------------------------------------------------------------------------------------
// Scaling: one block (pre-LN mixer + residual, d 128, 4 heads, batch `batch`) per kind, time per step vs length.
struct MixerBlock : Module {
  std::shared_ptr<LayerNorm> norm;
  std::shared_ptr<SequenceLayer> mixer;
  MixerBlock(std::shared_ptr<SequenceLayer> m, int64_t d) {
    norm = register_module("norm", std::make_shared<LayerNorm>(d));
    mixer = register_module("mixer", m);
  }
  std::string type_name() const override { return "MixerBlock"; }
  Var forward(const Var& x) { return x + mixer->forward(norm->forward(x), Tensor()); }
};

// The scaling table: one pre-LN block x + mixer(norm(x)) at d 128 (4 heads for the attentions), the full training step
// (forward, backward, AdamW), ms per step, at lengths min_len, 2 min_len, ... max_len. Kinds: attention (the composed
// path, packed = false), fused_attention, qkv_attention (packed), flash_attention (blocked), mha (the layer's own
// choice at that length), linear_attention, s4d. At each length the kinds run in `rounds` rounds that alternate them,
// so a change of the shared machine's load hits all alike; a row holds the median over the rounds of each round's
// median step, and every round's value.
int run_scaling(int steps, int64_t batch, int64_t min_len, int64_t max_len, int rounds, const std::vector<std::string>& kinds) {
  const int64_t d = 128;
  std::printf("{\"scaling\": {\"batch\": %lld, \"d_model\": %lld, \"heads\": 4, \"steps\": %d, \"rounds\": %d, \"rows\": [\n",
              (long long)batch, (long long)d, steps, rounds);
  bool first = true;
  for (int64_t L = min_len; L <= max_len; L *= 2) {
    std::vector<std::vector<double>> ms(kinds.size());
    for (int round = 0; round < rounds; round++)
      for (size_t k = 0; k < kinds.size(); k++) {
        const std::string& kind = kinds[k];
        Generator g(0), dg(1);
        std::shared_ptr<SequenceLayer> m;
        if (kind == "attention" || kind == "fused_attention" || kind == "qkv_attention" || kind == "flash_attention" ||
            kind == "mha") {
          AttentionOptions o;
          o.heads = 4;
          o.fused = kind == "fused_attention";
          o.packed = kind != "attention";
          const Prim p = kind == "qkv_attention" ? Prim::packed : kind == "flash_attention" ? Prim::flash : Prim::layer;
          m = std::make_shared<SelfAttention>(d, o, p, g);
        } else if (kind == "linear_attention") {
          m = std::make_shared<LinearAttention>(d, 4, "elu", false, g);
        } else if (kind == "s4d") {
          S4DOptions o;
          o.kernel.d_state = 64;
          m = std::make_shared<S4D>(d, o, g);
        } else {
          fail("bench_workloads scaling: unknown kind '" + kind +
               "' (attention, fused_attention, qkv_attention, flash_attention, mha, linear_attention, s4d)");
        }
        auto block = std::make_shared<MixerBlock>(m, d);
        block->train();
        Tensor x = randn({batch, L, d}, dg);
        auto loss1 = [&] {
          Var y = block->forward(Var(x));
          return mean(y * y);
        };
        ms[k].push_back(time_steps(*block, loss1, 1, steps).ms);
      }
    for (size_t k = 0; k < kinds.size(); k++) {
      std::printf("%s  {\"kind\": \"%s\", \"len\": %lld, \"ms_per_step\": %.2f, \"rounds_ms\": [", first ? "" : ",\n",
                  kinds[k].c_str(), (long long)L, median(ms[k]));
      for (size_t r = 0; r < ms[k].size(); r++) std::printf("%s%.2f", r ? ", " : "", ms[k][r]);
      std::printf("]}");
      first = false;
    }
    std::fflush(stdout);
  }
  std::printf("\n]}}\n");
  return 0;
}

// The attention primitives alone on qkv (B, T, 3 128), 4 heads (HS 32): forward, and forward + backward, ms (median of
// `steps` after one warm-up) and GFLOP/s counted as 4 T^2 HS per (b, h) forward (q k^T and p v, a multiply-add = 2),
// 14 T^2 HS forward + backward (the backward's five products: s again, dV, dP, dQ, dK). No dropout. Also per CPU
// second (user + system time of all threads): GFLOP per core-second, which a loaded machine changes far less.
int run_kernels(int steps, int64_t batch, int64_t L, const std::vector<std::string>& kinds) {
  const int64_t C = 128, NH = 4, HS = C / NH;
  Generator g(0);
  Var qkv(randn({batch, L, 3 * C}, g), true);
  Tensor dy = randn({batch, L, C}, g);
  const double unit = (double)batch * NH * L * L * HS / 1e9;  // GFLOP per T^2 HS
  for (const auto& kind : kinds) {
    auto run = [&](bool back) {
      Var y = kind == "flash_attention" ? flash_attention(qkv, NH, false, 0, true, g)
              : kind == "qkv_attention" ? qkv_attention(qkv, NH, false, 0, true, g)
                                        : (fail("bench_workloads kernels: kinds are qkv_attention, flash_attention"), Var());
      if (back) y.backward(dy);
    };
    double f_ms = 0, fb_ms = 0, f_cpu = 0, fb_cpu = 0;  // cpu: CPU seconds per call
    for (bool back : {false, true}) {
      std::vector<double> t;
      double c0 = 0;
      for (int i = 0; i <= steps; i++) {
        if (i == 1) c0 = cpu_s();
        const double t0 = now_s();
        run(back);
        if (i > 0) t.push_back(1000.0 * (now_s() - t0));
      }
      (back ? fb_ms : f_ms) = median(t);
      (back ? fb_cpu : f_cpu) = (cpu_s() - c0) / std::max(1, steps);
    }
    std::printf("{\"kernel\": \"%s\", \"batch\": %lld, \"len\": %lld, \"heads\": %lld, \"head_size\": %lld, \"threads\": %d, "
                "\"fwd_ms\": %.2f, \"fwd_gflops\": %.1f, \"fwd_gflop_per_cpu_s\": %.1f, \"fwd_bwd_ms\": %.2f, "
                "\"fwd_bwd_gflops\": %.1f, \"fwd_bwd_gflop_per_cpu_s\": %.1f}\n",
                kind.c_str(), (long long)batch, (long long)L, (long long)NH, (long long)HS, omp_get_max_threads(), f_ms,
                4 * unit / (f_ms / 1000), 4 * unit / f_cpu, fb_ms, 14 * unit / (fb_ms / 1000), 14 * unit / fb_cpu);
    std::fflush(stdout);
  }
  return 0;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= s.size()) {
    const size_t j = std::min(s.find(',', i), s.size());
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

int run_main(int argc, char** argv) {
  std::string name;
  int64_t len = 0, batch = 2, min_len = 256, max_len = 4096;
  bool batch_given = false;
  std::string device_arg = "cpu", precision = "fp32";
  int rounds = 1;
  std::string kinds = "attention,fused_attention,qkv_attention,flash_attention,linear_attention,s4d";  // scaling's
  bool kinds_given = false;
  int steps = 5, warmup = 2, threads = 2;
  bool profile = false;
  Attn attn = Attn::best;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    auto next_int = [&](int min) { return parse_int(a, next(), min); };
    if (a == "--len") len = next_int(1);
    else if (a == "--steps") steps = next_int(1);
    else if (a == "--warmup") warmup = next_int(0);
    else if (a == "--threads") threads = next_int(1);
    else if (a == "--batch") batch = next_int(1), batch_given = true;
    else if (a == "--device") device_arg = next();
    else if (a == "--precision") precision = next();
    else if (a == "--max-len") max_len = next_int(1);
    else if (a == "--min-len") min_len = next_int(1);
    else if (a == "--rounds") rounds = next_int(1);
    else if (a == "--kinds") kinds = next(), kinds_given = true;
    else if (a == "--attention") attn = parse_attn(next());
    else if (a == "--profile") profile = true;
    else if (a == "-h" || a == "--help") {
      print_usage(stdout);
      return 0;
    } else if (!a.empty() && a[0] != '-' && name.empty()) name = a;
    else usage_error("unknown argument '" + a + "'");
  }
  if (name.empty()) usage_error("name a workload");
  if (!contains(kWorkloads, name)) usage_error("unknown workload '" + name + "'");
  if (name == "kernels" && !kinds_given) kinds = "qkv_attention,flash_attention";
  if (name == "scaling" || name == "kernels") {
    if (split_commas(kinds).empty()) usage_error("--kinds names no kind");
    for (const auto& k : split_commas(kinds))
      if (!contains(name == "kernels" ? kKernelKinds : kScalingKinds, k)) usage_error("unknown kind '" + k + "' of " + name);
  }
  if (name == "scaling" && min_len > max_len) usage_error("--min-len " + std::to_string(min_len) + " is above --max-len " +
                                                          std::to_string(max_len));
  Device device = Device::cpu;
  try {
    device = harness::parse_device(device_arg);  // the two clear errors: no CUDA in the build, no device
  } catch (const harness::ConfigError& e) {
    if (device_arg != "cuda") usage_error(e.what());
    std::fprintf(stderr, "bench_workloads: %s\n", e.what());
    return 1;
  }
  if (device != Device::cpu && (name == "scaling" || name == "kernels"))
    usage_error(name + " times the CPU kernels; --device " + device_arg + " runs the four workloads only");
  if (device != Device::cpu && (attn == Attn::packed || attn == Attn::fused))
    usage_error("--attention packed and fused are CPU kernels; on --device " + device_arg +
                " attention is best (the layer's own path there: the device's flash primitive) or composed");
  if (precision != "fp32" && precision != "bf16") usage_error("--precision must be fp32 or bf16, found '" + precision + "'");
  set_matmul_precision(parse_precision(precision));
  if (precision == "bf16") std::fprintf(stderr, "bench_workloads: %s\n", precision_note().c_str());
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
  if (name == "scaling") return run_scaling(steps == 5 ? 2 : steps, batch, min_len, max_len, rounds, split_commas(kinds));
  if (name == "kernels") return run_kernels(steps, batch, len ? len : 4096, split_commas(kinds));

  static const std::pair<const char*, int64_t> kDefaultLen[] = {
      {"transformer_listops", 512}, {"s4d", 1024}, {"lstm_bits", 100}, {"gpt_char", 256}};
  if (len == 0)
    for (auto& [n, l] : kDefaultLen)
      if (name == n) len = l;
  Workload w = build(name, len, attn, device, batch_given ? batch : 0);
  StepStats s = time_steps(*w.model, w.loss, warmup, steps, profile, device);
  const double gflop = w.flops / 1e9;
  std::string device_fields = device == Device::cpu ? std::string()
      : ", \"device\": \"" + std::string(device_name(device)) + "\", \"batch\": " + std::to_string(w.tokens / len);
  if (precision == "bf16")  // which arithmetic the products really ran in (float32 where the CPU has no bf16)
    device_fields += std::string(", \"precision\": \"") + (bf16_products_active() ? "bf16" : "fp32 (bf16 unavailable)") + "\"";
  std::printf("{\"workload\": \"%s\", \"len\": %lld, \"params\": %lld, \"ms_per_step\": %.2f, \"tokens_per_s\": %.1f, "
              "\"peak_rss_mb\": %.1f, \"loss\": %.6f, \"model_gflop\": %.2f, \"gflops\": %.1f, \"minflt_per_step\": %.0f, "
              "\"alloc_peak_mb\": %.1f, \"cpu_ms_per_step\": %.1f, \"attention\": \"%s\", \"threads\": %d%s}\n",
              name.c_str(), (long long)len, (long long)w.model->num_parameters(), s.ms, w.tokens / (s.ms / 1000.0), peak_rss_mb(),
              s.loss, gflop, gflop / (s.ms / 1000.0), s.minflt_per_step, host_allocator_stats().peak_bytes_in_use / 1048576.0,
              s.cpu_ms,
              attn == Attn::best       ? (device != Device::cpu ? "best (device flash)"
                                          : len >= kFlashFrom ? "best (blocked)"
                                                              : "best (packed)")
              : attn == Attn::packed   ? "packed"
              : attn == Attn::composed ? "composed"
                                       : "fused",
              threads, device_fields.c_str());
  return 0;
}

}  // namespace

// An error while a workload runs (a shape the layers refuse, memory) is named on stderr, exit status 1.
int main(int argc, char** argv) {
  try {
    return run_main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_workloads: %s\n", e.what());
    return 1;
  }
}
