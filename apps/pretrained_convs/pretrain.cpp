// apps/pretrained_convs/pretrain.cpp - see pretrain.h.
#include "pretrain.h"

#include <chrono>
#include <cmath>

#include "apps/common/model_cache.h"
#include "optim/adam.h"
#include "optim/schedule.h"
#include "tasks/brown.h"
#include "tasks/english.h"

namespace pconv {

using namespace dl;
namespace harness = dl::harness;

static std::string key_of(const CellConfig& c, const nn::Seq2SeqConfig& m) {
  auto list = [](const std::vector<int64_t>& v) {
    std::string out;
    for (size_t i = 0; i < v.size(); i++) out += (i ? "." : "") + std::to_string(v[i]);
    return out;
  };
  std::string k = m.mixer + "-d" + std::to_string(m.d_model) + "-ff" + std::to_string(m.d_ff) + "-L" +
                  std::to_string(m.num_layers) + "x" + std::to_string(m.num_decoder_layers) + "-h" + std::to_string(m.num_heads);
  if (m.mixer != "transformer") k += "-k" + list(m.kernel_sizes) + (m.mixer == "dilatedconv" ? "-dil" + list(m.dilations) : "");
  char buf[200];
  std::snprintf(buf, sizeof buf, "-s%d-b%d-len%d-w%d-lr%g-dens%g-span%g-win%d-f%lld", c.pt_steps, c.pt_batch, c.pt_len,
                c.pt_warmup, c.pt_lr, c.density, c.mean_span, c.pt_windows, (long long)tasks::fortune_file_count());
  return k + buf;
}

harness::PhaseResult span_corruption(const CellConfig& c, const PretrainData& data, nn::Seq2SeqModel& m, Generator& g,
                                     const harness::RunContext& ctx, std::vector<harness::CurvePoint>& curve) {
  optim::AdamWOptions ao;
  ao.lr = c.pt_lr, ao.weight_decay = c.weight_decay;
  optim::AdamW opt(m.parameters(true), ao);
  tasks::Batcher batches(data.train, {c.pt_batch, 31, true, true});
  harness::PhaseParts parts;
  parts.model = &m, parts.opt = &opt, parts.batches = &batches, parts.rngs = {{"init", &g}};
  parts.limits = batch_limits(m.cfg, data.train);  // corrupted windows and their spans: ids in the vocabulary, sentinels included
  optim::ScheduleConfig sc;
  sc.kind = "constant * linear_warmup * rsqrt_normalized_decay", sc.warmup = c.pt_warmup;
  parts.schedule = optim::make_schedule(sc);
  parts.loss = [&](const tasks::Batch& b, const harness::Step&) {
    Seq2SeqBatch x = to_batch(b, false);
    return m.forward(x.ids, x.mask, x.labels).loss;
  };
  parts.eval = [&] {
    NoGradGuard ng;
    tasks::Batcher vb(data.val, {c.pt_batch, 0, false});
    const harness::BatchLimits limits = batch_limits(m.cfg, data.val);
    const int64_t nb = std::min<int64_t>(vb.batches_per_epoch(), 8);  // the same 8 x pt_batch windows every time
    double s = 0;
    for (int64_t i = 0; i < nb; i++) {
      const tasks::Batch b = vb.next();
      harness::check_batch(b, limits, ctx.label + " evaluation batch " + std::to_string(i));
      Seq2SeqBatch x = to_batch(b, false);
      s += m.forward(x.ids, x.mask, x.labels).loss.item();
    }
    return harness::EvalPoint{s / nb, -1};
  };
  const int every = std::max(1, c.pt_steps / 10);
  return harness::run_phase({"span_corruption", c.pt_steps, 1, c.clip, every, every}, parts, ctx, curve);
}

Pretrained pretrained_model(const CellConfig& c, const harness::RunContext& ctx, bool rebuild) {
  if (!c.pretrained.empty()) return {c.pretrained, {{"file", c.pretrained}}};
  nn::Seq2SeqConfig mc = plan_model(c).cfg;
  mc.pair_attention = false;  // the _xattn variants share their base model's pretraining
  const std::string dir = tasks::data_cache_dir() + "/pretrained_convs/" + key_of(c, mc);
  harness::ModelCache cache(dir, ctx, rebuild);  // --jobs workers (or runs) may want it at once: one builds it
  Pretrained p{dir + "/model.safetensors", cache.info()};
  if (cache.built()) return p;
  const harness::RunContext pctx = cache.build_context("[" + mc.mixer + " span corruption]",
                                                       "[pretrained_convs] span-corruption pretraining of " + mc.mixer + " once");
  const auto t0 = std::chrono::steady_clock::now();
  PretrainData data = span_corruption_data(c.pt_len, c.density, c.mean_span, c.pt_windows, 0);
  Generator g(4242);
  nn::Seq2SeqModel m(mc, g);
  std::vector<harness::CurvePoint> curve;
  harness::PhaseResult r = span_corruption(c, data, m, g, pctx, curve);
  nlohmann::json jc = nlohmann::json::array();
  for (auto& pt : curve) jc.push_back(pt.to_json());
  p.info = {{"mixer", mc.mixer},
            {"params", m.num_parameters()},
            {"d_ff", mc.d_ff},
            {"steps", c.pt_steps},
            {"train_windows", data.train.examples.size()},
            {"val_windows", data.val.examples.size()},
            {"val_loss", curve.empty() ? NAN : curve.back().val_loss},
            {"seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()},
            {"steps_per_s", r.seconds > 0 ? r.steps_run / r.seconds : 0},
            {"curve", jc}};
  cache.finish(p.info, [&] { m.save(p.path, {{"format", "pt"}, {"dl.pretrained_convs", mc.mixer}}); });
  return p;
}

}  // namespace pconv
