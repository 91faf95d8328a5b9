// apps/lra_benchmark/trainer.cpp - one cell: data -> (self-pretraining) -> fine-tuning -> evaluation.
#include "trainer.h"

#include <omp.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <iostream>
#include <map>
#include <mutex>
#include <random>

#include "model.h"
#include "optim/adam.h"
#include "optim/checkpoint.h"
#include "optim/clip.h"
#include "optim/param_groups.h"
#include "optim/schedule.h"
#include "tasks/batching.h"
#include "tasks/objectives.h"
#include "tasks/registry.h"
#include "tensor/safetensors.h"

namespace lra {

using namespace dl;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------------------
// data
const tasks::TaskData& task_data(const CellConfig& c) {
  static std::map<std::string, std::unique_ptr<tasks::TaskData>> cache;
  static std::mutex mu;
  std::string key = c.task + "|" + std::to_string(c.seq_len) + "|" + std::to_string(c.train_size) + "|" + std::to_string(c.val_size) +
                    "|" + std::to_string(c.test_size) + "|" + std::to_string(c.seed) + "|" + c.data_path;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[key];
  if (!slot) {
    tasks::TaskConfig tc;
    tc.seq_len = c.seq_len;
    tc.train_size = c.train_size, tc.val_size = c.val_size, tc.test_size = c.test_size;
    tc.seed = (uint64_t)c.seed;
    tc.data_path = c.data_path;
    slot = std::make_unique<tasks::TaskData>(tasks::make_task(c.task, tc));
    for (auto* d : {&slot->train, &slot->val, &slot->test})
      if (d->examples.empty()) throw tasks::DataError(c.task + ": split " + d->name + " is empty");
  }
  return *slot;
}

TaskShape shape_of(const tasks::TaskData& d) {
  TaskShape s;
  s.vocab = d.train.vocab_size;
  s.features = d.train.feature_dim;
  s.classes = d.train.num_classes;
  s.two_tower = !d.train.examples.front().tokens2.empty();
  int64_t longest = d.train.max_len;
  for (auto* ds : {&d.train, &d.val, &d.test})
    for (auto& e : ds->examples)
      longest = std::max({longest, tasks::example_length(e, ds->feature_dim), (int64_t)e.tokens2.size()});
  s.max_len = (int)longest;
  if (s.classes <= 0) throw tasks::DataError(d.train.name + ": not a classification task (num_classes = 0)");
  return s;
}

// Batch -> tensors. `second` picks tokens2 (the other tower of a retrieval pair).
static Inputs to_inputs(const tasks::Batch& b, bool second = false) {
  Inputs in;
  int64_t B = b.batch_size, T = second ? b.seq_len2 : b.seq_len;
  const auto& mask = second ? b.mask2 : b.mask;
  in.mask = Tensor::empty({B, T});
  for (int64_t i = 0; i < B * T; i++) in.mask.data<float>()[i] = mask[i];
  if (b.feature_dim == 0) {
    const auto& tok = second ? b.tokens2 : b.tokens;
    in.tokens = Tensor::empty({B, T}, DType::i64);
    for (int64_t i = 0; i < B * T; i++) in.tokens.data<int64_t>()[i] = tok[i];
  } else {  // continuous: append the (zero) mask channel the masked objective uses
    int64_t F = b.feature_dim;
    in.features = zeros({B, T, F + 1});
    float* o = in.features.data<float>();
    for (int64_t i = 0; i < B * T; i++)
      for (int64_t f = 0; f < F; f++) o[i * (F + 1) + f] = b.features[i * F + f];
  }
  return in;
}

static Tensor labels_of(const tasks::Batch& b) {
  Tensor y = Tensor::empty({b.batch_size}, DType::i64);
  for (int i = 0; i < b.batch_size; i++) y.data<int64_t>()[i] = b.labels[i];
  return y;
}

// ---------------------------------------------------------------------------------------------
// self-pretraining objectives on a batch (tasks/objectives.h does the per-sequence work)
struct PretrainBatch {
  Inputs in;
  Tensor targets;    // tokens: (B, T') i64 with -100 where no loss; continuous: (B, T, F)
  Tensor loss_mask;  // continuous: (B, T, F) 1 where masked
};

static PretrainBatch make_pretrain_batch(const tasks::Batch& b, bool second, const std::string& regime, double p,
                                         int vocab, int pad_id, std::mt19937_64& rng) {
  PretrainBatch pb;
  int64_t B = b.batch_size;
  if (b.feature_dim > 0) {  // continuous inputs: masked denoising only ([x (1-m), m], L1 on masked positions)
    if (regime == "spt-causal") fail("spt-causal needs token inputs; use spt-masked for continuous tasks");
    int64_t T = b.seq_len, F = b.feature_dim;
    pb.in.features = Tensor::empty({B, T, F + 1});
    pb.targets = Tensor::empty({B, T, F});
    pb.loss_mask = zeros({B, T, F});
    pb.in.mask = Tensor::empty({B, T});
    for (int64_t i = 0; i < B; i++) {
      std::vector<float> x(b.features.begin() + i * T * F, b.features.begin() + (i + 1) * T * F);
      auto obj = tasks::mask_features(x, (int32_t)F, p, rng);
      std::copy(obj.inputs.begin(), obj.inputs.end(), pb.in.features.data<float>() + i * T * (F + 1));
      std::copy(obj.targets.begin(), obj.targets.end(), pb.targets.data<float>() + i * T * F);
      for (int64_t t = 0; t < T; t++) {
        bool real = b.mask[i * T + t] != 0;
        pb.in.mask.data<float>()[i * T + t] = real;
        for (int64_t f = 0; f < F; f++) pb.loss_mask.data<float>()[(i * T + t) * F + f] = real ? obj.loss_mask[t] : 0.f;
      }
    }
    return pb;
  }
  const auto& tok = second ? b.tokens2 : b.tokens;
  const auto& len = second ? b.lengths2 : b.lengths;
  int64_t T = second ? b.seq_len2 : b.seq_len;
  int64_t To = regime == "spt-causal" ? T - 1 : T;  // causal LM predicts x[1..] from x[..T-2]
  pb.in.tokens = full({B, To}, pad_id, DType::i64);
  pb.targets = full({B, To}, tasks::kIgnoreIndex, DType::i64);
  pb.in.mask = zeros({B, To});
  for (int64_t i = 0; i < B; i++) {
    std::vector<int32_t> x(tok.begin() + i * T, tok.begin() + i * T + len[i]);
    if (x.size() < 2) continue;
    tasks::TokenObjective obj = regime == "spt-causal" ? tasks::causal_lm(x, pad_id) : tasks::mask_tokens(x, p, vocab, pad_id, rng);
    for (size_t t = 0; t < obj.inputs.size(); t++) {
      pb.in.tokens.data<int64_t>()[i * To + t] = obj.inputs[t];
      pb.targets.data<int64_t>()[i * To + t] = obj.targets[t];
      pb.in.mask.data<float>()[i * To + t] = 1.f;
    }
  }
  return pb;
}

static Var pretrain_loss(LraModel& m, const PretrainBatch& pb) {
  Var h = m.encode(pb.in);
  Var out = m.pretrain_logits(h);
  if (pb.loss_mask.defined()) return l1_loss(out, Var(pb.targets), Reduction::mean, pb.loss_mask);
  int64_t N = out.size(0) * out.size(1);
  return cross_entropy(reshape(out, {N, out.size(2)}), pb.targets.reshape({N}));
}

// ---------------------------------------------------------------------------------------------
// evaluation: accuracy over a split (all of it, or the first max_batches batches in dataset order)
static double accuracy(LraModel& m, const tasks::Dataset& d, int batch, int max_batches) {
  NoGradGuard ng;
  bool was_training = m.is_training();
  m.eval();
  tasks::BatcherConfig bc;
  bc.batch_size = batch;
  bc.shuffle = false;
  tasks::Batcher bt(d, bc);
  int64_t nb = bt.batches_per_epoch();
  if (max_batches > 0) nb = std::min<int64_t>(nb, max_batches);
  int64_t correct = 0, total = 0;
  for (int64_t i = 0; i < nb; i++) {
    tasks::Batch b = bt.next();
    Inputs a = to_inputs(b), c2;
    if (m.shape.two_tower) c2 = to_inputs(b, true);
    Tensor pred = argmax(m.classify(a, m.shape.two_tower ? &c2 : nullptr), 1);
    for (int j = 0; j < b.batch_size; j++) correct += pred.data<int64_t>()[j] == b.labels[j];
    total += b.batch_size;
  }
  m.train(was_training);
  return total ? (double)correct / total : 0.0;
}

static double pretrain_val_loss(LraModel& m, const tasks::Dataset& d, const CellConfig& c, int max_batches) {
  NoGradGuard ng;
  m.eval();
  tasks::BatcherConfig bc;
  bc.batch_size = c.batch;
  bc.shuffle = false;
  tasks::Batcher bt(d, bc);
  int64_t nb = std::min<int64_t>(bt.batches_per_epoch(), std::max(1, max_batches));
  std::mt19937_64 rng(12345);  // fixed corruption so validation losses are comparable across evaluations
  double s = 0;
  for (int64_t i = 0; i < nb; i++) {
    tasks::Batch b = bt.next();
    s += pretrain_loss(m, make_pretrain_batch(b, false, c.regime, c.mask_prob, m.shape.vocab, d.pad_id, rng)).item();
  }
  m.train();
  return s / nb;
}

// ---------------------------------------------------------------------------------------------
// one phase (pretraining or fine-tuning) with checkpoints and resume
struct PhaseResult {
  double final_loss = 0;
  int steps_run = 0;  // steps executed in this process (for steps/s)
  double seconds = 0;
};

// A learning curve as saved in a checkpoint's training state: [[phase, step, loss, accuracy, lr], ...].
static std::string curve_to_json(const std::vector<CurvePoint>& curve) {
  json cj = json::array();
  for (auto& p : curve) cj.push_back({p.phase, p.step, p.loss, p.accuracy, p.lr});
  return cj.dump();
}
static std::vector<CurvePoint> curve_from_json(const std::string& text) {
  std::vector<CurvePoint> curve;
  for (auto& p : json::parse(text)) curve.push_back({p.at(0), p.at(1), p.at(2), p.at(3), p.at(4)});
  return curve;
}

// Drop the rows of `phase` after `step` (they were written after the checkpoint a resumed run restarts from).
static void truncate_metrics_csv(const std::string& csv, const std::string& phase, int step) {
  std::ifstream in(csv);
  if (!in) return;
  std::string line, kept;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    bool drop = f.size() > 2 && f[1] == phase && std::atoi(f[2].c_str()) > step;
    if (!drop) kept += line + "\n";
  }
  write_text_atomic(csv, kept);
}

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
  // what the layers ask for (S4/S4D/DLR's A, B, dt): their own lr and no weight decay, as the S4 repo does
  go.rules = {optim::s4_rule(c.ssm_lr, nn::own_lr_parameter_names(m))};
  go.no_decay_norm_bias_embed = true;  // norms, biases and embeddings: no weight decay
  optim::AdamWOptions ao;
  ao.lr = lr;
  ao.weight_decay = c.weight_decay;
  return optim::AdamW(optim::make_param_groups(m, go), ao);
}

void optimizer_step(LraModel& m, optim::AdamW& opt, const CellConfig& c, const Var& loss) {
  loss.backward();
  if (c.clip > 0) optim::clip_grad_norm(m.parameters(true), c.clip);
  opt.step();
  opt.zero_grad();
}

static PhaseResult run_phase(const std::string& phase, LraModel& m, const tasks::TaskData& data, const CellConfig& c,
                             const std::string& dir, const RunOptions& o, Generator& dropout_gen, std::vector<CurvePoint>& curve,
                             const std::string& csv) {
  bool pretrain = phase == "pretrain";
  int steps = pretrain ? c.pretrain_steps : c.steps;
  double lr = pretrain ? c.pretrain_lr : c.lr;
  optim::AdamW opt = make_optimizer(m, c, lr);
  optim::Schedule sched = schedule_for(c, steps);

  tasks::BatcherConfig bc;
  bc.batch_size = c.batch;
  bc.seed = (uint64_t)c.seed * 7919 + (pretrain ? 1 : 2);
  bc.drop_last = true;
  tasks::Batcher batcher(data.train, bc);

  int start = 0;
  double loss_ema = 0;  // the smoothed training loss shown and logged; part of the saved state
  std::string label = "[" + c.key() + "] " + phase;
  if (o.resume) {
    if (auto ck = optim::latest_checkpoint(dir)) {
      optim::TrainingState st = optim::load_checkpoint(dir, m, opt);
      start = (int)st.step;
      batcher.set_position(tasks::DataPosition::from_string(st.data_position));
      st.restore_rng("dropout", dropout_gen);
      curve = curve_from_json(st.extra.at("curve"));
      truncate_metrics_csv(csv, phase, start);  // rows logged after the checkpoint will be logged again
      loss_ema = std::stod(st.extra.at("loss_ema"));
      if (!o.quiet) std::cerr << label << ": resumed from step " << start << " (" << dir << ")\n";
    }
  }

  auto save = [&](int step) {
    optim::TrainingState st;
    st.step = step;
    st.data_position = batcher.position().to_string();
    st.save_rng("dropout", dropout_gen);
    st.extra["curve"] = curve_to_json(curve);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", loss_ema);  // round-trips exactly
    st.extra["loss_ema"] = buf;
    optim::save_checkpoint(dir, m, opt, st);
  };
  auto log_point = [&](const CurvePoint& p) {
    curve.push_back(p);
    append_metrics_csv(csv, c.key(), p);
  };

  m.train();
  Progress bar(label, steps, start, o.quiet);
  auto t0 = Clock::now();
  PhaseResult r;
  for (int step = start; step < steps; step++) {
    optim::apply_schedule(opt, sched, step);
    tasks::Batch b = batcher.next();
    Var loss;
    if (pretrain) {
      std::mt19937_64 rng((uint64_t)c.seed * 1000003ull + (uint64_t)step);  // per-step stream: resume-exact
      loss = pretrain_loss(m, make_pretrain_batch(b, false, c.regime, c.mask_prob, m.shape.vocab, data.train.pad_id, rng));
      if (m.shape.two_tower)  // both towers see their own corrupted sequence
        loss = (loss + pretrain_loss(m, make_pretrain_batch(b, true, c.regime, c.mask_prob, m.shape.vocab, data.train.pad_id, rng))) * 0.5;
    } else {
      Inputs a = to_inputs(b), a2;
      if (m.shape.two_tower) a2 = to_inputs(b, true);
      loss = cross_entropy(m.classify(a, m.shape.two_tower ? &a2 : nullptr), labels_of(b));
    }
    optimizer_step(m, opt, c, loss);
    double lv = loss.item();
    if (!std::isfinite(lv)) throw std::runtime_error(label + ": loss is " + std::to_string(lv) + " at step " + std::to_string(step) + " (lower lr?)");
    loss_ema = step == 0 ? lv : 0.95 * loss_ema + 0.05 * lv;
    r.steps_run++;
    int done = step + 1;
    bool eval_now = (c.eval_every > 0 && done % c.eval_every == 0) || done == steps;
    double acc = -1;
    if (eval_now) {
      if (pretrain) log_point({phase, done, pretrain_val_loss(m, data.val, c, c.eval_batches), -1, opt.lr()});
      else log_point({phase, done, loss_ema, acc = accuracy(m, data.val, c.batch, c.eval_batches), opt.lr()});
    }
    bar.update(done, loss_ema, acc);
    if ((c.checkpoint_every > 0 && done % c.checkpoint_every == 0) || done == steps) save(done);
    if (o.stop_after >= 0 && r.steps_run >= o.stop_after && done < steps)
      throw Interrupted(label + ": stopped after " + std::to_string(r.steps_run) + " steps (stop_after)");
  }
  bar.finish();
  r.final_loss = loss_ema;
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

// ---------------------------------------------------------------------------------------------
// The convolution kernel of the first block's mixer as a float32 (directions, H, L) tensor; undefined for layers
// without one (SequenceLayer::learned_kernel).
static Tensor first_ssm_kernel(LraModel& m, int64_t L) {
  if (m.num_blocks() == 0) return Tensor();
  return m.block(0).mixer().learned_kernel(L);
}

std::vector<float> kernel_envelope(LraModel& m, int64_t L) {
  Tensor k = first_ssm_kernel(m, L);
  if (!k.defined()) return {};
  const int64_t rows = k.size(0) * k.size(1), n = k.size(2);
  const float* pk = k.data<float>();
  std::vector<float> env(n, 0.f);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t l = 0; l < n; l++) env[l] = std::max(env[l], std::fabs(pk[r * n + l]));
  return env;
}

void write_learned_kernels(LraModel& m, const std::string& cdir, int64_t L, const KernelHistory& hist) {
  Tensor k = first_ssm_kernel(m, L);
  if (!k.defined()) return;
  const int64_t H = k.size(1), n = std::min<int64_t>(k.size(2), 512), shown = std::min<int64_t>(H, 4);
  const float* pk = k.data<float>();
  std::ostringstream dat;
  dat << "# lag l, then K[0, h, l] for h = 0.." << shown - 1 << " (first block, first direction)\n";
  for (int64_t l = 0; l < n; l++) {
    dat << l;
    for (int64_t h = 0; h < shown; h++) dat << " " << pk[h * k.size(2) + l];
    dat << "\n";
  }
  write_text_atomic(cdir + "/kernels.dat", dat.str());

  // The paper's Figure 4 statistic: max over channels (and both directions) of |K[., ., l]|, here before training,
  // after self-pretraining (SPT cells) and after fine-tuning.
  std::vector<std::pair<std::string, std::vector<float>>> cols;
  if (!hist.init.empty()) cols.push_back({"initialisation", hist.init});
  if (!hist.pretrained.empty()) cols.push_back({"after pretraining", hist.pretrained});
  cols.push_back({"after fine-tuning", kernel_envelope(m, L)});
  std::ostringstream env;
  env << "# lag l, then max over channels and directions of |K[., ., l]| (first block):";
  for (auto& [name, v] : cols) env << " " << name << ";";
  env << "\n";
  for (int64_t l = 0; l < n; l++) {
    env << l;
    for (auto& [name, v] : cols) {
      if ((int64_t)v.size() <= l) throw std::logic_error("write_learned_kernels: '" + name + "' has " + std::to_string(v.size()) + " lags, expected at least " + std::to_string(n));
      env << " " << v[l];
    }
    env << "\n";
  }
  write_text_atomic(cdir + "/kernels_max.dat", env.str());

  if (!have_gnuplot()) return;
  std::ostringstream gp;
  gp << "set terminal pngcairo size 800,800 noenhanced\nset output '" << cdir << "/kernels.png'\n"
     << "set multiplot layout 2,1\nset grid\nset xlabel 'lag l'\n"
     << "set title 'max over channels of |K[c, l]|, block 0: " << m.cfg.key() << "'\nset ylabel 'max_c |K[c, l]|'\n"
     << "set logscale y\nplot ";
  for (size_t i = 0; i < cols.size(); i++)
    gp << (i ? ", " : "") << "'" << cdir << "/kernels_max.dat' using 1:" << i + 2 << " with lines title '" << cols[i].first << "'";
  gp << "\nunset logscale y\nset title 'learned kernels of the first channels (after fine-tuning)'\nset ylabel 'K[h, l]'\nplot ";
  for (int64_t h = 0; h < shown; h++)
    gp << (h ? ", " : "") << "'" << cdir << "/kernels.dat' using 1:" << h + 2 << " with lines title 'channel " << h << "'";
  gp << "\nunset multiplot\n";
  write_text_atomic(cdir + "/kernels.gp", gp.str());
  run_gnuplot(cdir + "/kernels.gp");
}

// Loading a pretrained backbone into a classifier is an explicit partial load: the heads may be missing.
static nn::LoadOptions backbone_load_options() {
  nn::LoadOptions lo;
  lo.allow_missing = {"head.", "head_hidden.", "pretrain_head."};
  return lo;
}

CellResult run_cell(const CellConfig& c, const RunOptions& o) {
  if (o.threads > 0) omp_set_num_threads(o.threads);
  std::string cdir = cell_dir(o.out, c.task, c.model, c.regime);
  fs::create_directories(cdir);
  std::string csv = cdir + "/metrics.csv";
  if (!o.resume) {  // a fresh run of this cell: forget earlier checkpoints and logs
    fs::remove_all(cdir + "/pretrain");
    fs::remove_all(cdir + "/finetune");
    fs::remove(csv);
    fs::remove(cdir + "/backbone.safetensors");
  }
  const tasks::TaskData& data = task_data(c);
  TaskShape shape = shape_of(data);
  bool causal = c.regime == "spt-causal";
  auto t0 = Clock::now();
  CellResult res;
  res.task = c.task, res.model = c.model, res.regime = c.regime, res.config = c.to_json();
  std::vector<CurvePoint> curve_pre, curve_ft;
  int steps_run = 0;
  double train_seconds = 0;

  // 1. self-pretraining on the training split (its labels unused), then keep the backbone only
  std::string backbone = cdir + "/backbone.safetensors";
  if (c.regime != "scratch" && !fs::exists(backbone)) {
    Generator g((uint64_t)c.seed);
    LraModel m(c, shape, causal, g);
    PhaseResult pr = run_phase("pretrain", m, data, c, cdir + "/pretrain", o, g, curve_pre, csv);
    steps_run += pr.steps_run, train_seconds += pr.seconds;
    std::map<std::string, Tensor> sd;
    for (auto& [n, t] : m.state_dict())
      if (!n.starts_with("head") && !n.starts_with("pretrain_head")) sd[n] = t;
    save_safetensors(backbone, sd, {{"format", "pt"}, {"dl.cell", c.key()}, {"dl.pretrain_steps", std::to_string(c.pretrain_steps)}});
  }
  if (c.regime != "scratch") {  // the pretraining curve (also when this process resumed after pretraining)
    if (curve_pre.empty()) {
      if (auto ck = optim::latest_checkpoint(cdir + "/pretrain")) {
        TensorFile f = load_safetensors(ck->state_path);
        auto it = f.metadata.find("extra.curve");
        if (it != f.metadata.end()) curve_pre = curve_from_json(it->second);
      }
    }
    res.pretrain_final_loss = curve_pre.empty() ? -1 : curve_pre.back().loss;
  }

  // 2. fine-tuning: a fresh model with the same seed; SPT loads the backbone (head.* explicitly left out)
  Generator g((uint64_t)c.seed + 1);
  LraModel m(c, shape, causal, g);
  // The SSM kernel's envelope where this cell's training started and after pretraining, for kernels.png. SPT cells
  // rebuild the pretraining model (same seed, so its initialisation) with its own generator - g drives the
  // fine-tuning below - and read the pretrained kernel from the backbone file, which also holds on --resume.
  KernelHistory kernels;
  if (c.regime == "scratch") {
    kernels.init = kernel_envelope(m, m.shape.max_len);
  } else {
    Generator pg((uint64_t)c.seed);
    LraModel pm(c, shape, causal, pg);
    kernels.init = kernel_envelope(pm, pm.shape.max_len);
    if (!kernels.init.empty()) {
      pm.load(backbone, backbone_load_options());
      kernels.pretrained = kernel_envelope(pm, pm.shape.max_len);
    }
  }
  if (c.regime != "scratch" && !optim::latest_checkpoint(cdir + "/finetune")) {
    nn::LoadReport rep = m.load(backbone, backbone_load_options());
    if (!o.quiet) std::cerr << "[" << c.key() << "] loaded pretrained backbone: " << rep.str() << "\n";
  }
  res.params = m.num_parameters() - m.pretrain_head_params();
  PhaseResult fr = run_phase("finetune", m, data, c, cdir + "/finetune", o, g, curve_ft, csv);
  steps_run += fr.steps_run, train_seconds += fr.seconds;

  // 3. final evaluation on the whole validation split and the test split
  res.val_acc = accuracy(m, data.val, c.batch, 0);
  res.test_acc = accuracy(m, data.test, c.batch, c.test_batches);
  for (auto& p : curve_ft) res.best_val_acc = std::max(res.best_val_acc, p.accuracy);
  res.curve = curve_pre;
  res.curve.insert(res.curve.end(), curve_ft.begin(), curve_ft.end());
  res.steps = c.steps, res.pretrain_steps = c.regime == "scratch" ? 0 : c.pretrain_steps;
  res.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  res.steps_per_s = train_seconds > 0 ? steps_run / train_seconds : 0;
  m.save(cdir + "/model.safetensors", {{"format", "pt"}, {"dl.cell", c.key()}, {"dl.config", c.to_json().dump()}});
  write_learned_kernels(m, cdir, m.shape.max_len, kernels);
  write_text_atomic(cdir + "/result.json", res.to_json().dump(2) + "\n");
  if (!o.quiet)
    std::cerr << "[" << c.key() << "] val " << 100 * res.val_acc << "%  test " << 100 * res.test_acc << "%  (" << (int)res.wall_s << " s)\n";
  return res;
}

double evaluate_checkpoint(const CellConfig& c, const std::string& model_path, const std::string& split) {
  const tasks::TaskData& data = task_data(c);
  Generator g((uint64_t)c.seed);
  LraModel m(c, shape_of(data), c.regime == "spt-causal", g);
  m.load(model_path);
  const tasks::Dataset& d = split == "test" ? data.test : split == "val" ? data.val : split == "train" ? data.train
                                                                                   : throw ConfigError("unknown split '" + split + "' (train, val, test)");
  return accuracy(m, d, c.batch, 0);
}

}  // namespace lra
