// apps/lra_benchmark/cell.cpp - one cell: data -> (self-pretraining) -> fine-tuning -> evaluation (see cell.h).
#include "cell.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <random>

#include "data.h"
#include "kernels.h"
#include "nn/sequence_layer.h"
#include "optim/checkpoint.h"
#include "optim/param_groups.h"
#include "optim/schedule.h"

namespace lra {

using namespace dl;
namespace fs = std::filesystem;
namespace harness = dl::harness;

// The pretraining head and the classifier's: what a backbone file leaves out, and what a fine-tuning load may miss.
static const std::vector<std::string> kHeads = {"head.", "head_hidden.", "pretrain_head."};

static optim::Schedule schedule_for(const CellConfig& c, int steps) {
  optim::ScheduleConfig sc;
  sc.kind = c.schedule == "cosine" ? "warmup_cosine" : c.schedule == "linear" ? "warmup_linear_decay" : "linear_warmup";
  sc.warmup = std::min(c.warmup, steps / 2);  // one warmup setting serves both phases; never more than half a phase
  sc.total = steps;
  return optim::make_schedule(sc);
}

optim::AdamW make_optimizer(LraModel& m, const CellConfig& c, double lr) {
  optim::GroupingOptions go;
  go.lr = lr;
  go.weight_decay = c.weight_decay;
  go.rules = {optim::s4_rule(c.ssm_lr, nn::own_lr_parameter_names(m))};  // what the layers ask for, as the S4 repo does
  go.no_decay_norm_bias_embed = true;                                    // norms, biases and embeddings: no weight decay
  optim::AdamWOptions ao;
  ao.lr = lr;
  ao.weight_decay = c.weight_decay;
  return optim::AdamW(optim::make_param_groups(m, go), ao);
}

// One phase of the cell on the harness: pretraining (the SPT objective, validation loss) or fine-tuning
// (classification, validation accuracy). `dropout` is the generator the model's dropout layers draw from.
static harness::PhaseResult train(bool pretrain, LraModel& m, Generator& dropout, const tasks::TaskData& data,
                                  const CellConfig& c, const harness::RunContext& ctx, std::vector<harness::CurvePoint>& curve) {
  harness::PhaseSpec spec;
  spec.name = pretrain ? "pretrain" : "finetune";
  spec.steps = pretrain ? c.pretrain_steps : c.steps;
  spec.clip = c.clip, spec.eval_every = c.eval_every, spec.checkpoint_every = c.checkpoint_every;
  optim::AdamW opt = make_optimizer(m, c, pretrain ? c.pretrain_lr : c.lr);
  tasks::BatcherConfig bc;
  bc.batch_size = c.batch;
  bc.seed = (uint64_t)c.seed * 7919 + (pretrain ? 1 : 2);
  bc.drop_last = true;
  tasks::Batcher batches(data.train, bc);

  harness::PhaseParts parts;
  parts.model = &m, parts.opt = &opt, parts.schedule = schedule_for(c, spec.steps), parts.batches = &batches;
  parts.rngs = {{"dropout", &dropout}};
  parts.limits = batch_limits(pretrain, m, data.train);
  if (pretrain) {
    parts.loss = [&](const tasks::Batch& b, const harness::Step& s) {
      // resume-exact; each data-parallel rank corrupts its own rows with its own stream (rank 0's is the one-process one)
      std::mt19937_64 rng((uint64_t)c.seed * 1000003ull + (uint64_t)s.step + (uint64_t)s.micro * 1000000007ull +
                          (uint64_t)s.rank * 0x9E3779B97F4A7C15ull);
      return pretrain_loss(m, b, c, data.train.pad_id, rng);
    };
    parts.eval = [&] { return harness::EvalPoint{pretrain_val_loss(m, data.val, c, c.eval_batches, *ctx.comm), -1}; };
  } else {
    parts.loss = [&](const tasks::Batch& b, const harness::Step&) { return finetune_loss(m, b); };
    parts.eval = [&] {  // a regression task logs its loss on the standardised target and no accuracy
      SplitEval e = evaluate_split(m, data.val, c.batch, c.eval_batches, *ctx.comm);
      return harness::EvalPoint{e.loss, m.shape.regression ? -1 : e.accuracy};
    };
  }
  return harness::run_phase(spec, parts, ctx, curve);
}

harness::CellResult run_cell(const CellConfig& c, const harness::Cell& cell, const harness::RunContext& ctx) {
  const tasks::TaskData& data = task_data(c);
  const TaskShape shape = shape_of(data);
  if (shape.regression ? c.loss == "ce" : (c.loss == "mse" || c.loss == "l1"))
    throw ConfigError(c.key() + ": loss '" + c.loss + "' does not fit a " + (shape.regression ? "regression" : "classification") +
                      " task (" + (shape.regression ? "mse or l1" : "ce") + ", or \"\" for the task's own)");
  const bool spt = c.regime != "scratch", causal = c.regime == "spt-causal";
  harness::CellResult res;
  std::vector<harness::CurvePoint> curve_pre, curve_ft;
  int steps_run = 0;
  double train_seconds = 0, comm_seconds = 0;

  // 1. self-pretraining on the training split (its labels unused), or for text-masked on English text instead
  // (text_corpus_data), then keep the backbone only
  const std::string backbone = ctx.dir + "/backbone.safetensors";
  if (spt && !fs::exists(backbone)) {
    Generator g((uint64_t)c.seed);
    LraModel m(c, shape, causal, g);
    const tasks::TaskData corpus = c.regime == "text-masked" ? text_corpus_data(c, data) : tasks::TaskData{};
    harness::PhaseResult pr = train(true, m, g, c.regime == "text-masked" ? corpus : data, c, ctx, curve_pre);
    steps_run += pr.steps_run, train_seconds += pr.seconds, comm_seconds += pr.comm_seconds;
    harness::save_backbone(m, backbone, kHeads, {{"dl.cell", c.key()}, {"dl.pretrain_steps", std::to_string(c.pretrain_steps)}},
                           *ctx.comm);
  }
  if (spt) {
    if (curve_pre.empty()) curve_pre = harness::saved_curve(ctx.dir + "/pretrain");  // this process resumed after pretraining
    res.metrics["pretrain_final_loss"] = curve_pre.empty() ? -1 : curve_pre.back().val_loss;
  }

  // 2. fine-tuning: a fresh model with the next seed; SPT loads the backbone (the heads explicitly left out)
  Generator g((uint64_t)c.seed + 1);
  LraModel m(c, shape, causal, g);
  // The kernel's envelope where this cell's training started and after pretraining, for kernels.png. SPT cells
  // rebuild the pretraining model (same seed, so its initialisation) with its own generator - g drives the
  // fine-tuning below - and read the pretrained kernel from the backbone file, which also holds on --resume.
  KernelHistory kernels;
  if (!spt) {
    kernels.init = kernel_envelope(m, m.shape.max_len);
  } else {
    Generator pg((uint64_t)c.seed);
    LraModel pm(c, shape, causal, pg);
    kernels.init = kernel_envelope(pm, pm.shape.max_len);
    if (!kernels.init.empty()) {
      harness::load_backbone(pm, backbone, kHeads);
      kernels.pretrained = kernel_envelope(pm, pm.shape.max_len);
    }
  }
  if (spt && !optim::latest_checkpoint(ctx.dir + "/finetune")) {
    nn::LoadReport rep = harness::load_backbone(m, backbone, kHeads);
    if (!ctx.quiet) std::cerr << ctx.label << " loaded pretrained backbone: " << rep.str() << "\n";
  }
  res.params = m.num_parameters() - m.pretrain_head_params();
  harness::PhaseResult fr = train(false, m, g, data, c, ctx, curve_ft);
  steps_run += fr.steps_run, train_seconds += fr.seconds, comm_seconds += fr.comm_seconds;

  // 3. final evaluation on the whole validation split and the test split
  SplitEval val = evaluate_split(m, data.val, c.batch, 0, *ctx.comm),
            test = evaluate_split(m, data.test, c.batch, c.test_batches, *ctx.comm);
  res.test_examples = test.examples;
  if (shape.regression) {  // errors in the target's units; the curve's best (lowest) fine-tuning loss, standardised
    res.metrics["val_rmse"] = val.rmse, res.metrics["val_mae"] = val.mae;
    res.metrics["test_rmse"] = test.rmse, res.metrics["test_mae"] = test.mae;
    double best = -1;
    for (auto& p : curve_ft)
      if (p.phase == "finetune" && (best < 0 || p.val_loss < best)) best = p.val_loss;
    res.metrics["best_val_loss"] = best;
  } else {
    res.metrics["val_acc"] = val.accuracy;
    res.metrics["test_acc"] = test.accuracy;
    double best = 0;
    for (auto& p : curve_ft) best = std::max(best, p.accuracy);
    res.metrics["best_val_acc"] = best;
  }
  res.curve = curve_pre;
  res.curve.insert(res.curve.end(), curve_ft.begin(), curve_ft.end());
  res.extra = {{"steps", c.steps},
               {"pretrain_steps", spt ? c.pretrain_steps : 0},
               {"val_examples", val.examples},
               {"train_examples", (int64_t)data.train.examples.size()}};
  res.steps_per_s = train_seconds > 0 ? steps_run / train_seconds : 0;
  if (ctx.comm->size() > 1) res.extra["comm_s_per_step"] = steps_run > 0 ? comm_seconds / steps_run : 0;
  if (ctx.writer()) {
    dl::harness::save_cell_model(ctx, m, c.key(), cell.config);
    write_learned_kernels(m, ctx.dir, m.shape.max_len, kernels);
  }
  if (!ctx.quiet && shape.regression)
    std::cerr << ctx.label << " val RMSE " << val.rmse << "  test RMSE " << test.rmse << " (MAE " << test.mae << ")\n";
  else if (!ctx.quiet)
    std::cerr << ctx.label << " val " << 100 * val.accuracy << "%  test " << 100 * test.accuracy << "%\n";
  return res;
}

double evaluate_checkpoint(const CellConfig& c, const std::string& model_path, const std::string& split) {
  const tasks::TaskData& data = task_data(c);
  Generator g((uint64_t)c.seed);
  LraModel m(c, shape_of(data), c.regime == "spt-causal", g);
  m.load(model_path);
  const tasks::Dataset* d = split == "test" ? &data.test : split == "val" ? &data.val : split == "train" ? &data.train : nullptr;
  if (!d) throw ConfigError("unknown split '" + split + "' (train, val, test)");
  SplitEval e = evaluate_split(m, *d, c.batch, 0);
  return m.shape.regression ? e.rmse : e.accuracy;
}

}  // namespace lra
