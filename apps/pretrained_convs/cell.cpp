// apps/pretrained_convs/cell.cpp - see cell.h.
#include "cell.h"

#include <iostream>

#include "model.h"
#include "optim/adam.h"
#include "optim/schedule.h"
#include "pretrain.h"

namespace pconv {

using namespace dl;
namespace harness = dl::harness;

// Greedy-decoding accuracy on up to `limit` examples of a split (0: all), split over the ranks; each batch is
// checked against the model's limits first.
static DecodeCount decode_split(nn::Seq2SeqModel& m, const Seq2SeqTask& t, const tasks::Dataset& d, int batch, int64_t limit,
                                harness::Communicator& comm) {
  NoGradGuard ng;
  m.eval();
  const harness::BatchLimits limits = batch_limits(m.cfg, d);
  tasks::Batcher bt(d, {batch, 0, false});
  int64_t nb = bt.batches_per_epoch();
  if (limit > 0) nb = std::min<int64_t>(nb, (limit + batch - 1) / batch);
  double s[3] = {0, 0, 0};
  for (int64_t i = 0; i < nb; i++) {
    tasks::Batch b = bt.next();
    if (i % comm.size() != comm.rank()) continue;
    harness::check_batch(b, limits, "evaluation batch " + std::to_string(i));
    DecodeCount c = decode_and_count(m, b, t);
    s[0] += c.right, s[1] += c.not_a_label, s[2] += c.n;
  }
  comm.allreduce_sum(s, 3);
  m.train();
  return {(int64_t)s[0], (int64_t)s[1], (int64_t)s[2]};
}

static double val_loss(nn::Seq2SeqModel& m, const Seq2SeqTask& t, int batch, int64_t limit) {
  NoGradGuard ng;
  tasks::Batcher bt(t.data.val, {batch, 0, false});
  const int64_t nb = std::min<int64_t>(bt.batches_per_epoch(), std::max<int64_t>(1, (limit + batch - 1) / batch));
  double s = 0;
  const harness::BatchLimits limits = batch_limits(m.cfg, t.data.val);
  for (int64_t i = 0; i < nb; i++) {
    const tasks::Batch b = bt.next();
    harness::check_batch(b, limits, "validation loss batch " + std::to_string(i));
    Seq2SeqBatch x = to_batch(b, t.pair);
    s += m.forward(x.ids, x.mask, x.labels, x.segments).loss.item();
  }
  return s / nb;
}

harness::CellResult run_cell(const CellConfig& c, const harness::Cell& cell, const harness::RunContext& ctx) {
  const Seq2SeqTask& task = seq2seq_task(c);
  const ModelPlan plan = plan_model(c);
  Generator g((uint64_t)c.seed);
  nn::Seq2SeqModel m(plan.cfg, g);
  harness::CellResult res;
  res.params = m.num_parameters();
  res.extra["d_ff"] = plan.cfg.d_ff;
  res.extra["transformer_params"] = plan.transformer_params;
  if (c.regime == "pretrained") {
    Pretrained p = pretrained_model(c, ctx);
    nn::LoadOptions lo;
    lo.allow_missing = {"pair_block."};
    try {
      m.load(p.path, lo);
    } catch (const std::exception& e) {
      throw ConfigError(p.path + ": cannot be loaded into " + c.model + " (" + e.what() + ")");
    }
    nlohmann::json info = {{"file", p.path}};
    for (const char* k : {"val_loss", "seconds", "steps", "steps_per_s"})
      if (p.info.contains(k)) info[k] = p.info[k];
    res.extra["pretrained"] = info;
  }
  if (!ctx.quiet && ctx.writer())
    std::cerr << ctx.label << " " << c.model << ": " << res.params << " parameters (d_ff " << plan.cfg.d_ff
              << "; the Transformer has " << plan.transformer_params << ")\n";

  optim::AdamWOptions ao;
  ao.lr = c.lr, ao.weight_decay = c.weight_decay;
  optim::AdamW opt(m.parameters(true), ao);
  tasks::Batcher batches(task.data.train, {c.batch, (uint64_t)c.seed * 7919 + 11, true, true});
  harness::PhaseParts parts;
  parts.model = &m, parts.opt = &opt, parts.batches = &batches, parts.rngs = {{"init", &g}};
  parts.limits = batch_limits(plan.cfg, task.data.train);  // source and target ids in the model's vocabulary
  optim::ScheduleConfig sc;
  sc.kind = "constant * linear_warmup * rsqrt_normalized_decay", sc.warmup = c.warmup;  // peaks at lr (fairseq inverse_sqrt)
  parts.schedule = optim::make_schedule(sc);
  parts.loss = [&](const tasks::Batch& b, const harness::Step&) {
    Seq2SeqBatch x = to_batch(b, task.pair);
    return m.forward(x.ids, x.mask, x.labels, x.segments).loss;
  };
  parts.eval = [&] {
    const double vl = val_loss(m, task, c.batch, c.eval_examples);
    DecodeCount d = decode_split(m, task, task.data.val, c.batch, c.eval_examples, *ctx.comm);
    return harness::EvalPoint{vl, d.n ? (double)d.right / d.n : 0};
  };
  harness::PhaseResult pr =
      harness::run_phase({"finetune", c.steps, 1, c.clip, c.eval_every, c.checkpoint_every}, parts, ctx, res.curve);

  const DecodeCount val = decode_split(m, task, task.data.val, c.batch, 0, *ctx.comm),
                    test = decode_split(m, task, task.data.test, c.batch, 0, *ctx.comm);
  res.metrics = {{"val_acc", (double)val.right / val.n},
                 {"test_acc", (double)test.right / test.n},
                 {"test_not_a_label", (double)test.not_a_label / test.n}};
  res.test_examples = test.n;
  res.extra["val_examples"] = val.n;
  if (!task.ood_test.examples.empty()) {
    const DecodeCount ood = decode_split(m, task, task.ood_test, c.batch, 0, *ctx.comm);
    res.metrics["ood_acc"] = (double)ood.right / ood.n;
    res.extra["ood_examples"] = ood.n;
  }
  res.steps_per_s = pr.seconds > 0 ? pr.steps_run / pr.seconds : 0;
  dl::harness::save_cell_model(ctx, m, c.key(), cell.config);
  if (!ctx.quiet && ctx.writer())
    std::cerr << ctx.label << " val " << 100 * res.metrics["val_acc"] << "%  test " << 100 * res.metrics["test_acc"] << "%"
              << (res.metrics.count("ood_acc") ? "  held-out " + std::to_string(100 * res.metrics["ood_acc"]) + "%" : "") << "\n";
  return res;
}

}  // namespace pconv
