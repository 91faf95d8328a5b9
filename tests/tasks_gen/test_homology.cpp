// tests/tasks_gen/test_homology.cpp - the homology stand-in (tasks/homology.h): the HMMER3 reader on the packaged
// profiles and on small files written here, the core-model sampler (exact on a model with one path, deterministic
// for a seed), the task's shapes and labels, and bad files named by file, line and what was expected.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>

#include "tasks/homology.h"
#include "data_error_of.h"

using namespace dl::tasks;
namespace fs = std::filesystem;

namespace {

bool have_examples() { return fs::exists(std::string(hmmer_examples_dir) + "/tutorial/fn3.hmm"); }

// 20 scores: residue `only` has probability 1 ("0"), the others 0 ("*"); only < 0: uniform (-ln 0.05 = 2.99573).
std::string emissions(int only) {
  std::string s;
  for (int a = 0; a < kAminoAcids; a++) s += only < 0 ? " 2.99573" : a == only ? " 0" : " *";
  return s;
}

// A model of `n` nodes in HMMER3/f layout whose match state k emits residue `residues[k-1]` surely; the transitions
// are MM = 1 (and, with `insert`, MI = 1/2 at node 1, II = 0): one path unless `insert`.
std::string tiny_hmm(const std::string& name, const std::vector<int>& residues, bool insert = false, const char* alph = "amino") {
  const size_t n = residues.size();
  std::string s = "HMMER3/f [3.3.2 | Nov 2020]\nNAME  " + name + "\nLENG  " + std::to_string(n) + "\nALPH  " + alph +
                  "\nHMM          A        C        D        E        F        G        H        I        K        L        M        N        P        Q        R        S        T        V        W        Y\n"
                  "            m->m     m->i     m->d     i->m     i->i     d->m     d->d\n"
                  "  COMPO" + emissions(-1) + "\n" + "       " + emissions(-1) + "\n" + "          0 * * 0 * 0 *\n";
  for (size_t k = 1; k <= n; k++) {
    s += "      " + std::to_string(k) + emissions(residues[k - 1]) + "   " + std::to_string(k) + " x - - -\n";
    s += "       " + emissions(kAminoAcids - 1) + "\n";  // inserts emit Y
    if (k == 1 && insert) s += "          0.69315 0.69315 * 0 * 0 *\n";
    else s += k == n ? "          0 * * 0 * 0 *\n" : "          0 * * 0 * 0 *\n";
  }
  return s + "//\n";
}

std::string temp_file(const std::string& name, const std::string& text) {
  const std::string dir = (fs::temp_directory_path() / "dl_test_homology").string();
  fs::create_directories(dir);
  std::ofstream(dir + "/" + name) << text;
  return dir + "/" + name;
}

}  // namespace

TEST(Hmmer3, ReadsThePackagedProfiles) {
  if (!have_examples()) GTEST_SKIP() << hmmer_examples_dir << " missing (apt-get install hmmer-examples)";
  const std::vector<ProfileHmm> fn3 = read_hmmer3(std::string(hmmer_examples_dir) + "/tutorial/fn3.hmm");
  ASSERT_EQ(fn3.size(), 1u);
  EXPECT_EQ(fn3[0].name, "fn3");
  EXPECT_EQ(fn3[0].length, 86);
  ASSERT_EQ(fn3[0].match.size(), 87u);
  // node 1 of fn3.hmm: P (index 12) has score 0.76706, so p = exp(-0.76706) = 0.4644 (before renormalising)
  EXPECT_NEAR(fn3[0].match[1][12], 0.4644, 0.002);
  for (int k = 1; k <= 86; k++) {
    EXPECT_NEAR(std::accumulate(fn3[0].match[k].begin(), fn3[0].match[k].end(), 0.0), 1.0, 1e-12) << k;
    EXPECT_NEAR(fn3[0].trans[k][kMM] + fn3[0].trans[k][kMI] + fn3[0].trans[k][kMD], 1.0, 1e-12) << k;
  }
  const std::vector<ProfileHmm> all = homology_families({});
  ASSERT_EQ(all.size(), hmmer_example_families().size());
  for (size_t i = 0; i < all.size(); i++) {
    EXPECT_EQ(all[i].name, hmmer_example_families()[i].first);
    EXPECT_GT(all[i].length, 50);
  }
}

TEST(Hmmer3, CoreEmissionFollowsTheProfile) {
  const std::vector<ProfileHmm> h = parse_hmmer3(tiny_hmm("abc", {0, 1, 2, 3}), "tiny.hmm");
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].length, 4);
  std::mt19937_64 rng(5);
  EXPECT_EQ(emit_sequence(h[0], rng), (std::vector<int32_t>{0, 1, 2, 3}));  // one path: ACDE
  // with node 1's M -> I at 1/2 and I -> M surely: ACDE or AYCDE, about half each
  const ProfileHmm ins = parse_hmmer3(tiny_hmm("ins", {0, 1, 2, 3}, true), "ins.hmm")[0];
  int longer = 0;
  for (int i = 0; i < 2000; i++) {
    const std::vector<int32_t> s = emit_sequence(ins, rng);
    if (s.size() == 5) {
      longer++;
      EXPECT_EQ(s, (std::vector<int32_t>{0, kAminoAcids - 1, 1, 2, 3}));
    } else {
      EXPECT_EQ(s, (std::vector<int32_t>{0, 1, 2, 3}));
    }
  }
  EXPECT_NEAR(longer / 2000.0, 0.5, 0.05);
  // two models in one file, in order
  const std::vector<ProfileHmm> two = parse_hmmer3(tiny_hmm("one", {4}) + tiny_hmm("two", {5, 6}), "two.hmm");
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[1].name, "two");
  EXPECT_EQ(two[1].length, 2);
}

TEST(Homology, TaskShapesLabelsAndDeterminism) {
  const std::string path = temp_file("three.hmm", tiny_hmm("a", std::vector<int>(30, 0)) + tiny_hmm("b", std::vector<int>(80, 1)) +
                                                      tiny_hmm("c", std::vector<int>(10, 2)));
  HomologyConfig c;
  c.path = path, c.window = 40, c.train_size = 30, c.val_size = 9, c.test_size = 12, c.seed = 3;
  const TaskData t = make_homology(c);
  ASSERT_EQ(t.train.examples.size(), 30u);
  ASSERT_EQ(t.val.examples.size(), 9u);
  ASSERT_EQ(t.test.examples.size(), 12u);
  EXPECT_EQ(t.train.num_classes, 3);
  EXPECT_EQ(t.train.vocab_size, 20);
  EXPECT_EQ(t.train.max_len, 40);
  EXPECT_EQ(t.train.class_names, (std::vector<std::string>{"a", "b", "c"}));
  int per_class[3] = {};
  for (auto& e : t.train.examples) {
    ASSERT_EQ(e.tokens.size(), 40u);
    for (int32_t tok : e.tokens) ASSERT_TRUE(tok >= 0 && tok < 20);
    per_class[e.label]++;
    // family b (80 nodes that emit C) is longer than the window: a pure fragment
    if (e.label == 1)
      for (int32_t tok : e.tokens) ASSERT_EQ(tok, 1);
    // family c (10 nodes of D) sits inside 30 background residues: at least its 10 Ds
    if (e.label == 2) EXPECT_GE(std::count(e.tokens.begin(), e.tokens.end(), 2), 10);
  }
  EXPECT_EQ(per_class[0], 10);
  EXPECT_EQ(per_class[1], 10);
  EXPECT_EQ(per_class[2], 10);
  const TaskData again = make_homology(c);
  for (size_t i = 0; i < t.train.examples.size(); i++) EXPECT_EQ(again.train.examples[i].tokens, t.train.examples[i].tokens);
  c.seed = 4;
  const TaskData other = make_homology(c);
  bool differs = false;
  for (size_t i = 0; i < t.train.examples.size(); i++) differs |= other.train.examples[i].tokens != t.train.examples[i].tokens;
  EXPECT_TRUE(differs);
  EXPECT_NE(t.train.examples[0].tokens, t.test.examples[0].tokens) << "the splits share a random stream";
  c.families = {"c", "a"};
  const TaskData picked = make_homology(c);
  EXPECT_EQ(picked.train.class_names, (std::vector<std::string>{"c", "a"}));
  c.families = {"zz"};
  EXPECT_NE(dl::test::data_error_of([&] { make_homology(c); }).find("no family 'zz' (found: a, b, c)"), std::string::npos);
}

TEST(Homology, PackagedFamiliesMakeATask) {
  if (!have_examples()) GTEST_SKIP() << hmmer_examples_dir << " missing (apt-get install hmmer-examples)";
  HomologyConfig c;
  c.train_size = 90, c.val_size = 18, c.test_size = 18;
  const TaskData t = make_homology(c);
  EXPECT_EQ(t.train.num_classes, 9);
  EXPECT_EQ(t.train.examples.size(), 90u);
  for (auto& e : t.train.examples) ASSERT_EQ(e.tokens.size(), 64u);
}

TEST(Hmmer3, BadFilesAreNamed) {
  const std::string good = tiny_hmm("g", {0, 1, 2});
  auto err = [&](const std::string& text) { return dl::test::data_error_of([&] { parse_hmmer3(text, "bad.hmm"); }); };
  std::string e = err("");
  EXPECT_NE(e.find("bad.hmm: no HMMER3 model"), std::string::npos) << e;
  e = err("HMMER2.0\n");
  EXPECT_NE(e.find("bad.hmm:1: expected a HMMER3 header line"), std::string::npos) << e;
  e = err(tiny_hmm("dna", {0}, false, "DNA"));
  EXPECT_NE(e.find("ALPH 'DNA', expected 'amino'"), std::string::npos) << e;
  // node 2's number written as 3 (line 13: 7 header lines, node 0's two, node 1's three, then node 2)
  std::string wrong = good;
  wrong.replace(wrong.find("\n      2 "), 9, "\n      3 ");
  e = err(wrong);
  EXPECT_NE(e.find("bad.hmm:13: expected the match emission line of node 2 of 3 (model g), found '3'"), std::string::npos) << e;
  std::string short_row = good;  // node 1's insert emissions lose a value
  const size_t at = short_row.find("\n        * * ");
  short_row.erase(at + 1, 9);
  e = err(short_row);
  EXPECT_NE(e.find("node 1 insert emissions: expected 20 values, found 19"), std::string::npos) << e;
  std::string bad_score = good;  // in node 0's insert emissions (line 8; the COMPO line above is not read)
  bad_score.replace(bad_score.find(" 2.99573", bad_score.find('\n', bad_score.find("COMPO"))), 8, " -1.5000");
  e = err(bad_score);
  EXPECT_NE(e.find("bad.hmm:8: node 0 insert emissions: expected a score -ln(p) >= 0 or '*', found '-1.5000'"), std::string::npos)
      << e;
  e = err(good.substr(0, good.size() - 3));
  EXPECT_NE(e.find("the file ends where '//' after the last node was expected"), std::string::npos) << e;
  e = err(good.substr(0, good.find("LENG")) + good.substr(good.find("ALPH")));
  EXPECT_NE(e.find("model g has no LENG line"), std::string::npos) << e;
  e = dl::test::data_error_of([&] { read_hmmer3("/nonexistent/x.hmm"); });
  EXPECT_NE(e.find("/nonexistent/x.hmm: profile HMM file is missing"), std::string::npos) << e;
  e = dl::test::data_error_of([&] { read_hmmer3(std::string(hmmer_examples_dir) + "/nope.hmm"); });
  EXPECT_NE(e.find("apt-get install hmmer-examples"), std::string::npos) << e;
  EXPECT_NE(dl::test::data_error_of([&] { homology_dataset(parse_hmmer3(good, "g"), 4, 8, 0, "one"); }).find("need at least 2 families"),
            std::string::npos);
}
