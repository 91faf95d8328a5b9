// tests/apps/test_precision.cpp - `--precision bf16` as a user meets it in an app (the classify example app's
// executable, in a child process; every app parses the switch in the harness, apps/common/experiment.cpp):
// - a bf16 cell records its precision in its result, and a later `--resume` in float32 is refused with an error that
//   names both precisions and what to do - for a finished cell and for one stopped halfway (its folder's marker) -
//   while a resume in bf16 goes on;
// - the bf16 products really run: the same cell's metrics differ from the float32 cell's;
// - with the bf16 arithmetic forced off (DL_BF16=off, as on a CPU without AVX512_BF16) the app says so on stderr and
//   computes exactly what float32 computes.
// The first two need a CPU with AVX512_BF16 and a build with the kernel; elsewhere they skip and say why.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "app_test_util.h"
#include "tensor/bf16.h"
#include "tensor/bf16_gemm.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

extern char** environ;

namespace {

const std::string kExe = std::string(DL_BINARY_DIR) + "/classify";

struct Child {
  pid_t pid = 0;
  std::string err_file;  // its stderr
};

// classify cell --task listops --layer attention (attention and linears: matrix products to round), small, with
// the extra arguments; stderr goes to <out>.stderr. `env` entries are added to the environment.
Child spawn_cell(const std::string& out, std::vector<std::string> extra, std::vector<std::string> env = {}) {
  std::vector<std::string> args = {kExe,      "cell",           "--task", "listops",      "--layer", "attention",  "--out",
                                   out,       "--threads",      "1",      "--seed",       "0",       "--set",      "seq_len=48",
                                   "--set",   "train_size=256", "--set",  "test_size=64", "--set",   "d_model=32", "--set",
                                   "layers=1"};
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> envs;
  for (char** e = environ; *e; e++) envs.push_back(*e);
  envs.insert(envs.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& e : envs) envp.push_back(e.data());
  envp.push_back(nullptr);
  Child c;
  c.err_file = out + ".stderr";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);  // the table goes to stdout
  posix_spawn_file_actions_addopen(&fa, 2, c.err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  EXPECT_EQ(posix_spawn(&c.pid, kExe.c_str(), &fa, nullptr, argv.data(), envp.data()), 0) << kExe;
  posix_spawn_file_actions_destroy(&fa);
  return c;
}

int wait_exit(const Child& c) {
  int status = 0;
  waitpid(c.pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

json only_cell(const std::string& out) {
  json j = json::parse(read_all(out + "/results.json"));
  EXPECT_EQ(j.at("cells").size(), 1u);
  return j.at("cells").at(0);
}

// What the run computed, to the last bit: the metrics and the last training loss (a float, unlike the accuracies).
std::string computed(const std::string& out) {
  json c = only_cell(out);
  return c.at("metrics").dump() + " train_loss " + c.at("curve").back().at("train_loss").dump();
}

// The skip reason where this machine cannot run bf16 products, else "".
std::string no_bf16_here() {
  if (dl::bf16_gemm_usable()) return "";
  dl::Precision was = dl::set_matmul_precision(dl::Precision::bf16);
  std::string why = dl::precision_note();
  dl::set_matmul_precision(was);
  return why;
}

const std::vector<std::string> kSteps = {"--set", "steps=40"};

}  // namespace

TEST(Precision, Bf16CellRecordsItAndAFloat32ResumeIsRefused) {
  if (std::string why = no_bf16_here(); !why.empty()) GTEST_SKIP() << why;
  std::string out = dl::test::app_temp_dir("precision_bf16");
  std::vector<std::string> bf16 = kSteps;
  bf16.insert(bf16.end(), {"--precision", "bf16"});
  Child c = spawn_cell(out, bf16);
  ASSERT_EQ(wait_exit(c), 0) << read_all(c.err_file);
  EXPECT_NE(read_all(c.err_file).find("precision bf16: matrix products on " + dl::bf16_gemm_path()), std::string::npos)
      << read_all(c.err_file);  // "VDPBF16PS, ..." or, on an Intel CPU with AMX, "AMX TDPBF16PS, ..."
  EXPECT_EQ(only_cell(out).dump().find("\"precision\":\"bf16\"") != std::string::npos, true) << only_cell(out).dump();

  std::vector<std::string> resume32 = kSteps;
  resume32.push_back("--resume");  // float32: the default
  Child r = spawn_cell(out, resume32);
  EXPECT_NE(wait_exit(r), 0) << "a float32 resume of a bf16 cell was accepted";
  const std::string err = read_all(r.err_file);
  EXPECT_NE(err.find("ran with --precision bf16"), std::string::npos) << err;
  EXPECT_NE(err.find("this run asks for --precision fp32"), std::string::npos) << err;

  std::vector<std::string> resume16 = bf16;
  resume16.push_back("--resume");
  Child ok = spawn_cell(out, resume16);
  EXPECT_EQ(wait_exit(ok), 0) << read_all(ok.err_file);
}

TEST(Precision, Bf16CellStoppedHalfwayResumesOnlyInBf16) {
  if (std::string why = no_bf16_here(); !why.empty()) GTEST_SKIP() << why;
  std::string out = dl::test::app_temp_dir("precision_half");
  const std::vector<std::string> cfg = {"--set", "steps=3000", "--precision", "bf16"};
  Child c = spawn_cell(out, cfg);
  const std::string manifest = out + "/cells/listops__attention__seed0/train/checkpoint.json";
  auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  while (!fs::exists(manifest) && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120) &&
         waitpid(c.pid, &status, WNOHANG) == 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(fs::exists(manifest)) << "no checkpoint within 120 s: " << read_all(c.err_file);
  kill(c.pid, SIGTERM);
  ASSERT_EQ(wait_exit(c), 130) << read_all(c.err_file);
  ASSERT_FALSE(fs::exists(out + "/results.json") && only_cell(out).contains("metrics")) << "the cell finished first";

  Child r = spawn_cell(out, {"--set", "steps=3000", "--resume"});
  EXPECT_NE(wait_exit(r), 0) << "a float32 resume of a half-done bf16 cell was accepted";
  const std::string err = read_all(r.err_file);
  EXPECT_NE(err.find("ran with --precision bf16 (" + out + "/cells/listops__attention__seed0)"), std::string::npos) << err;
}

TEST(Precision, Bf16ProductsChangeTheResultWhereTheCpuHasThem) {
  if (std::string why = no_bf16_here(); !why.empty()) GTEST_SKIP() << why;
  std::string a = dl::test::app_temp_dir("precision_a32"), b = dl::test::app_temp_dir("precision_b16");
  ASSERT_EQ(wait_exit(spawn_cell(a, kSteps)), 0);
  std::vector<std::string> bf16 = kSteps;
  bf16.insert(bf16.end(), {"--precision", "bf16"});
  ASSERT_EQ(wait_exit(spawn_cell(b, bf16)), 0);
  // 40 steps of Adam on bf16-rounded products: the loss cannot come out bit-equal to float32's unless nothing rounded
  EXPECT_NE(computed(a), computed(b));
}

TEST(Precision, Bf16ForcedOffComputesFloat32AndSaysSo) {
  std::string a = dl::test::app_temp_dir("precision_off32"), b = dl::test::app_temp_dir("precision_off16");
  Child c32 = spawn_cell(a, kSteps);
  ASSERT_EQ(wait_exit(c32), 0) << read_all(c32.err_file);
  std::vector<std::string> bf16 = kSteps;
  bf16.insert(bf16.end(), {"--precision", "bf16"});
  Child c16 = spawn_cell(b, bf16, {"DL_BF16=off"});
  ASSERT_EQ(wait_exit(c16), 0) << read_all(c16.err_file);
  const std::string err = read_all(c16.err_file);
  EXPECT_NE(err.find("precision bf16 requested, but DL_BF16=off in the environment: matrix products run in float32"),
            std::string::npos)
      << err;
  EXPECT_EQ(computed(a), computed(b)) << "DL_BF16=off did not compute float32";
}

// A value of DL_BF16 or DL_AMX that is neither off, on nor auto stops the app with one error line naming it (the
// precision note reads them; it used to fail halfway through printing its own line, which then read
// "classify: classify: error: ...").
TEST(Precision, ABadSwitchValueIsOneErrorLineNamingIt) {
  std::vector<std::string> bf16 = kSteps;
  bf16.insert(bf16.end(), {"--precision", "bf16"});
  for (const std::string& env : {std::string("DL_BF16=yes"), std::string("DL_AMX=yes")}) {
    const std::string out = dl::test::app_temp_dir("precision_bad_switch");
    Child c = spawn_cell(out, bf16, {env});
    EXPECT_NE(wait_exit(c), 0) << env << " was accepted";
    const std::string err = read_all(c.err_file), name = env.substr(0, env.find('='));
    EXPECT_NE(err.find("classify: error: " + name + "='yes': expected off, on or auto"), std::string::npos) << err;
    EXPECT_EQ(err.find("classify: classify:"), std::string::npos) << err;
  }
}
