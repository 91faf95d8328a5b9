// tests/tasks_gen/test_speech.cpp - espeak-ng keyword synthesis, mu-law, WAV parsing, Speech Commands folders.
#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "data_error_of.h"
#include "tasks/speech.h"

namespace fs = std::filesystem;
using namespace dl::tasks;

namespace {

double rms(const std::vector<float>& x, size_t from, size_t to) {
  double e = 0;
  for (size_t i = from; i < to; ++i) e += double(x[i]) * x[i];
  return std::sqrt(e / double(to - from));
}

std::vector<int16_t> tone(size_t n, double freq) {
  std::vector<int16_t> s(n);
  for (size_t i = 0; i < n; ++i) s[i] = int16_t(8000 * std::sin(2 * 3.14159265 * freq * double(i) / 16000));
  return s;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("dl_tasks_gen_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

}  // namespace

TEST(Speech, SynthesisedWordsAreAudibleAndDistinct) {
  const std::vector<float> yes = synthesize_word("yes", "en-us", 175, 50);
  const std::vector<float> yes2 = synthesize_word("yes", "en-us", 175, 50);
  const std::vector<float> no = synthesize_word("no", "en-us", 175, 50);
  const std::vector<float> scot = synthesize_word("yes", "en-gb-scotland+f2", 175, 50);
  EXPECT_EQ(yes, yes2);           // espeak-ng itself is deterministic
  EXPECT_GT(yes.size(), 1600u);   // > 0.1 s of speech
  EXPECT_LT(yes.size(), 16000u);  // < 1 s
  EXPECT_GT(rms(yes, 0, yes.size()), 0.02);
  EXPECT_NE(yes, no);
  EXPECT_NE(yes, scot);
  EXPECT_THROW(synthesize_word("yes", "no-such-voice-xyz", 175, 50), DataError);
}

TEST(Speech, ClipsAreOneSecondNonSilentAndSeeded) {
  SpeechConfig c;
  c.encoding = AudioEncoding::float_samples;
  std::mt19937_64 rng(1);
  const std::vector<float> clip = synthesize_clip(c, "stop", rng);
  ASSERT_EQ(clip.size(), 16000u);
  for (float s : clip) ASSERT_TRUE(s >= -1.0f && s <= 1.0f);
  // The word sits near the middle: the central 0.3 s is much louder than the first 0.1 s (noise only,
  // unless the word is long and shifted, which the 0.1 s bound on the shift rules out for "stop").
  EXPECT_GT(rms(clip, 6500, 9500), 3 * rms(clip, 0, 1600));
  EXPECT_GT(rms(clip, 6500, 9500), 0.03);

  const Dataset a = make_synthetic_speech(c, 12, 5), b = make_synthetic_speech(c, 12, 5);
  EXPECT_EQ(a.feature_dim, 1);
  EXPECT_EQ(a.num_classes, 10);
  EXPECT_EQ(a.max_len, 16000);
  for (size_t i = 0; i < a.examples.size(); ++i) {
    EXPECT_EQ(a.examples[i].features, b.examples[i].features) << i;
    EXPECT_EQ(a.examples[i].features.size(), 16000u);
  }
  // Classes are balanced: 12 examples over 10 words -> each word once or twice.
  std::vector<int> count(10, 0);
  for (const Example& e : a.examples) ++count[size_t(e.label)];
  for (int n : count) EXPECT_TRUE(n == 1 || n == 2);
}

TEST(Speech, MuLawTokens) {
  EXPECT_EQ(mu_law_encode(-1.0f), 0);
  EXPECT_EQ(mu_law_encode(1.0f), 255);
  EXPECT_EQ(mu_law_encode(0.0f), 128);
  for (float x : {-0.9f, -0.1f, -0.001f, 0.002f, 0.05f, 0.5f})
    EXPECT_NEAR(mu_law_decode(mu_law_encode(x)), x, 0.02 * std::abs(x) + 2e-4) << x;
  const Dataset d = make_synthetic_speech(SpeechConfig{}, 3, 2);
  EXPECT_EQ(d.vocab_size, 256);
  for (const Example& e : d.examples) {
    ASSERT_EQ(e.tokens.size(), 16000u);
    for (int32_t t : e.tokens) ASSERT_TRUE(t >= 0 && t < 256);
  }
  EXPECT_NE(d.examples[0].tokens, d.examples[1].tokens);
}

TEST(Speech, ConcurrentSynthesisIsSerialisedSafely) {
  const std::vector<float> want_a = synthesize_word("left", "en", 160, 40);
  const std::vector<float> want_b = synthesize_word("right", "en-029", 200, 60);
  std::vector<float> got_a, got_b;
  std::thread t1([&] {
    for (int i = 0; i < 3; ++i) got_a = synthesize_word("left", "en", 160, 40);
  });
  std::thread t2([&] {
    for (int i = 0; i < 3; ++i) got_b = synthesize_word("right", "en-029", 200, 60);
  });
  t1.join();
  t2.join();
  EXPECT_EQ(got_a, want_a);
  EXPECT_EQ(got_b, want_b);
}

// The utterances are forked by the helper process (tasks/speech.cpp), never by this one: a fork of a process whose
// other threads may hold an allocator lock can hang the child (clang 14's ASan allocator did). pthread_atfork's
// parent handler runs in this process after each fork() it makes; posix_spawn, which starts the helper, runs none.
std::atomic<int> g_forks{0};

TEST(Speech, ThisProcessNeverForks) {
  static const bool registered = pthread_atfork(nullptr, [] { g_forks++; }, nullptr) == 0;
  ASSERT_TRUE(registered);
  const int before = g_forks.load();
  for (const char* w : {"go", "stop", "up"}) EXPECT_GT(synthesize_word(w, "en", 175, 50).size(), 1600u) << w;
  EXPECT_EQ(g_forks.load() - before, 0) << "synthesis forked this process";
}

// What hung under ASan when this process forked: a second thread allocating all the while. Here the helper forks,
// so whatever allocator this process has, the utterances come back, equal to those made on a quiet thread.
TEST(Speech, SynthesisWhileAnotherThreadAllocates) {
  const std::vector<float> want = synthesize_word("down", "en", 170, 45);
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    std::vector<std::vector<char>> keep(64);
    for (size_t i = 0; !stop.load(); ++i) keep[i % keep.size()].assign(1 + i % 4096, char(i));
  });
  bool same = true;
  for (int i = 0; i < 20; ++i) same = same && synthesize_word("down", "en", 170, 45) == want;
  stop = true;
  churn.join();
  EXPECT_TRUE(same);
}

TEST(Wav, RoundTripAndParserRejectsBadFiles) {
  const fs::path dir = fresh_dir("wav");
  const std::string path = (dir / "a.wav").string();
  const std::vector<int16_t> s = tone(1234, 440);
  write_wav(path, s, 16000);
  const WavData w = read_wav(path);
  EXPECT_EQ(w.sample_rate, 16000);
  EXPECT_EQ(w.channels, 1);
  EXPECT_EQ(w.samples, s);

  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Truncated data chunk.
  std::string msg = dl::test::data_error_of([&] { parse_wav(bytes.substr(0, bytes.size() - 10), "cut.wav"); });
  EXPECT_NE(msg.find("cut.wav: chunk \"data\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  // Not RIFF.
  msg = dl::test::data_error_of([&] { parse_wav("hello world, not audio", "text.wav"); });
  EXPECT_NE(msg.find("text.wav: not a RIFF/WAVE file"), std::string::npos) << msg;
  // 8-bit samples (bits per sample at byte offset 34), float format (tag at 20).
  std::string eight = bytes;
  eight[34] = 8;
  msg = dl::test::data_error_of([&] { parse_wav(eight, "8bit.wav"); });
  EXPECT_NE(msg.find("expected 16 bits per sample, found 8"), std::string::npos) << msg;
  std::string fl = bytes;
  fl[20] = 3;
  msg = dl::test::data_error_of([&] { parse_wav(fl, "float.wav"); });
  EXPECT_NE(msg.find("found format tag 3 (IEEE float)"), std::string::npos) << msg;
  // An unknown chunk before data is skipped (odd size, so the pad byte matters).
  std::string with_list = bytes.substr(0, 36) + "LIST" + std::string("\x03\0\0\0abc\0", 8) + bytes.substr(36);
  EXPECT_EQ(parse_wav(with_list, "list.wav").samples, s);
  // A missing file names itself.
  msg = dl::test::data_error_of([&] { read_wav((dir / "missing.wav").string()); });
  EXPECT_NE(msg.find("missing.wav: cannot open"), std::string::npos) << msg;
  fs::remove_all(dir);
}

TEST(Wav, SpeechCommandsFolders) {
  const fs::path root = fresh_dir("sc");
  for (const char* w : {"yes", "no", "_background_noise_"}) fs::create_directories(root / w);
  for (int i = 0; i < 4; ++i) {
    write_wav((root / "yes" / ("y" + std::to_string(i) + ".wav")).string(), tone(16000, 300 + i), 16000);
    write_wav((root / "no" / ("n" + std::to_string(i) + ".wav")).string(), tone(8000, 500), 16000);  // short
  }
  write_wav((root / "_background_noise_" / "noise.wav").string(), tone(32000, 50), 16000);
  std::ofstream(root / "validation_list.txt") << "yes/y1.wav\nno/n1.wav\n";
  std::ofstream(root / "testing_list.txt") << "yes/y2.wav\r\n";
  const TaskData d = read_speech_commands(root.string(), {});
  EXPECT_EQ(d.train.class_names, (std::vector<std::string>{"no", "yes"}));
  EXPECT_EQ(d.train.examples.size(), 5u);
  EXPECT_EQ(d.val.examples.size(), 2u);
  EXPECT_EQ(d.test.examples.size(), 1u);
  EXPECT_EQ(d.test.examples[0].label, 1);
  const Example& short_clip = d.train.examples[0];  // no/n0.wav, 8000 samples padded with silence
  ASSERT_EQ(short_clip.tokens.size(), 16000u);
  EXPECT_EQ(short_clip.tokens[15999], mu_law_encode(0.0f));

  write_wav((root / "yes" / "bad.wav").string(), tone(100, 300), 8000);
  const std::string msg = dl::test::data_error_of([&] { read_speech_commands(root.string(), {}); });
  EXPECT_NE(msg.find("yes/bad.wav: expected mono 16000 Hz audio, found 1 channel(s) at 8000 Hz"), std::string::npos) << msg;
  fs::remove(root / "testing_list.txt");
  EXPECT_NE(dl::test::data_error_of([&] { read_speech_commands(root.string(), {}); }).find("testing_list.txt: cannot open"),
            std::string::npos);
  fs::remove_all(root);
}
