// apps/classify/classify.cpp - the smallest app on the harness (apps/common): any registry layer as the mixer of a small encoder,
// trained from scratch on any token-sequence classification task of the task registry. Axes: task x layer.
//   classify run  [--preset tiny] [--tasks listops] [--layers s4d,attention] [--seeds 0,1,2] [--set lr=3e-3] [--resume]
//   classify cell --task listops --layer lstm [--set data_path=<the task's official files, e.g. LRA's listops folder>]
// Model: nn::SequenceBackbone (Embedding -> `layers` x nn::ResidualBlock(the layer; a feed-forward where it wants
// one) -> LayerNorm) -> masked mean pool -> Linear. What the app writes: apps/common/results.h; what the harness does: experiment.h.
#include "apps/classify/classify.h"

#include "apps/common/batch_tensors.h"
#include "apps/common/stats.h"
#include "apps/common/typed_experiment.h"
#include "nn/models/sequence_backbone.h"
#include "optim/adam.h"
#include "optim/param_groups.h"
#include "tasks/registry.h"

using namespace dl;
namespace harness = dl::harness;

namespace classify {

struct Config {
  std::string task = "listops", layer = "s4d", data_path;  // data_path: the task's official files (tasks/registry.h)
  int seq_len = 128, train_size = 2000, val_size = 256, test_size = 512;
  int d_model = 64, layers = 2, batch = 32, steps = 300, warmup = 30, eval_every = 100, seed = 0;
  double lr = 2e-3, ssm_lr = 1e-3, weight_decay = 0.01, dropout = 0.0, clip = 1.0;
  template <class C, class F> static void fields(C& c, F&& f) {
    f("task", c.task), f("layer", c.layer), f("seq_len", c.seq_len), f("train_size", c.train_size), f("val_size", c.val_size);
    f("test_size", c.test_size), f("d_model", c.d_model), f("layers", c.layers), f("batch", c.batch), f("steps", c.steps);
    f("warmup", c.warmup), f("eval_every", c.eval_every), f("seed", c.seed), f("lr", c.lr), f("ssm_lr", c.ssm_lr);
    f("weight_decay", c.weight_decay), f("dropout", c.dropout), f("clip", c.clip), f("data_path", c.data_path);
  }
  void validate() const {  // sizes and rates; the task and the layer are checked as axis values
    const std::string key = task + "/" + layer;
    for (auto [name, v] :
         {std::pair{"seq_len", seq_len}, {"d_model", d_model}, {"layers", layers}, {"batch", batch}, {"steps", steps}})
      harness::require_positive(key, name, v);
    harness::require_positive(key, "lr", lr);
    harness::require_warmup(key, warmup, steps);
  }
};

// The framework's sequence backbone (nn/models/sequence_backbone.h) with a linear head on the masked mean.
struct Encoder : nn::SequenceBackbone {
  static nn::SequenceBackboneOptions options(const Config& c, const tasks::Dataset& d) {
    nn::SequenceBackboneOptions o;
    o.vocab = d.vocab_size, o.d_model = c.d_model, o.max_len = d.max_len, o.layers = c.layers;
    o.block.dropout = c.dropout, o.block.ffn_hidden = 2 * c.d_model;  // pre-norm LayerNorm blocks
    return o;
  }
  Encoder(const Config& c, const tasks::Dataset& d, Generator& g)
      : SequenceBackbone(options(c, d), nn::registry_mixer(c.layer, {c.dropout, /*causal=*/false, d.max_len}), g) {
    head = register_module("head", std::make_shared<nn::Linear>(c.d_model, d.num_classes, g));
  }
  std::string type_name() const override { return "Encoder"; }
  // (B, classes); `in` is on the host: the token ids are moved by the embedding, the pool's mask by pool, the labels
  // by cross_entropy (the layers take the host mask, as attention reads it on the host)
  Var forward(const harness::BatchTensors& in) { return head->forward(pool(encode(in.tokens, in.mask), in.mask)); }
  std::shared_ptr<nn::Linear> head;
};

// Accuracy on a split; its batches are checked against the model's limits first (the Encoder is built from the
// training split: a longer sequence, an id or a label another split has beyond it is named, not read).
static double accuracy(Encoder& m, const tasks::Dataset& d, harness::BatchLimits limits, int batch, const std::string& label) {
  NoGradGuard ng;
  m.eval();
  limits.split = d.name;
  tasks::Batcher bt(d, {batch, 0, /*shuffle=*/false});
  int64_t correct = 0;
  for (int64_t i = 0; i < bt.batches_per_epoch(); i++) {
    tasks::Batch b = bt.next();
    harness::check_batch(b, limits, label + " evaluation batch " + std::to_string(i));
    Tensor pred = argmax(m.forward(harness::to_tensors(b)), 1).to(Device::cpu);  // counted on the host
    for (int j = 0; j < b.batch_size; j++) correct += pred.data<int64_t>()[j] == b.labels[j];
  }
  m.train();
  return (double)correct / d.examples.size();
}

harness::CellResult run_cell(const Config& c, const harness::Cell&, const harness::RunContext& ctx) {
  tasks::TaskData data = tasks::make_task(c.task, {c.seq_len, c.train_size, c.val_size, c.test_size, (uint64_t)c.seed, c.data_path});
  if (data.train.feature_dim > 0 || !data.train.examples.at(0).tokens2.empty() || data.train.num_classes < 2)
    throw harness::ConfigError(c.task + ": classify takes single token sequences with labels (lra_benchmark takes the rest)");
  Generator g((uint64_t)c.seed);
  Encoder m(c, data.train, g);
  optim::GroupingOptions go;  // the layers' own parameter group (SSM A, B, dt), no decay for norms and biases
  go.lr = c.lr, go.weight_decay = c.weight_decay, go.no_decay_norm_bias_embed = true;
  go.rules = {optim::s4_rule(c.ssm_lr, nn::own_lr_parameter_names(m))};
  optim::AdamW opt(optim::make_param_groups(m, go), {});
  tasks::Batcher batches(data.train, {c.batch, (uint64_t)c.seed, /*shuffle=*/true, /*drop_last=*/true});
  harness::PhaseParts parts;
  parts.model = &m, parts.opt = &opt, parts.batches = &batches, parts.rngs = {{"dropout", &g}};
  // the Encoder is built from the training split: Embedding(vocab_size) rows, num_classes outputs, mixers of max_len
  parts.limits = harness::limits_of(data.train);
  optim::ScheduleConfig sc;
  sc.kind = "warmup_cosine", sc.warmup = c.warmup, sc.total = c.steps;
  parts.schedule = optim::make_schedule(sc);
  parts.loss = [&](const tasks::Batch& b, const harness::Step&) {
    const harness::BatchTensors in = harness::to_tensors(b);
    return cross_entropy(m.forward(in), in.labels);
  };
  parts.eval = [&] { return harness::EvalPoint{NAN, accuracy(m, data.val, parts.limits, c.batch, ctx.label)}; };
  harness::CellResult r;
  harness::PhaseResult pr = harness::run_phase({"train", c.steps, 1, c.clip, c.eval_every, c.eval_every}, parts, ctx, r.curve);
  r.metrics = {{"val_acc", accuracy(m, data.val, parts.limits, c.batch, ctx.label)},
               {"test_acc", accuracy(m, data.test, parts.limits, c.batch, ctx.label)}};
  r.test_examples = (int64_t)data.test.examples.size(), r.params = m.num_parameters();
  r.extra["val_examples"] = data.val.examples.size();
  r.steps_per_s = pr.seconds > 0 ? pr.steps_run / pr.seconds : 0;
  return r;
}

harness::Table report(const std::string& out, const harness::Preset& p, const std::vector<harness::CellResult>& rs) {
  harness::Table t{"classify (preset " + p.name + ")",
                   {"task", "layer", "seeds", "val acc", "test acc", "params", "steps/s"},
                   {false, false, true, true, true, true, true},
                   {},
                   {"Accuracies in %, mean ± standard error over seeds (one seed: binomial)."}};
  harness::Plot bars;  // test accuracy per task/layer
  bars.title = "classify: test accuracy (mean ± standard error over seeds)", bars.ylabel = "test accuracy (%)";
  bars.series = {harness::Series{"test", {}, {}, {}}};
  std::vector<std::string> names;
  std::map<std::string, std::vector<const harness::CellResult*>> by_key;
  for (auto& r : rs) by_key[r.cell.key()].push_back(&r);
  for (auto& [key, seeds] : by_key) {
    std::vector<double> val, test;
    for (auto* r : seeds) val.push_back(r->metric("val_acc")), test.push_back(r->metric("test_acc"));
    const harness::CellResult& f = *seeds.front();
    t.rows.push_back({f.cell.value("task"), f.cell.value("layer"), std::to_string(seeds.size()),
                      harness::format_mean_se(harness::accuracy_mean_se(val, f.extra.value("val_examples", 0))),
                      harness::format_mean_se(harness::accuracy_mean_se(test, f.test_examples)), std::to_string(f.params),
                      std::to_string((int)f.steps_per_s)});
    bars.series[0].y.push_back(100 * harness::mean_se(test).mean), bars.series[0].err.push_back(100 * harness::mean_se(test).se);
    names.push_back(key);
  }
  harness::plot_bars(bars, names, out + "/plots/test_accuracy");
  std::map<std::string, std::vector<harness::CurveArm>> curves;  // per task, one arm per layer
  for (auto& [key, seeds] : by_key) {
    harness::CurveArm arm{seeds.front()->cell.value("layer"), {}};
    for (auto* r : seeds) arm.seeds.push_back({{}, harness::phase_rows(harness::cell_log(out, *r), "train")});
    curves[seeds.front()->cell.value("task")].push_back(arm);
  }
  for (auto& [task, arms] : curves) {  // training loss and validation accuracy against the step
    harness::CurveText text;
    text.title = "classify " + task + ": mean over seeds (band: ± one standard error)", text.train = "training";
    harness::plot_learning_curves(text, arms, out + "/plots/" + task);
  }
  return t;
}

harness::Experiment experiment() {
  std::vector<std::string> layers;
  for (auto& l : nn::layer_registry()) layers.push_back(l.name);
  harness::Experiment e = harness::typed_experiment<Config>(
      "classify", "any registry layer, trained from scratch on a token classification task",
      std::string(DL_SOURCE_DIR) + "/apps/classify/presets",
      {{{"task", tasks::task_names()}, "", "a classification task"}, {{"layer", layers}, "", "a registry layer"}}, run_cell);
  e.report = report;
  return e;
}

}  // namespace classify

