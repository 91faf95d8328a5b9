// apps/pretrained_convs - "Are Pre-trained Convolutions Better than Pre-trained Transformers?" (Tay, Dehghani, Gupta,
// Bahri, Aribandi, Qin, Metzler 2021): convolutional seq2seq models against a Transformer of the same size, each
// fine-tuned from scratch and after T5 span-corruption pretraining.
//
//   pretrained_convs run      [--preset tiny|small|paper|FILE] [--tasks ..] [--models ..] [--regimes ..] [--seeds 0,1,2]
//   pretrained_convs cell     --task sentiment --model lightconv [--regime scratch|pretrained] [--set k=v]..
//   pretrained_convs finetune --task sentiment --model lightconv ..   (= cell --regime pretrained)
//   pretrained_convs pretrain --model lightconv [--preset ..] [--set k=v]..   rebuild the cached pretraining
//   pretrained_convs eval     --cell DIR [--split val|test|ood]
//   pretrained_convs predict  --cell DIR (--text TEXT.. | --file FILE)   greedy outputs for your own inputs, a line each
//   pretrained_convs export   --cell DIR --onnx FILE [--batch 4] [--seed 0]   the model as ONNX + check file (export.h)
//   pretrained_convs speed    [--preset ..] [--lengths 64,..,4096] [--models ..] [--tokens 8192] [--out DIR]
//   pretrained_convs list
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "app.h"
#include "apps/common/experiment.h"
#include "apps/common/stats.h"
#include "cell.h"
#include "config.h"
#include "data.h"
#include "export.h"
#include "model.h"
#include "pretrain.h"
#include "speed.h"
#include "tasks/tokenizer.h"  // special_ids
#include "tensor/safetensors.h"

using namespace pconv;
namespace harness = dl::harness;

static void eval_cell(const std::string& cell_path, const std::string& split) {
  const std::string path = dl::harness::cell_model_file(cell_path);
  const CellModel cm = load_cell_model(path);
  const CellConfig& c = cm.config;
  dl::nn::Seq2SeqModel& m = *cm.model;
  const Seq2SeqTask& t = seq2seq_task(c);
  const dl::tasks::Dataset* d = split == "val"    ? &t.data.val
                                : split == "test" ? &t.data.test
                                : split == "ood"  ? &t.ood_test
                                                  : nullptr;
  if (!d || d->examples.empty())
    throw ConfigError("--split " + split + ": " + c.task + " has val, test" + (t.ood_test.examples.empty() ? "" : ", ood"));
  dl::NoGradGuard ng;
  dl::tasks::Batcher bt(*d, {c.batch, 0, false});
  const dl::harness::BatchLimits limits = batch_limits(m.cfg, *d);
  DecodeCount n;
  for (int64_t i = 0; i < bt.batches_per_epoch(); i++) {
    const dl::tasks::Batch b = bt.next();
    dl::harness::check_batch(b, limits, path + ": evaluation batch " + std::to_string(i));
    DecodeCount k = decode_and_count(m, b, t);
    n.right += k.right, n.not_a_label += k.not_a_label, n.n += k.n;
  }
  std::cout << c.key() << " " << split << " accuracy " << 100.0 * n.right / n.n << "% of " << n.n
            << " (not a label: " << 100.0 * n.not_a_label / n.n << "%)\n";
}

// The greedy output of a finished cell's model for the user's own inputs (--text, repeatable, or --file: one input a
// line), one line each in order; a pair task's input is its two sentences separated by a tab. Inputs are encoded as the
// task's examples are (encode_input), batched as eval batches them.
static void predict_cell(const std::string& cell_path, std::vector<std::string> texts, const std::string& file) {
  const std::string path = dl::harness::cell_model_file(cell_path);
  const CellModel cm = load_cell_model(path);
  const CellConfig& c = cm.config;
  dl::nn::Seq2SeqModel& m = *cm.model;
  if (!file.empty()) {
    std::istringstream in(harness::read_text(file));
    for (std::string line; std::getline(in, line);) texts.push_back(line);
  }
  if (texts.empty()) throw ConfigError("predict: no input: give --text TEXT (repeatable) or --file FILE (one input a line)");
  const Seq2SeqTask& t = seq2seq_task(c);
  dl::tasks::Dataset d;
  d.name = "predict", d.vocab_size = vocab_size(), d.pad_id = dl::tasks::special_ids::pad;
  for (size_t i = 0; i < texts.size(); i++) {
    std::string x = texts[i];
    if (t.pair) {
      const size_t tab = x.find('\t');
      if (tab == std::string::npos || x.find('\t', tab + 1) != std::string::npos)
        throw ConfigError("predict: input " + std::to_string(i + 1) + (file.empty() ? "" : " (" + file + " line " +
                          std::to_string(i + 1) + ")") + ": " + c.task + " takes a pair of sentences, separated by one tab");
      x[tab] = '\x01';
    }
    dl::tasks::Example e;
    e.tokens = encode_input(x, t.pair, c.max_src), e.tokens2 = {dl::tasks::special_ids::eos}, e.label = -1;
    d.max_len = std::max<int32_t>(d.max_len, (int32_t)e.tokens.size());
    d.examples.push_back(std::move(e));
  }
  dl::NoGradGuard ng;
  dl::tasks::Batcher bt(d, {c.batch, 0, false});
  const dl::harness::BatchLimits limits = batch_limits(m.cfg, d);
  int64_t not_a_label = 0, printed = 0;
  for (int64_t i = 0; i < bt.batches_per_epoch(); i++) {
    const dl::tasks::Batch b = bt.next();
    dl::harness::check_batch(b, limits, path + ": prediction batch " + std::to_string(i));
    for (const std::string& got : greedy_texts(m, b, t)) {
      if (!t.class_names.empty() && decode_label(got, t.class_names) < 0) not_a_label++;
      std::cout << got << "\n";
      printed++;
    }
  }
  std::cout << std::flush;
  std::cerr << c.key() << ": " << printed << " inputs";
  if (!t.class_names.empty()) std::cerr << ", " << not_a_label << " outputs not a label of " << c.task;
  std::cerr << "\n";
}

int main(int argc, char** argv) {
  // finetune = cell --regime pretrained
  std::vector<std::string> args(argv, argv + argc);
  if (args.size() > 1 && args[1] == "finetune") args[1] = "cell", args.push_back("--regime"), args.push_back("pretrained");
  std::vector<char*> av;
  for (auto& a : args) av.push_back(a.data());

  harness::Experiment e = experiment();
  std::string preset = "tiny", model = "lightconv", cell_path, split = "test", lengths, models, device = "cpu";
  std::vector<std::string> sets, texts;
  std::string text_file;
  SpeedOptions so;
  int threads = 2;
  bool quiet = false;
  harness::ExportOptions export_opts;
  // outlives e.commands: the subcommands run after it returns
  auto base = [&] {
    harness::Preset p = load_preset(preset);
    return resolve_cell(p, {p.values[0][0], model, "pretrained"}, sets);
  };
  e.commands = [&](CLI::App& app) {
    app.add_subcommand("finetune", "fine-tune a pretrained model on a task: the same as cell --regime pretrained");
    CLI::App* pre = app.add_subcommand("pretrain", "rebuild a model's span-corruption pretraining (cached)");
    pre->add_option("--model", model, "the model")->capture_default_str();
    pre->add_option("--preset,--config", preset, "preset name or JSON file")->capture_default_str();
    pre->add_option("--set", sets, "override a config field (repeatable)");
    pre->add_flag("--quiet", quiet, "no progress bar");
    pre->add_option("--device", device, "cpu or cuda: where the pretraining runs")->capture_default_str();
    CLI::App* ev = app.add_subcommand("eval", "greedy-decoding accuracy of a finished cell's model.safetensors");
    ev->add_option("--cell", cell_path, "the cell folder (or its model.safetensors)")->required();
    ev->add_option("--split", split, "val, test or ood (compositional)")->capture_default_str();
    CLI::App* pr = app.add_subcommand("predict", "greedy outputs of a finished cell's model for your own inputs");
    pr->add_option("--cell", cell_path, "the cell folder (or its model.safetensors)")->required();
    pr->add_option("--text", texts, "an input (repeatable); a pair task's two sentences separated by a tab")
        ->allow_extra_args(false);  // taken as it is: CLI11 would split an input in [ ] as a bracketed list
    pr->add_option("--file", text_file, "a file of inputs, one a line");
    harness::Command exporter = harness::export_command(app, export_opts, export_cell, "encoder-decoder");
    CLI::App* sp = app.add_subcommand("speed", "training steps/s and FLOPs of each model against the input length");
    sp->add_option("--preset,--config", preset, "the preset whose model sizes are timed")->capture_default_str();
    sp->add_option("--set", sets, "override a config field (repeatable)");
    sp->add_option("--lengths", lengths, "input lengths, e.g. 64,128,256 (default 64 .. 4096)");
    sp->add_option("--models", models, "models (default transformer,lightconv,dynamicconv,dilatedconv)");
    sp->add_option("--tokens", so.tokens, "source tokens per batch")->capture_default_str();
    sp->add_option("--target", so.target, "target length")->capture_default_str();
    sp->add_option("--min-seconds", so.min_seconds, "timed seconds per point")->capture_default_str();
    sp->add_option("--out", so.out, "output folder")->capture_default_str();
    sp->add_option("--threads", threads, "CPU threads")->capture_default_str();
    return std::vector<harness::Command>{{pre,
                                          [&] {
                                            harness::RunContext ctx;
                                            harness::check_device(device);
                                            ctx.device = device;
                                            Pretrained p = pretrained_model(base(), ctx, /*rebuild=*/true);
                                            std::cout << p.path << "\nvalidation loss " << p.info.value("val_loss", 0.0)
                                                      << " after " << p.info.value("steps", 0) << " steps ("
                                                      << p.info.value("seconds", 0.0) << " s)\n";
                                          }},
                                         {ev, [&] { eval_cell(cell_path, split); }},
                                         {pr, [&] { predict_cell(cell_path, texts, text_file); }},
                                         exporter,
                                         {sp, [&] {
                                            harness::set_threads(threads);
                                            if (!lengths.empty()) {
                                              so.lengths.clear();
                                              for (int64_t x : parse_int_list(lengths, "--lengths")) so.lengths.push_back((int)x);
                                            }
                                            if (!models.empty()) so.models = harness::split_list(models);
                                            run_speed(base(), so);
                                          }}};
  };
  return harness::run_main(e, (int)av.size(), av.data());
}
