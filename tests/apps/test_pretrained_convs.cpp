// tests/apps/test_pretrained_convs.cpp - the pretrained-convolutions app (apps/pretrained_convs): the text-to-text
// pieces (byte encoding, label decoding, the batch's labels and segments), the generated tasks (the SCAN-like
// grammar and its held-out split, the pair task), the user-file loaders, span corruption through the batch path,
// equal parameter budgets, a miniature sweep with exact resume, bad input named, and a learning test that can fail.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "app_test_util.h"
#include "apps/common/experiment.h"
#include "apps/pretrained_convs/app.h"
#include "apps/pretrained_convs/config.h"
#include "apps/pretrained_convs/data.h"
#include "apps/pretrained_convs/model.h"
#include "apps/pretrained_convs/speed.h"
#include "tasks/objectives.h"
#include "tasks/tokenizer.h"
#include "tensor/safetensors.h"

using namespace pconv;
using namespace dl;
namespace harness = dl::harness;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kSmall = {
    "d_model=16",   "d_ff=32",    "layers=1",   "decoder_layers=1", "heads=2",      "train_size=64",      "val_size=16",
    "test_size=16", "batch=8",    "steps=6",    "warmup=2",         "eval_every=3", "checkpoint_every=3", "eval_examples=8",
    "max_src=48",   "pt_steps=6", "pt_batch=4", "pt_len=32",        "pt_warmup=2",  "pt_windows=400"};

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

}  // namespace

TEST(PconvText, BytesLabelsAndTheBatch) {
  std::vector<int32_t> ids = encode_text("good", 10);
  EXPECT_EQ(ids.back(), tasks::special_ids::eos);
  EXPECT_EQ(decode_bytes(ids), "good");
  EXPECT_EQ(encode_text("abcdefgh", 4).size(), 4u);  // cut, eos kept
  EXPECT_EQ(decode_bytes(encode_text("abcdefgh", 4)), "abc");
  EXPECT_EQ(decode_label("positive", {"negative", "positive"}), 1);
  EXPECT_EQ(decode_label("positiv", {"negative", "positive"}), -1);
  // a pair batch: segments switch at the separator; padded target positions are ignored by the loss
  tasks::Dataset d;
  d.vocab_size = vocab_size();
  tasks::Example a, b;
  a.tokens = {10, 11, kSeparator, 12, 1}, a.tokens2 = {20, 1};
  b.tokens = {10, kSeparator, 12, 1}, b.tokens2 = {20, 21, 22, 1};
  d.examples = {a, b};
  tasks::Batcher bt(d, {2, 0, false});
  Seq2SeqBatch x = to_batch(bt.next(), true);
  EXPECT_EQ(x.segments.to_vector(), (std::vector<float>{0, 0, 1, 1, 1, 0, 1, 1, 1, 1}));
  EXPECT_EQ(x.labels.to_vector(), (std::vector<float>{20, 1, -100, -100, 20, 21, 22, 1}));
  EXPECT_EQ(x.mask.to_vector(), (std::vector<float>{1, 1, 1, 1, 1, 1, 1, 1, 1, 0}));
}

TEST(PconvTasks, CompositionalGrammarAndItsHeldOutSplit) {
  EXPECT_EQ(scan_actions("walk"), "W");
  EXPECT_EQ(scan_actions("jump around left twice and walk"), "<J<J<J<J<J<J<J<JW");
  EXPECT_EQ(scan_actions("walk after run left"), "<RW");
  EXPECT_EQ(scan_actions("look opposite right thrice"), ">>L>>L>>L");
  EXPECT_NE(dl::test::error_of([] { scan_actions("fly left"); }).find("expected a verb"), std::string::npos);
  EXPECT_NE(dl::test::error_of([] { scan_actions("walk around"); }).find("'around' must be followed by left or right"),
            std::string::npos);
  ScanSplit s = scan_commands(3000, 400, 300, 0);
  EXPECT_EQ(s.train.size(), 3000u);
  EXPECT_EQ(s.ood.size(), 300u);
  std::set<std::string> train(s.train.begin(), s.train.end());
  bool jump_seen = false, around_right_seen = false;
  for (auto& c : s.train) {
    EXPECT_FALSE(scan_is_held_out(c)) << c;
    jump_seen = jump_seen || c.find("jump") != std::string::npos;
    around_right_seen = around_right_seen || c.find("around right") != std::string::npos;
  }
  EXPECT_TRUE(jump_seen && around_right_seen) << "both parts of the held-out combination must be seen in training";
  for (auto& c : s.test) EXPECT_FALSE(scan_is_held_out(c) || train.count(c)) << c;
  for (auto& c : s.ood) EXPECT_TRUE(scan_is_held_out(c) && !train.count(c)) << c;
}

TEST(PconvTasks, PairTaskEditsOneWordOfTheSameLength) {
  CellConfig c;
  c.task = "pair_edit", c.train_size = 300, c.val_size = 50, c.test_size = 50;
  const Seq2SeqTask& t = seq2seq_task(c);
  ASSERT_TRUE(t.pair);
  EXPECT_EQ(t.class_names, (std::vector<std::string>{"same", "edited"}));
  int edited = 0;
  for (auto& e : t.data.train.examples) {
    auto sep = std::find(e.tokens.begin(), e.tokens.end(), kSeparator);
    ASSERT_NE(sep, e.tokens.end());
    std::vector<int32_t> A(e.tokens.begin(), sep), B(sep + 1, e.tokens.end() - 1);
    ASSERT_EQ(A.size(), B.size()) << "the edit must keep B's length";
    int diff_words = 0;
    bool in_diff = false;
    for (size_t i = 0; i < A.size(); i++) {
      if (A[i] != B[i] && !in_diff) diff_words++;
      in_diff = A[i] != B[i] ? true : (A[i] == ' ' + 5 ? false : in_diff);
    }
    EXPECT_EQ(diff_words > 0, e.label == 1);
    EXPECT_LE(diff_words, 1);
    edited += e.label;
  }
  EXPECT_GT(edited, 100);
  EXPECT_LT(edited, 200);
}

// A capped split is a sample of the whole split, not its first documents: topic's default caps (500 validation,
// 1000 test chunks) keep every class's share of the uncapped split, which the first 500 / 1000 chunks (about 5 / 10
// documents, as the splits list chunks document by document) do not.
TEST(PconvTasks, CappedSplitsSpreadOverTheirDocuments) {
  EXPECT_EQ(spread_indices(5, 0), (std::vector<size_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(spread_indices(5, 9), (std::vector<size_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(spread_indices(10, 5), (std::vector<size_t>{0, 2, 4, 6, 8}));
  EXPECT_EQ(spread_indices(7, 3), (std::vector<size_t>{0, 2, 4}));
  CellConfig capped;
  capped.task = "topic";
  CellConfig full = capped;
  full.train_size = full.val_size = full.test_size = 1 << 30;
  const Seq2SeqTask &a = seq2seq_task(capped), &b = seq2seq_task(full);
  // class shares of the first `n` examples of d
  auto shares = [](const tasks::Dataset& d, size_t n) {
    std::vector<double> s(5, 0.0);
    n = std::min(n, d.examples.size());
    for (size_t i = 0; i < n; i++) s.at(d.examples[i].label) += 1.0 / n;
    return s;
  };
  for (auto [cut, all] : {std::pair{&a.data.val, &b.data.val}, std::pair{&a.data.test, &b.data.test}}) {
    ASSERT_LT(cut->examples.size(), all->examples.size()) << cut->name;
    const std::vector<double> want = shares(*all, SIZE_MAX), got = shares(*cut, SIZE_MAX),
                              prefix = shares(*all, cut->examples.size());
    double prefix_worst = 0;
    for (int k = 0; k < 5; k++) {
      EXPECT_NEAR(got[k], want[k], 0.02) << cut->name << " class " << a.class_names[k];
      prefix_worst = std::max(prefix_worst, std::abs(prefix[k] - want[k]));
    }
    EXPECT_GT(prefix_worst, 0.05) << cut->name << ": the first examples are no worse a sample (the check has no power)";
  }
}

TEST(PconvTasks, UserFilesTsvCsvAndTheirErrors) {
  const std::string d = dl::test::app_temp_dir("pconv_files");
  write(d + "/train.csv", "id,text,label\n1,\"great, really \"\"great\"\"\",pos\n2,\"bad\nvery bad\",neg\n3,fine,pos\n");
  auto rows = read_text_label_file(d + "/train.csv");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].text, "great, really \"great\"");
  EXPECT_EQ(rows[1].text, "bad\nvery bad");
  EXPECT_EQ(rows[1].id, "neg");
  write(d + "/bad.csv", "text,label\na,pos\nb\n");
  EXPECT_NE(dl::test::error_of([&] { read_text_label_file(d + "/bad.csv"); }).find("bad.csv:3: 1 fields, the header has 2"),
            std::string::npos);
  write(d + "/nolabel.csv", "text,tag\na,b\n");
  EXPECT_NE(dl::test::error_of([&] { read_text_label_file(d + "/nolabel.csv"); }).find("no column 'label'"), std::string::npos);
  write(d + "/open.csv", "text,label\n\"never closed,pos\n");
  EXPECT_NE(dl::test::error_of([&] { read_text_label_file(d + "/open.csv"); }).find("open.csv:2: a quoted field is not closed"),
            std::string::npos);
  write(d + "/bad.tsv", "pos\tgood\nno tab here\n");
  EXPECT_NE(dl::test::error_of([&] {
              read_text_label_file(d + "/bad.tsv");
            }).find("bad.tsv:2: expected \"label<TAB>text\", found no tab"),
            std::string::npos);
  write(d + "/nolabel.tsv", "pos\tgood\n\tno label\n");
  EXPECT_NE(dl::test::error_of([&] {
              read_text_label_file(d + "/nolabel.tsv");
            }).find("nolabel.tsv:2: expected \"label<TAB>text\", found no label before the tab"),
            std::string::npos);
  // a whole textfile task: val carved from train, labels as words
  std::string train, test;
  for (int i = 0; i < 40; i++) train += std::string(i % 2 ? "spam" : "ham") + "\tmessage number " + std::to_string(i) + "\n";
  for (int i = 0; i < 10; i++) test += std::string(i % 2 ? "spam" : "ham") + "\tmessage " + std::to_string(i) + "\n";
  write(d + "/train.tsv", train), write(d + "/test.tsv", test);
  CellConfig c;
  c.task = "textfile", c.data_path = d;
  const Seq2SeqTask& t = seq2seq_task(c);
  EXPECT_EQ(t.class_names, (std::vector<std::string>{"ham", "spam"}));
  EXPECT_EQ(t.data.test.examples.size(), 10u);
  EXPECT_EQ(t.data.train.examples.size() + t.data.val.examples.size(), 40u);
  EXPECT_EQ(decode_bytes(t.data.test.examples[1].tokens2), "spam");
  write(d + "/test.tsv", "eggs\tmessage\n");
  CellConfig c2 = c;
  c2.max_src = 64;  // a new cache key
  EXPECT_NE(dl::test::error_of([&] { seq2seq_task(c2); }).find("label 'eggs' is in the test file but not in the training file"),
            std::string::npos);
}

TEST(PconvPretrain, SpanCorruptionThroughTheBatchPath) {
  PretrainData p = span_corruption_data(48, 0.15, 3.0, 200, 0);
  ASSERT_EQ(p.train.examples.size(), 190u);
  tasks::SpanCorruptionConfig sc;
  sc.sentinel_top_id = tasks::ByteTokenizer{kSentinels}.sentinel_id(kSentinels - 1), sc.eos_id = tasks::special_ids::eos;
  tasks::Batcher bt(p.train, {4, 0, false});
  tasks::Batch b = bt.next();
  Seq2SeqBatch x = to_batch(b, false);
  for (int r = 0; r < 4; r++) {
    const tasks::Example& e = p.train.examples[b.indices[r]];
    tasks::TokenObjective o{e.tokens, e.tokens2};
    std::vector<int32_t> orig = tasks::span_corruption_reconstruct(o, sc);
    EXPECT_EQ(orig.size(), 48u);  // the window's bytes come back whole
    EXPECT_LT(e.tokens.size(), 48u);
    // the batch's labels are the targets, then -100
    for (int64_t t = 0; t < x.labels.size(1); t++)
      EXPECT_EQ((int64_t)x.labels.at({r, t}), t < (int64_t)e.tokens2.size() ? e.tokens2[t] : -100);
  }
}

TEST(PconvModels, ConvolutionsGetTheTransformersParameterBudget) {
  for (std::string m : {"lightconv", "dynamicconv", "dilatedconv"}) {
    CellConfig c;
    c.model = m, c.d_model = 32, c.d_ff = 64, c.layers = 2, c.decoder_layers = 2, c.heads = 4;
    ModelPlan p = plan_model(c);
    const int64_t step = 2 * c.d_model * (c.layers + c.decoder_layers);
    EXPECT_LE(std::abs(p.params - p.transformer_params), step / 2 + 1) << m;
    // a GLU block (3 C^2) has fewer weights than attention (4 C^2), so d_ff grows; the dilated block's pointwise
    // projection (+ C^2) and dynamic kernel prediction (+ C H K) change that
    if (m == "lightconv") {
      EXPECT_GT(p.cfg.d_ff, c.d_ff);
    }
    if (m == "dilatedconv") {
      EXPECT_LT(p.cfg.d_ff, c.d_ff);
    }
    c.match_params = false;
    EXPECT_EQ(plan_model(c).cfg.d_ff, 64) << m;
    c.match_params = true, c.model = m + "_xattn";
    ModelPlan x = plan_model(c);
    EXPECT_EQ(x.cfg.d_ff, p.cfg.d_ff) << "the _xattn variant keeps its base model's d_ff (it loads its pretraining)";
    EXPECT_GT(x.params, p.params);
  }
  // the FLOPs formula grows quadratically for attention and linearly for convolutions
  CellConfig c;
  const double t1 = train_flops(c, "transformer", 512, 1, 1024, 16), t2 = train_flops(c, "transformer", 512, 1, 2048, 16);
  const double c1 = train_flops(c, "lightconv", 512, 1, 1024, 16), c2 = train_flops(c, "lightconv", 512, 1, 2048, 16);
  EXPECT_GT(t2 / t1, 2.3);
  EXPECT_LT(c2 / c1, 2.05);
}

TEST(PconvSweep, EveryModelAndRegimeRunsAndResumesExactly) {
  const std::string d = dl::test::app_temp_dir("pconv_sweep");
  harness::Experiment e = experiment();
  harness::Preset p = load_preset("tiny");
  harness::SweepOptions o;
  o.out = d + "/all", o.quiet = true;
  auto cells = harness::expand_cells(e, p, {{"sentiment"}, {"transformer", "lightconv", "dynamicconv", "dilatedconv"}, kRegimes},
                                     {0}, kSmall);
  auto rs = harness::run_cells(e, p, cells, o);
  ASSERT_EQ(rs.size(), 8u);
  for (auto& r : rs) {
    EXPECT_EQ(r.curve.back().step, 6) << r.cell.label();
    const double right = r.metric("test_acc") * r.test_examples;  // exact match is a count over the split
    EXPECT_NEAR(right, std::round(right), 1e-9) << r.cell.label();
    EXPECT_EQ(r.test_examples, 16);
    if (r.cell.value("regime") == "pretrained") {
      EXPECT_TRUE(r.extra.contains("pretrained")) << r.cell.label();
    }
  }
  const std::string md = harness::read_text(o.out + "/results.md");
  EXPECT_NE(md.find("| sentiment | lightconv | pretrained | 1 |"), std::string::npos) << md;
  EXPECT_NE(md.find("Finding 1 (RQ1)"), std::string::npos) << md;
  // the pair variant on the pair task, and the compositional task's held-out accuracy
  auto more = harness::expand_cells(e, p, {{"pair_edit"}, {"lightconv_xattn"}, {"pretrained"}}, {0}, kSmall);
  auto more2 = harness::expand_cells(e, p, {{"compositional"}, {"dilatedconv"}, {"scratch"}}, {0}, kSmall);
  more.insert(more.end(), more2.begin(), more2.end());
  auto rs2 = harness::run_cells(e, p, more, o);
  EXPECT_TRUE(rs2.at(1).metrics.count("ood_acc"));
  // a killed cell resumes to the same weights
  auto one = harness::expand_cells(e, p, {{"sentiment"}, {"dynamicconv"}, {"pretrained"}}, {0}, kSmall);
  dl::test::expect_killed_cell_resumes(e, p, one[0], o, o.out, d, 4);
}

TEST(PconvConfig, BadInputIsNamed) {
  for (auto& name : harness::preset_names(presets_dir())) EXPECT_NO_THROW(load_preset(name)) << name;
  harness::Preset p = load_preset("tiny");
  auto err = [&](const std::vector<std::string>& v, const std::vector<std::string>& sets) {
    return dl::test::error_of([&] { resolve_cell(p, v, sets); });
  };
  EXPECT_NE(err({"sentiment", "lstmm", "scratch"}, {}).find("unknown model 'lstmm'"), std::string::npos);
  EXPECT_NE(err({"sentiment", "fnet", "scratch"}, {}).find("layer 'fnet' cannot be the encoder-decoder's mixer"), std::string::npos);
  EXPECT_NE(err({"sentiment", "lightconv", "scratch"}, {"kernel_sizes=3,x"}).find("'x' in \"3,x\" is not a positive integer"),
            std::string::npos);
  EXPECT_NE(err({"sentiment", "lightconv", "scratch"}, {"kernel_sizes=3,4"}).find("4 is even"), std::string::npos);
  EXPECT_NE(err({"textfile", "lightconv", "scratch"}, {}).find("reads its files from data_path"), std::string::npos);
  EXPECT_NE(err({"sentiment", "lightconv", "scratch"}, {"pt_len=4096"}).find("sentinels"), std::string::npos);
  // a corrupted pretrained file is named
  const std::string d = dl::test::app_temp_dir("pconv_bad");
  write(d + "/broken.safetensors", "not a safetensors file at all");
  harness::Experiment e = experiment();
  harness::SweepOptions o;
  o.out = d + "/run", o.quiet = true;
  std::vector<std::string> sets = kSmall;
  sets.push_back("pretrained=" + d + "/broken.safetensors");
  auto cells = harness::expand_cells(e, p, {{"sentiment"}, {"lightconv"}, {"pretrained"}}, {0}, sets);
  EXPECT_NE(dl::test::error_of([&] { harness::run_cells(e, p, cells, o); }).find("broken.safetensors"), std::string::npos);
}

TEST(PconvLearning, LightweightConvolutionLearnsSentiment) {
  // The UCI sentences are half positive: a model that learned nothing decodes ~50% right (or worse, non-labels).
  const std::string d = dl::test::app_temp_dir("pconv_learn");
  harness::Experiment e = experiment();
  harness::Preset p = load_preset("tiny");
  auto val_acc = [&](double lr) {
    harness::SweepOptions o;
    o.out = d + "/lr" + std::to_string(lr), o.quiet = true;
    std::vector<std::string> s = {
        "d_model=64", "d_ff=128",   "layers=2",  "decoder_layers=1",        "steps=500", "eval_every=500", "checkpoint_every=500",
        "batch=32",   "max_src=96", "warmup=50", "lr=" + std::to_string(lr)};
    return harness::run_cells(e, p, harness::expand_cells(e, p, {{"sentiment"}, {"lightconv"}, {"scratch"}}, {0}, s), o)
        .at(0)
        .metric("val_acc");
  };
  EXPECT_GE(val_acc(3e-3), 0.6) << "lightconv should learn sentiment well above the 50% majority";
  EXPECT_LT(val_acc(1e-6), 0.56) << "the control (no learning) must fail the same bar";
}

TEST(PconvCli, EverySubcommandRuns) {
  // the executable itself: cell, finetune (= cell --regime pretrained), eval, pretrain and speed
  const std::string d = dl::test::app_temp_dir("pconv_cli"), exe = std::string(DL_BINARY_DIR) + "/pretrained_convs";
  std::string sets;
  for (auto& s : kSmall) sets += " --set " + s;
  auto run = [&](const std::string& args, const std::string& log) {
    return std::system((exe + " " + args + " --quiet" + sets + " > " + d + "/" + log + " 2>&1").c_str());
  };
  auto read = [&](const std::string& log) { return harness::read_text(d + "/" + log); };
  ASSERT_EQ(run("cell --task sentiment --model lightconv --regime scratch --seed 0 --out " + d + "/run", "cell.log"), 0)
      << read("cell.log");
  ASSERT_EQ(run("finetune --task sentiment --model lightconv --seed 0 --out " + d + "/run", "ft.log"), 0) << read("ft.log");
  EXPECT_TRUE(fs::exists(d + "/run/cells/sentiment__lightconv__pretrained__seed0/result.json"));
  ASSERT_EQ(std::system((exe + " eval --cell " + d + "/run/cells/sentiment__lightconv__scratch__seed0 --split val > " + d +
                         "/eval.log 2>&1")
                            .c_str()),
            0)
      << read("eval.log");
  EXPECT_NE(read("eval.log").find("sentiment/lightconv/scratch val accuracy"), std::string::npos) << read("eval.log");
  ASSERT_EQ(run("pretrain --model dilatedconv", "pretrain.log"), 0) << read("pretrain.log");
  EXPECT_NE(read("pretrain.log").find("validation loss"), std::string::npos) << read("pretrain.log");
  ASSERT_EQ(std::system((exe + " speed --lengths 32,64 --models transformer,lightconv --tokens 128 --min-seconds 0.01 --out " +
                         d + "/speed" + sets + " > " + d + "/speed.log 2>&1")
                            .c_str()),
            0)
      << read("speed.log");
  nlohmann::json sp = nlohmann::json::parse(harness::read_text(d + "/speed/speed.json"));
  EXPECT_EQ(sp.at("rows").size(), 4u);
  EXPECT_NE(std::system((exe + " eval --cell " + d + "/nowhere > /dev/null 2>&1").c_str()), 0);
}

// `predict`: the user's inputs (a file, one a line; a pair task's two sentences split by a tab) give the greedy outputs
// the model gives the task's own examples of those texts, one line each in order; an untabbed pair input is named.
TEST(PconvCli, PredictGivesTheModelsOutputsForTheTasksOwnTexts) {
  const std::string d = dl::test::app_temp_dir("pconv_predict"), exe = std::string(DL_BINARY_DIR) + "/pretrained_convs";
  std::string sets;
  for (auto& s : kSmall) sets += " --set " + s;
  for (const std::string task : {"sentiment", "pair_edit"}) {
    const std::string model = task == "pair_edit" ? "lightconv_xattn" : "lightconv";
    const std::string cell = d + "/run/cells/" + task + "__" + model + "__scratch__seed0";
    ASSERT_EQ(std::system((exe + " cell --task " + task + " --model " + model + " --regime scratch --seed 0 --quiet --out " + d +
                           "/run" + sets + " > " + d + "/cell.log 2>&1")
                              .c_str()),
              0)
        << harness::read_text(d + "/cell.log");
    const CellModel cm = load_cell_model(cell + "/model.safetensors");
    const Seq2SeqTask& t = seq2seq_task(cm.config);
    // the test split's inputs as text (a pair: the bytes before and after the separator, with a tab between)
    std::string lines;
    for (const tasks::Example& e : t.data.test.examples) {
      auto sep = std::find(e.tokens.begin(), e.tokens.end(), kSeparator);
      std::string text = decode_bytes(std::vector<int32_t>(e.tokens.begin(), sep));
      if (t.pair) text += "\t" + decode_bytes(std::vector<int32_t>(sep + 1, e.tokens.end()));
      lines += text + "\n";
    }
    write(d + "/inputs.txt", lines);
    ASSERT_EQ(std::system((exe + " predict --cell " + cell + " --file " + d + "/inputs.txt > " + d + "/out.txt 2> " + d +
                           "/err.txt")
                              .c_str()),
              0)
        << harness::read_text(d + "/err.txt");
    // the same model on the task's examples, batched and decoded as eval decodes them
    NoGradGuard ng;
    tasks::Batcher bt(t.data.test, {cm.config.batch, 0, false});
    std::string want;
    std::set<std::string> distinct;
    for (int64_t i = 0; i < bt.batches_per_epoch(); i++)
      for (const std::string& out : greedy_texts(*cm.model, bt.next(), t)) want += out + "\n", distinct.insert(out);
    EXPECT_EQ(harness::read_text(d + "/out.txt"), want) << task;
    EXPECT_GE(distinct.size(), 2u) << task << ": outputs that do not depend on the input would not show the encoding";
    EXPECT_NE(harness::read_text(d + "/err.txt").find(std::to_string(t.data.test.examples.size()) + " inputs"), std::string::npos)
        << harness::read_text(d + "/err.txt");
    if (t.pair) {
      EXPECT_NE(std::system((exe + " predict --cell " + cell + " --text 'no tab here' > /dev/null 2> " + d + "/err.txt").c_str()), 0);
      EXPECT_NE(harness::read_text(d + "/err.txt").find("takes a pair of sentences, separated by one tab"), std::string::npos)
          << harness::read_text(d + "/err.txt");
    }
  }
}
