// tests/apps/test_studies_init_warmup.cpp - `studies init-warmup` (apps/studies/init_warmup.h): the per-layer gradient
// norm it reports is the norm of the true gradient (central differences on a float64 2-layer post-LN model), the
// layer placement it compares behaves as the study says (pre-LN's input-side layers get the larger share of the
// gradient, post-LN's do not), bad settings are refused by name, and a miniature run writes its tables and plots.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "app_test_util.h"
#include "apps/common/results.h"
#include "apps/studies/cli.h"
#include "apps/studies/init_warmup.h"
#include "tasks/objectives.h"

using namespace studies;
using namespace dl;

namespace {

// A few hundred bytes of English, repeated with a counter so no two windows are identical.
std::string english_text(int repeats) {
  std::string s;
  for (int i = 0; i < repeats; i++)
    s += "The committee met on day " + std::to_string(i) +
         " and agreed that the report, which had been read by every member, should be sent to the governor at once. ";
  return s;
}

void to_f64(nn::Module& m) {
  for (auto& [n, p] : m.named_parameters()) p.mutable_data() = p.data().to(DType::f64);
}

double mean_ratio(bool norm_first, const LmBatch& b) {
  double s = 0;
  for (int seed = 0; seed < 3; seed++) {
    ByteLmConfig c;
    c.d_model = 32, c.heads = 4, c.dim_ff = 128, c.max_len = 32, c.depth = 10, c.norm_first = norm_first, c.init = "lecun";
    Generator g(100 + seed);
    ByteLm m(c, g);
    std::vector<double> n = layer_grad_norms(m, b);
    s += n.front() / n.back();
  }
  return s / 3;
}

}  // namespace

// The measurement against a hand computation: for each of the two layers of a tiny post-LN model in float64, the
// gradient of the loss with respect to every parameter element by central differences, then its 2-norm.
TEST(StudiesInitWarmup, LayerGradNormsMatchFiniteDifferences) {
  ByteLmConfig c;
  c.d_model = 4, c.heads = 2, c.dim_ff = 8, c.max_len = 3, c.depth = 2, c.norm_first = false, c.init = "lecun";
  c.causal = false;  // BERT's bidirectional attention; the batch is a masked one
  Generator g(7);
  ByteLm m(c, g);
  to_f64(m);
  const int64_t I = tasks::kIgnoreIndex;
  LmBatch b{from_vector(std::vector<int64_t>{5, 256, 7, 256, 9, 11}, {2, 3}),
             from_vector(std::vector<int64_t>{I, 6, I, 10, I, I}, {2, 3})};
  layer_grad_norms(m, b);  // a first call: the second must not add onto its gradients
  const std::vector<double> analytic = layer_grad_norms(m, b);
  ASSERT_EQ(analytic.size(), 2u);
  const double eps = 1e-6;
  for (size_t l = 0; l < 2; l++) {
    double fd_sq = 0, max_elem_err = 0;
    for (const auto& [name, p] : m.layers->items()[l]->named_parameters()) {
      double* v = p.mutable_data().data<double>();
      const double* an = p.grad().contiguous().data<double>();
      for (int64_t i = 0; i < p.data().numel(); i++) {
        const double v0 = v[i];
        NoGradGuard ng;
        v[i] = v0 + eps;
        const double up = lm_loss(m, b).item();
        v[i] = v0 - eps;
        const double down = lm_loss(m, b).item();
        v[i] = v0;
        const double fd = (up - down) / (2 * eps);
        fd_sq += fd * fd;
        max_elem_err = std::max(max_elem_err, std::abs(fd - an[i]));
      }
    }
    const double fd_norm = std::sqrt(fd_sq);
    EXPECT_GT(fd_norm, 1e-3) << "layer " << l << ": a gradient too small to test anything";
    EXPECT_NEAR(analytic[l], fd_norm, 1e-6 * fd_norm) << "layer " << l;
    EXPECT_LT(max_elem_err, 1e-7) << "layer " << l << ": element-wise, not only in norm";
  }
}

// What the study's plots show: in a pre-LN stack the input-side layer gets several times the gradient of the
// output-side one (every later branch adds a path back to it, through LayerNorms that amplify a small residual
// stream), while post-LN re-normalises the stream after every sublayer and its input-side layer gets no more than
// the output-side one. Swapping the placement (norm_first) swaps the two and fails here.
TEST(StudiesInitWarmup, PostLnGradientShrinksTowardTheInputComparedWithPreLn) {
  const LmBatch b = lm_batch(english_text(30), 8, 32, "causal", 3);
  const double post = mean_ratio(false, b), pre = mean_ratio(true, b);
  // measured: post 0.89, pre 3.66 (depth 10, N(0, 1/fan_in), 3 seeds); wired the other way they swap
  EXPECT_LT(post, 1.0) << "post-LN first/last layer gradient ratio";
  EXPECT_GT(pre, 2.5) << "pre-LN first/last layer gradient ratio";
  EXPECT_GT(pre, 2.5 * post);
}

TEST(StudiesInitWarmup, RefusesBadSettingsByName) {
  Generator g(1);
  nn::Linear lin(3, 3, g);
  EXPECT_NE(test::error_of([&] { init_parameters(lin, "he", g); }).find("unknown init 'he'"), std::string::npos);
  EXPECT_NE(test::error_of([&] { lm_batch(english_text(2), 1, 16, "span", 0); }).find("unknown objective 'span'"),
            std::string::npos);
  EXPECT_NE(test::error_of([&] { lm_batch("short", 1, 16, "causal", 0); }).find("fewer than T + 2"), std::string::npos);
  InitWarmupOptions o;
  o.out = dl::test::app_temp_dir("studies_iw_bad");
  o.text_file = o.out + "/missing.txt";
  EXPECT_NE(test::error_of([&] { run_init_warmup(o); }).find("missing.txt"), std::string::npos);
  o.text_file.clear(), o.inits = {"0.02", "kaiming"};
  EXPECT_NE(test::error_of([&] { run_init_warmup(o); }).find("unknown init 'kaiming'"), std::string::npos);
}

TEST(StudiesInitWarmup, MiniatureRunWritesItsTables) {
  InitWarmupOptions o;
  o.out = dl::test::app_temp_dir("studies_iw");
  o.text_file = o.out + "/text.txt";
  dl::harness::write_text_atomic(o.text_file, english_text(20));
  o.depths = {2, 3}, o.inits = {"0.02", "xavier"}, o.seeds = 2;
  o.train_depth = 2, o.steps = 4, o.warmup = 2, o.eval_every = 2, o.eval_batches = 1;
  o.d_model = 16, o.heads = 2, o.batch = 2, o.seq_len = 16, o.lrs = {1e-3};
  run_init_warmup(o);
  const std::string md = dl::harness::read_text(o.out + "/init_warmup.md");
  EXPECT_NE(md.find("| 3 | pre-LN | Xavier uniform |"), std::string::npos) << md;
  EXPECT_NE(md.find("| post-LN | 0.0010 | none |"), std::string::npos) << md;
  EXPECT_NE(md.find("| pre-LN | N(0, 0.02²) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| post-LN | tied E only |"), std::string::npos) << md;
  EXPECT_NE(md.find(" of 2 |"), std::string::npos) << "the stalled / diverged counts over 2 seeds\n" << md;
  const auto j = nlohmann::json::parse(dl::harness::read_text(o.out + "/init_warmup.json"));
  EXPECT_EQ(j["grad_norms"].size(), 2u * 2 * 2);            // depths x LN x inits
  EXPECT_EQ(j["grad_norms"][1]["mean"].size(), 2u);         // one norm per layer
  EXPECT_EQ(j["runs"].size(), 2u * (4 + 2 + 2));            // seeds x (warmup 4 cells, +2 inits, +2 heads)
  EXPECT_TRUE(std::filesystem::exists(o.out + "/plots/grad_norms_depth3.dat"));
  EXPECT_TRUE(std::filesystem::exists(o.out + "/plots/warmup_loss.dat"));
}

// The settings of --preset: "default" is the struct's defaults (a few minutes); "large" is the setting of the docs'
// large tables; "xl" the old --large flag, which still means it. An unknown preset names the choices.
TEST(StudiesInitWarmup, PresetsSelectTheDocumentedSettings) {
  const InitWarmupOptions d = init_warmup_preset("default"), l = init_warmup_preset("large"),
                          x = init_warmup_preset("xl"), plain;
  EXPECT_TRUE(d.steps == 100 && d.warmup == 20);
  EXPECT_TRUE(l.steps == 300 && l.warmup == 60);
  EXPECT_TRUE(plain.steps == d.steps && plain.warmup == d.warmup);
  for (const InitWarmupOptions* o : {&d, &l})  // the rest is shared
    EXPECT_TRUE(o->d_model == 64 && o->train_depth == 6 && o->seeds == 3 && o->batch == 16 && o->eval_every == 25 &&
                o->depths == (std::vector<int>{2, 4, 8, 12, 24}) && o->lrs == (std::vector<double>{1e-3, 3e-3}));
  EXPECT_TRUE(x.d_model == 128 && x.train_depth == 12 && x.steps == 2000 && x.warmup == 200 && x.eval_every == 50 &&
              x.seeds == 5 && x.batch == 32);
  const std::string e = dl::test::error_of([] { init_warmup_preset("huge"); });
  for (const char* word : {"--preset", "'huge'", "default, large, xl"}) EXPECT_NE(e.find(word), std::string::npos) << e;
  CLI::App app;
  add_init_warmup_command(app);
  EXPECT_NE(dl::test::error_of([&] { app.parse("init-warmup --preset huge", false); }).find("not one of default"),
            std::string::npos);
  CLI::App app2;
  add_init_warmup_command(app2);
  EXPECT_NE(dl::test::error_of([&] { app2.parse("init-warmup --large --preset large", false); }).find("--preset xl"),
            std::string::npos);
}
