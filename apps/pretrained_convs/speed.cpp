// apps/pretrained_convs/speed.cpp - see speed.h.
#include "speed.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <random>
#include <sstream>

#include "apps/common/phase.h"
#include "apps/common/report.h"
#include "apps/common/results.h"
#include "data.h"
#include "model.h"
#include "optim/adam.h"

namespace pconv {

using namespace dl;
namespace harness = dl::harness;

double train_flops(const CellConfig& base, const std::string& model, int64_t d_ff, int64_t B, int64_t L, int64_t T) {
  CellConfig c = base;
  c.model = model;
  nn::Seq2SeqConfig cfg = plan_model(c).cfg;
  cfg.d_ff = d_ff;
  Generator g(0);
  return nn::train_step_flops(nn::Seq2SeqModel(cfg, g).forward_flops(B, L, T));
}

void run_speed(const CellConfig& base, const SpeedOptions& o) {
  struct Row {
    std::string model;
    int L = 0, B = 0;
    int64_t params = 0;
    double ms = 0, gflop = 0;
  };
  std::vector<Row> rows;
  std::mt19937 rng(0);
  for (auto& model : o.models) {
    CellConfig c = base;
    c.model = model;
    c.validate();
    const ModelPlan plan = plan_model(c);
    for (int L : o.lengths) {
      const int B = std::max(1, o.tokens / L);
      Generator g(0);
      nn::Seq2SeqModel m(plan.cfg, g);
      optim::AdamW opt(m.parameters(true), {});
      Tensor ids = Tensor::empty({B, L}, DType::i64), mask = full({B, L}, 1.0), labels = Tensor::empty({B, o.target}, DType::i64);
      for (int64_t i = 0; i < (int64_t)B * L; i++) ids.data<int64_t>()[i] = 5 + rng() % 256;
      for (int64_t i = 0; i < (int64_t)B * o.target; i++) labels.data<int64_t>()[i] = 5 + rng() % 256;
      auto step = [&] {
        auto t0 = std::chrono::steady_clock::now();
        Var loss = m.forward(ids, mask, labels).loss;
        loss.backward();
        harness::apply_update(m, opt, 1.0);
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      };
      step();  // warm-up
      std::vector<double> ts;
      double total = 0;
      while (ts.size() < 2 || total < o.min_seconds) ts.push_back(step()), total += ts.back();
      std::sort(ts.begin(), ts.end());
      Row r{model, L, B, plan.params, 1000 * ts[ts.size() / 2], nn::train_step_flops(m.forward_flops(B, L, o.target)) / 1e9};
      std::cerr << "[speed] " << model << " L=" << L << " B=" << B << ": " << std::fixed << std::setprecision(1) << r.ms
                << " ms/step, " << std::setprecision(2) << r.gflop << " GFLOP/step\n";
      rows.push_back(r);
    }
  }
  // slopes of log(ms) and log(GFLOP) per source token... over L >= 256
  nlohmann::json j = {
      {"tokens_per_batch", o.tokens}, {"target_len", o.target}, {"rows", nlohmann::json::array()}, {"slopes", {}}};
  harness::Table t;
  t.title = "Training step time and FLOPs against input length (" + std::to_string(o.tokens) + " source tokens per batch)";
  t.columns = {"model", "params", "L", "batch", "ms/step", "GFLOP/step", "GFLOP/s", "x Transformer time"};
  t.right = {false, true, true, true, true, true, true, true};
  harness::Plot pt, pf;
  pt.title = "Training step time vs input length", pt.xlabel = "input length", pt.ylabel = "ms per step",
  pt.logx = pt.logy = true;
  pt.key = "top left";
  pf = pt, pf.title = "Analytic training FLOPs per step vs input length", pf.ylabel = "GFLOP per step";
  for (auto& model : o.models) {
    harness::Series st, sf;
    st.title = sf.title = model;
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int n = 0;
    for (auto& r : rows) {
      if (r.model != model) continue;
      double tr = 0;
      for (auto& q : rows)
        if (q.model == "transformer" && q.L == r.L) tr = q.ms;
      t.rows.push_back({r.model, std::to_string(r.params), std::to_string(r.L), std::to_string(r.B),
                        std::to_string((int)std::lround(r.ms)), std::to_string(r.gflop).substr(0, 6),
                        std::to_string(r.gflop / (r.ms / 1000)).substr(0, 6),
                        tr > 0 ? std::to_string(r.ms / tr).substr(0, 4) : "-"});
      j["rows"].push_back(
          {{"model", r.model}, {"L", r.L}, {"batch", r.B}, {"params", r.params}, {"ms", r.ms}, {"gflop", r.gflop}});
      st.x.push_back(r.L), st.y.push_back(r.ms), sf.x.push_back(r.L), sf.y.push_back(r.gflop);
      if (r.L >= 256) {
        // per sequence: time of one length-L sequence = ms / B
        const double x = std::log((double)r.L), y = std::log(r.ms / r.B);
        sx += x, sy += y, sxx += x * x, sxy += x * y, n++;
      }
    }
    if (n >= 2) j["slopes"][model] = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    pt.series.push_back(st), pf.series.push_back(sf);
  }
  std::ostringstream slopes;
  for (auto& [m, s] : j["slopes"].items()) slopes << m << " " << std::fixed << std::setprecision(2) << (double)s << "; ";
  t.notes.push_back("Slope of log(time per sequence) against log(L) over L >= 256 (1 = linear, 2 = quadratic): " + slopes.str());
  t.notes.push_back("Batch = tokens / L sequences, target length " + std::to_string(o.target) +
                    "; the median of at least 2 timed steps after one warm-up, on this machine with the --threads given. "
                    "FLOPs: the model's own count (Seq2SeqModel::forward_flops: matrix products, attention pairs, "
                    "convolution taps, the head; elementwise work left out), x3 for forward and backward.");
  std::filesystem::create_directories(o.out + "/plots");
  harness::write_text_atomic(o.out + "/speed.json", j.dump(2) + "\n");
  harness::write_text_atomic(o.out + "/speed.md", t.markdown());
  harness::plot_lines(pt, o.out + "/plots/speed_time");
  harness::plot_lines(pf, o.out + "/plots/speed_flops");
  std::cout << t.markdown();
}

}  // namespace pconv
