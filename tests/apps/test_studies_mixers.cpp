// tests/apps/test_studies_mixers.cpp - `studies mixers` (apps/studies/mixers.h): every mixer's model has the
// parameter count of a hand computation on a tiny config, the FFN widths bring every mixer within the stated
// tolerance of the attention model, the token MLP mixes along positions and ignores padding, the step-time
// measurement is positive, a miniature run writes a row per task x mixer with the table, JSON and plots, and bad
// flags are errors naming the flag.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "app_test_util.h"
#include "apps/common/results.h"
#include "apps/studies/cli.h"
#include "apps/studies/mixers.h"

using namespace studies;

namespace {

// A tiny config: V 11, classes 3, max_len 8, D 8, 2 layers, F 12, 2 heads, N 4 (2 modes), K 3, token width 5.
MixerNetConfig tiny(const std::string& mixer) {
  MixerNetConfig c;
  c.mixer = mixer, c.vocab = 11, c.classes = 3, c.max_len = 8;
  c.d_model = 8, c.layers = 2, c.ffn_hidden = 12, c.heads = 2, c.d_state = 4, c.kernel_size = 3, c.token_hidden = 5;
  return c;
}

// The counts from the shapes the layer headers give (D = 8, L = 8, F = 12, heads 2, K 3, N 4, t 5).
int64_t hand_count(const std::string& mixer) {
  const int64_t D = 8, L = 8, F = 12, h = 2, K = 3, N = 4, t = 5, V = 11, classes = 3, layers = 2;
  int64_t m = 0;
  if (mixer == "attention") m = 4 * D * D + 4 * D;              // in_proj (3D, D) + 3D, out_proj D x D + D
  if (mixer == "mixer") m = 2 * L * t + t + L;                  // fc1 (t, L) + t, fc2 (L, t) + L
  if (mixer == "fnet") m = 0;                                   // a fixed DFT
  if (mixer == "s4d") m = 2 * D * D + 4 * D + 4 * D * N;        // dt, A (2 parts), B, C (2 directions), D, GLU out
  if (mixer == "lightconv") m = 3 * D * D + 3 * D + h * K;      // W_in (2D, D), W_out (D, D), kernel (h, 1, K)
  if (mixer == "dynamicconv") m = 3 * D * D + 3 * D + (D + 1) * h * K;  // kernel predicted by Linear(D, h K)
  const int64_t block = 4 * D + (D * F + F + F * D + D);                 // two LayerNorms, the FFN
  return V * D + L * D + layers * (m + block) + 2 * D + D * classes + classes;  // embed, positions, final norm, head
}

}  // namespace

TEST(StudiesMixers, ParameterCountsMatchAHandCount) {
  for (const std::string& mixer : kMixers) EXPECT_EQ(count_parameters(tiny(mixer)), hand_count(mixer)) << mixer;
  EXPECT_THROW(count_parameters(tiny("gru")), std::invalid_argument);
}

TEST(StudiesMixers, MatchedFfnWidthsBringEveryMixerWithinHalfAUnit) {
  // The study's default shape (D 64, 2 layers, ListOps-sized vocab and length): the reference is attention with F = 2D.
  MixerNetConfig ref = tiny("attention");
  ref.vocab = 20, ref.classes = 10, ref.max_len = 128, ref.d_model = 64, ref.heads = 4, ref.d_state = 32;
  ref.kernel_size = 15, ref.token_hidden = 32, ref.ffn_hidden = 128;
  const int64_t target = count_parameters(ref), unit = ref.layers * (2 * ref.d_model + 1);
  for (const std::string& mixer : kMixers) {
    MixerNetConfig c = ref;
    c.mixer = mixer;
    c.ffn_hidden = matched_ffn_hidden(c, target);
    const int64_t p = count_parameters(c);
    EXPECT_LE(std::llabs(p - target), unit / 2 + 1) << mixer << ": F " << c.ffn_hidden << ", " << p << " vs " << target;
    if (mixer == "fnet") {
      EXPECT_GT(c.ffn_hidden, 128) << "FNet has no mixer parameters: the widest FFN";
    }
  }
  EXPECT_EQ(matched_ffn_hidden(ref, target), 128) << "the reference matches itself";
}

TEST(StudiesMixers, TokenMlpMixesPositionsAndIgnoresPadding) {
  dl::Generator g(3);
  TokenMlp tm(6, 4, g);
  dl::Tensor x = dl::randn({1, 4, 3}, g), mask = dl::ones({1, 4});
  mask.data<float>()[3] = 0;  // the last of 4 positions is padding
  auto run = [&](const dl::Tensor& in) {  // y (1, 4, 3) as a contiguous row-major vector
    dl::Tensor y = tm.forward(dl::Var(in), mask).data().contiguous();
    EXPECT_EQ(y.shape(), (dl::Shape{1, 4, 3}));
    return std::vector<float>(y.data<float>(), y.data<float>() + 12);
  };
  const std::vector<float> y = run(x);
  dl::Tensor x2 = x.clone();
  x2.data<float>()[3 * 3 + 1] += 5;  // the padded position's input
  const std::vector<float> y2 = run(x2);
  for (int i = 0; i < 12; i++) EXPECT_FLOAT_EQ(y[i], y2[i]) << "padding reached output " << i;
  dl::Tensor x3 = x.clone();
  x3.data<float>()[0] += 1;  // position 0, channel 0
  const std::vector<float> y3 = run(x3);
  EXPECT_NE(y[2 * 3 + 0], y3[2 * 3 + 0]) << "position 0 reaches position 2 (mixing along L)";
  EXPECT_FLOAT_EQ(y[2 * 3 + 1], y3[2 * 3 + 1]) << "channels do not mix";
}

TEST(StudiesMixers, StepTimeIsPositiveForEveryMixer) {
  for (const std::string& mixer : kMixers) {
    double ms = train_step_ms(tiny(mixer), 2, 8, 0, 1);
    EXPECT_GT(ms, 0) << mixer;
    EXPECT_LT(ms, 10000) << mixer;
  }
}

TEST(StudiesMixers, MiniatureRunWritesEveryRowTableAndPlots) {
  MixersOptions o;
  o.out = dl::test::app_temp_dir("studies_mixers");
  o.tasks = {"listops"}, o.seq_len = {{"listops", 32}}, o.steps = {{"listops", 4}};
  o.seeds = 2, o.d_model = 16, o.heads = 2, o.d_state = 4, o.kernel_size = 3, o.token_hidden = 4;
  o.batch = 8, o.eval_every = 2, o.train_size = 32, o.val_size = 16, o.test_size = 16;
  o.lengths = {16, 32}, o.sweep_batch = 2, o.quiet = true;
  run_mixers(o);
  const std::string md = dl::harness::read_text(o.out + "/mixers.md");
  for (const std::string& mixer : kMixers) {
    EXPECT_NE(md.find("| " + mixer + " |"), std::string::npos) << mixer << "\n" << md;
  }
  nlohmann::json j = nlohmann::json::parse(dl::harness::read_text(o.out + "/mixers.json"));
  ASSERT_EQ(j["arms"].size(), kMixers.size());
  for (auto& a : j["arms"]) {
    EXPECT_GT(a["ms_per_step"].get<double>(), 0);
    EXPECT_EQ(a["test"].size(), 2u);
  }
  EXPECT_EQ(j["sweep"].size(), 2 * kMixers.size());
  for (const char* p : {"accuracy", "time_vs_length", "accuracy_vs_time"})
    EXPECT_TRUE(std::filesystem::exists(o.out + "/plots/" + p + ".dat")) << p;
}

TEST(StudiesMixers, BadFlagsNameTheFlag) {
  auto parse = [](std::vector<std::string> args) {
    CLI::App app;
    add_mixers_command(app);
    args.insert(args.begin(), "mixers");
    std::reverse(args.begin(), args.end());
    try {
      app.parse(args);
    } catch (const CLI::ParseError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(parse({"--mixers", "attention,gru"}).find("--mixers"), std::string::npos);
  EXPECT_NE(parse({"--mixers", "attention,gru"}).find("gru"), std::string::npos);
  EXPECT_NE(parse({"--tasks", "imagenet"}).find("--tasks"), std::string::npos);
  EXPECT_NE(parse({"--lrs", "0.01,-1"}).find("--lrs"), std::string::npos);
  EXPECT_NE(parse({"--lengths", "128,x"}).find("--lengths"), std::string::npos);
  EXPECT_NE(parse({"--preset", "huge"}).find("--preset"), std::string::npos);
  EXPECT_NE(parse({"--seeds", "0"}).find("--seeds"), std::string::npos);
}
