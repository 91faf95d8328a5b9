// apps/studies/attention_approx.cpp - see attention_approx.h.
#include "attention_approx.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/common/experiment.h"
#include "apps/common/report.h"
#include "apps/common/results.h"
#include "apps/common/stats.h"
#include "cli.h"
#include "autograd/ops.h"
#include "nn/attention/attention.h"
#include "nn/attention/linear_attention.h"
#include "tensor/allocator.h"

namespace studies {

using namespace dl;
namespace harness = dl::harness;

static double frob(const Tensor& a) {
  Tensor c = a.contiguous();
  double s = 0;
  for (int64_t i = 0; i < c.numel(); i++) s += (double)c.data<float>()[i] * c.data<float>()[i];
  return std::sqrt(s);
}

double approx_error(const std::string& kind, int length, int m, double scale, int seed, int heads) {
  NoGradGuard ng;
  const int64_t HS = 64;
  Generator g((uint64_t)seed * 7919 + 1);
  Var q = Var(randn({1, heads, length, HS}, g)) * scale, k = Var(randn({1, heads, length, HS}, g)) * scale;
  Var v(randn({1, heads, length, HS}, g));
  nn::SDPAOptions so;
  Var exact = nn::scaled_dot_product_attention(q, k, v, so);
  Var phi_q, phi_k;
  if (kind == "favor") {
    Tensor W = nn::orthogonal_random_features(m, HS, g);
    phi_q = nn::favor_features(q, W, true), phi_k = nn::favor_features(k, W, false);
  } else if (kind == "elu") {
    phi_q = elu(q) + 1.0, phi_k = elu(k) + 1.0;
  } else if (kind == "relu") {
    phi_q = relu(q), phi_k = relu(k);
  } else {
    throw std::invalid_argument("approx_error: unknown kind '" + kind + "' (favor, elu, relu)");
  }
  Var y = nn::linear_attention(phi_q, phi_k, v, Tensor(), false);
  return frob((y - exact).data()) / frob(exact.data());
}

namespace {

using dl::harness::fixed;  // apps/common/report.h

struct Cost {
  double ms = 0, peak_mb = 0;
};

// One forward + backward of a whole mixer layer on (1, L, d_model); the median of 3 after a warm-up.
Cost time_layer(const std::string& kind, int L, const ApproxOptions& o) {
  Generator g(3);
  std::shared_ptr<nn::SequenceLayer> layer;
  if (kind == "softmax") {
    nn::AttentionOptions ao;
    ao.heads = o.heads;
    layer = std::make_shared<nn::MultiheadAttention>(o.d_model, ao, g);
  } else if (kind == "elu") {
    layer = std::make_shared<nn::LinearAttention>(o.d_model, o.heads, "elu", false, g);
  } else {
    layer = std::make_shared<nn::Performer>(o.d_model, o.heads, o.m, false, g);
  }
  Var x(randn({1, L, o.d_model}, g), true);
  auto once = [&] {
    auto t0 = std::chrono::steady_clock::now();
    Var y = layer->forward(x, Tensor());
    sum(y * y).backward();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  once();
  host_reset_peak();
  const size_t base = host_allocator_stats().bytes_in_use;
  std::vector<double> ts;
  for (int r = 0; r < 3; r++) ts.push_back(once());
  std::sort(ts.begin(), ts.end());
  return {1000 * ts[1], (double)(host_allocator_stats().peak_bytes_in_use - base) / 1e6};
}

}  // namespace

void run_attention_approx(const ApproxOptions& o) {
  std::filesystem::create_directories(o.out + "/plots");
  nlohmann::json j = {{"error_vs_features", nlohmann::json::array()},
                      {"error_vs_length", nlohmann::json::array()},
                      {"cost", nlohmann::json::array()}};
  harness::Table t;
  t.title = "Linear attention and Performer against softmax attention";
  t.columns = {"measure", "kind", "scale", "length", "features", "relative error (mean ± SE)"};
  t.right = {false, false, true, true, true, true};
  auto err = [&](const std::string& kind, int L, int m, double scale) {
    std::vector<double> e;
    for (int s = 0; s < o.seeds; s++) e.push_back(approx_error(kind, L, m, scale, s, o.heads));
    return harness::mean_se(e);
  };
  harness::Plot pf, pl;
  pf.title = "Relative error of the attention output vs random features (length " + std::to_string(o.length) + ")";
  pf.xlabel = "random features m", pf.ylabel = "|Y - Y_softmax| / |Y_softmax|", pf.logx = pf.logy = true, pf.key = "top right";
  pl = pf, pl.title = "Relative error vs length (m = " + std::to_string(o.m) + ")", pl.xlabel = "length";
  for (double scale : o.scales) {
    harness::Series s;
    s.title = "favor, scale " + fixed(scale, 1);
    for (int m : o.features) {
      harness::MeanSE e = err("favor", o.length, m, scale);
      s.x.push_back(m), s.y.push_back(e.mean), s.err.push_back(e.se);
      t.rows.push_back({"error vs m", "favor", fixed(scale, 1), std::to_string(o.length), std::to_string(m),
                        fixed(e.mean, 4) + " ± " + fixed(e.se, 4)});
      j["error_vs_features"].push_back({{"kind", "favor"}, {"scale", scale}, {"m", m}, {"mean", e.mean}, {"se", e.se}});
      std::cerr << "[attention-approx] favor scale " << scale << " m " << m << ": " << e.mean << "\n";
    }
    pf.series.push_back(s);
    for (const char* kind : {"elu", "relu"}) {
      harness::MeanSE e = err(kind, o.length, 0, scale);
      harness::Series c;
      c.title = std::string(kind) + ", scale " + fixed(scale, 1);
      for (int m : o.features) c.x.push_back(m), c.y.push_back(e.mean);
      pf.series.push_back(c);
      t.rows.push_back(
          {"error vs m", kind, fixed(scale, 1), std::to_string(o.length), "-", fixed(e.mean, 4) + " ± " + fixed(e.se, 4)});
      j["error_vs_features"].push_back({{"kind", kind}, {"scale", scale}, {"mean", e.mean}, {"se", e.se}});
    }
    for (const char* kind : {"favor", "elu"}) {
      harness::Series s2;
      s2.title = std::string(kind) + ", scale " + fixed(scale, 1);
      for (int L : o.lengths) {
        harness::MeanSE e = err(kind, L, o.m, scale);
        s2.x.push_back(L), s2.y.push_back(e.mean), s2.err.push_back(e.se);
        t.rows.push_back({"error vs length", kind, fixed(scale, 1), std::to_string(L),
                          kind == std::string("favor") ? std::to_string(o.m) : "-", fixed(e.mean, 4) + " ± " + fixed(e.se, 4)});
        j["error_vs_length"].push_back({{"kind", kind}, {"scale", scale}, {"L", L}, {"mean", e.mean}, {"se", e.se}});
      }
      pl.series.push_back(s2);
    }
  }
  harness::plot_lines(pf, o.out + "/plots/error_vs_features");
  harness::plot_lines(pl, o.out + "/plots/error_vs_length");
  t.notes.push_back("q, k ~ N(0, scale^2) per coordinate, v ~ N(0, 1); 4 heads of size 64; non-causal; " +
                    std::to_string(o.seeds) +
                    " seeds (a seed draws q, k, v and the random features). FAVOR+ is unbiased for the softmax kernel "
                    "(its error falls like 1/sqrt(m)); elu+1 and relu are different kernels (their error does not fall).");
  if (o.cost) {
    harness::Table c;
    c.title = "Cost of one forward + backward of the whole mixer (d_model " + std::to_string(o.d_model) + ", " +
              std::to_string(o.heads) + " heads, batch 1)";
    c.columns = {"layer", "length", "ms", "peak MB"};
    c.right = {false, true, true, true};
    harness::Plot ct, cm;
    ct.title = "Forward + backward time vs length", ct.xlabel = "length", ct.ylabel = "ms", ct.logx = ct.logy = true,
    ct.key = "top left";
    cm = ct, cm.title = "Peak memory of a forward + backward vs length", cm.ylabel = "MB";
    for (const char* kind : {"softmax", "elu", "performer"}) {
      harness::Series st, sm;
      st.title = sm.title = std::string(kind) + (kind == std::string("performer") ? " (m = " + std::to_string(o.m) + ")" : "");
      for (int L : o.cost_lengths) {
        Cost r = time_layer(kind, L, o);
        st.x.push_back(L), st.y.push_back(r.ms), sm.x.push_back(L), sm.y.push_back(r.peak_mb);
        c.rows.push_back({st.title, std::to_string(L), fixed(r.ms, 1), fixed(r.peak_mb, 1)});
        j["cost"].push_back({{"layer", kind}, {"L", L}, {"ms", r.ms}, {"peak_mb", r.peak_mb}});
        std::cerr << "[attention-approx] " << kind << " L " << L << ": " << r.ms << " ms, " << r.peak_mb << " MB\n";
      }
      ct.series.push_back(st), cm.series.push_back(sm);
    }
    harness::plot_lines(ct, o.out + "/plots/time_vs_length");
    harness::plot_lines(cm, o.out + "/plots/memory_vs_length");
    c.notes.push_back("softmax: MultiheadAttention on the path it chooses itself (nn/attention/attention.h); the median of 3 "
                      "timed runs after one warm-up; peak MB: the allocator's peak above what was in use before.");
    t.notes.push_back(c.markdown());
  }
  harness::write_text_atomic(o.out + "/attention_approx.json", j.dump(2) + "\n");
  harness::write_text_atomic(o.out + "/attention_approx.md", t.markdown());
  std::cout << t.markdown();
}

}  // namespace studies

// ---- the subcommand ---------------------------------------------------------------------------------------------
namespace studies {

void add_attention_approx_command(CLI::App& app) {
  auto o = std::make_shared<ApproxOptions>();
  auto features = std::make_shared<std::string>(), lengths = std::make_shared<std::string>(),
       cost_lengths = std::make_shared<std::string>();
  auto no_cost = std::make_shared<bool>(false);
  auto threads = std::make_shared<int>(2);
  CLI::App* aa = app.add_subcommand("attention-approx", "softmax vs linear attention vs Performer: error and cost");
  aa->add_option("--out", o->out, "output folder")->capture_default_str();
  aa->add_option("--seeds", o->seeds, "seeds per point")->capture_default_str()->check(harness::at_least(1));
  aa->add_option("--features", *features, "random-feature counts, e.g. 16,64,256");
  aa->add_option("--lengths", *lengths, "lengths for the error against length");
  aa->add_option("--cost-lengths", *cost_lengths, "lengths for time and memory");
  aa->add_flag("--no-cost", *no_cost, "skip the time and memory measurements");
  aa->add_option("--threads", *threads, "CPU threads")->capture_default_str()->check(harness::at_least(1));
  aa->callback([=] {
    if (!features->empty()) o->features = parse_ints(*features, "--features");
    if (!lengths->empty()) o->lengths = parse_ints(*lengths, "--lengths");
    if (!cost_lengths->empty()) o->cost_lengths = parse_ints(*cost_lengths, "--cost-lengths");
    o->cost = !*no_cost;
    harness::set_threads(*threads);
    run_attention_approx(*o);
  });
}

}  // namespace studies
