// apps/fpt/cell.cpp - see cell.h.
#include "cell.h"

#include <algorithm>
#include <iostream>

#include "data.h"
#include "model.h"
#include "nn/models/gpt2.h"
#include "optim/adam.h"
#include "pretrain.h"

namespace fpt {

using namespace dl;
namespace harness = dl::harness;

std::string source_of(const std::string& arm) {
  if (arm == "lstm") return "none";
  if (arm == "random" || arm == "full") return "random";
  if (arm == "bitmem") return "bit_memory";
  return "language";
}

// What FptModel reads from a batch (apps/common/batch_check.h): token ids in its own input embedding's
// vocab rows (GPT-2's wte is never used); labels in its output's classes; at most GPT-2's n_positions positions
// (the LSTM arm has no position limit). Bit tasks have features and bit targets (target_features), and the
// model's positions are the patched ones, not the batch's rows: nothing of theirs is checked here.
static harness::BatchLimits batch_limits(const FptTask& t, const CellConfig& c) {
  harness::BatchLimits l;
  if (t.bits) return l;
  l.vocab = (int32_t)t.vocab, l.classes = (int32_t)t.outputs, l.split = t.data.train.name;
  l.positions = c.arm == "lstm" ? 0 : (int32_t)gpt2_config(c).n_positions;
  return l;
}

// Accuracy on a split (bits or examples right over those counted), split over the ranks; each batch is checked
// against the model's limits (batch_limits above) first.
static double accuracy(FptModel& m, const FptTask& t, const tasks::Dataset& d, harness::BatchLimits limits, int batch,
                       int max_batches, harness::Communicator& comm) {
  NoGradGuard ng;
  m.eval();
  limits.split = d.name;
  tasks::Batcher bt(d, {batch, 0, false});
  int64_t nb = bt.batches_per_epoch();
  if (max_batches > 0) nb = std::min<int64_t>(nb, max_batches);
  double sums[2] = {0, 0};
  for (int64_t i = 0; i < nb; i++) {
    tasks::Batch b = bt.next();
    if (i % comm.size() != comm.rank()) continue;
    harness::check_batch(b, limits, "evaluation batch " + std::to_string(i));
    int64_t n = 0;
    sums[0] += m.correct(to_batch(t, b), &n), sums[1] += n;
  }
  comm.allreduce_sum(sums, 2);
  m.train();
  return sums[1] > 0 ? sums[0] / sums[1] : 0;
}

// Put the source's weights into the model's transformer.
static nlohmann::json load_source(FptModel& m, const CellConfig& c, const harness::RunContext& ctx) {
  const std::string source = source_of(c.arm);
  if (source == "none" || source == "random") return {{"source", source}};
  if (source == "language" && !c.pretrained.empty()) {  // a real Hugging Face GPT-2 file
    nn::GPT2Config fc = nn::gpt2_config_from_file(c.pretrained, c.heads);
    if (fc.n_embd != c.d_model || fc.n_layer != c.layers)
      throw ConfigError(c.pretrained + ": a GPT-2 with " + std::to_string(fc.n_layer) + " layers of width " +
                        std::to_string(fc.n_embd) + ", but the cell asks for " + std::to_string(c.layers) + " x " +
                        std::to_string(c.d_model) + " (--set layers=" + std::to_string(fc.n_layer) +
                        " --set d_model=" + std::to_string(fc.n_embd) + ")");
    Generator g(0);
    fc.dropout = c.dropout;
    nn::GPT2Model hf(fc, g);
    nn::load_gpt2_hf(hf, c.pretrained);
    m.transformer().load_state_dict(hf.transformer->state_dict());  // strict: the same architecture
    return {{"source", "language"}, {"file", c.pretrained}};
  }
  PretrainedInfo p = pretrained_transformer(source, c, ctx);
  nn::LoadOptions lo;
  lo.allow_missing = {"input.", "output.", "lstm."};
  m.load(p.path, lo);
  nlohmann::json out = {{"source", source}, {"file", p.path}};
  for (const char* k : {"val_loss_per_byte", "val_perplexity_per_byte", "val_bit_accuracy", "seconds", "steps"})
    if (p.info.contains(k)) out[k] = p.info[k];
  return out;
}

harness::CellResult run_cell(const CellConfig& c, const harness::Cell& cell, const harness::RunContext& ctx) {
  const FptTask& task = fpt_task(c);
  Generator g((uint64_t)c.seed);
  FptModel m(c, task, g);
  harness::CellResult res;
  res.extra["pretrained"] = load_source(m, c, ctx);
  const int frozen = m.freeze();
  res.params = m.num_parameters();
  res.extra["trainable_params"] = m.num_parameters(true);
  res.extra["frozen_tensors"] = frozen;

  optim::AdamOptions ao;  // universal-computation: torch.optim.Adam, no weight decay, no schedule
  ao.lr = c.lr;
  optim::Adam opt(m.parameters(true), ao);
  tasks::Batcher batches(task.data.train, {c.batch, (uint64_t)c.seed * 7919 + 5, true, true});
  harness::PhaseParts parts;
  parts.model = &m, parts.opt = &opt, parts.batches = &batches, parts.rngs = {{"dropout", &g}};
  parts.limits = batch_limits(task, c);
  parts.loss = [&](const tasks::Batch& b, const harness::Step&) { return m.loss(to_batch(task, b)); };
  parts.eval = [&] { return harness::EvalPoint{NAN, accuracy(m, task, task.data.val, parts.limits, c.batch, c.eval_batches, *ctx.comm)}; };
  harness::PhaseResult pr =
      harness::run_phase({"train", c.steps, c.accum, c.clip, c.eval_every, c.checkpoint_every}, parts, ctx, res.curve);

  const double val = accuracy(m, task, task.data.val, parts.limits, c.batch, 0, *ctx.comm),
               test = accuracy(m, task, task.data.test, parts.limits, c.batch, 0, *ctx.comm);
  res.metrics = {{"val_acc", val}, {"test_acc", test}};
  // bits: every bit of every example counts (the paper's per-bit accuracy); classification: every example
  res.test_examples = (int64_t)task.data.test.examples.size() * (task.bits ? task.readout * task.patch : 1);
  res.extra["val_examples"] = (int64_t)task.data.val.examples.size() * (task.bits ? task.readout * task.patch : 1);
  double best = 0;
  for (auto& p : res.curve) best = std::max(best, p.accuracy);
  for (auto& p : res.curve)  // training efficiency: the first evaluation within 1 point of the best one
    if (p.accuracy >= best - 0.01) {
      res.extra["steps_to_best"] = p.step;
      break;
    }
  res.steps_per_s = pr.seconds > 0 ? pr.steps_run / pr.seconds : 0;
  dl::harness::save_cell_model(ctx, m, c.key(), cell.config);
  if (!ctx.quiet)
    std::cerr << ctx.label << " val " << 100 * val << "%  test " << 100 * test << "%  (" << res.extra["trainable_params"]
              << " of " << res.params << " parameters trained)\n";
  return res;
}

}  // namespace fpt
