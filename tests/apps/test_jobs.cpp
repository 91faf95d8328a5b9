// tests/apps/test_jobs.cpp - --jobs N (apps/common/jobs.h) through the real lra_benchmark executable: the cells of a
// sweep run in N worker processes, each cell by exactly one of them, and every cell's weights and metrics equal
// those of the same sweep run in one process; a stopped sweep resumes to the same weights; a worker that fails is
// named with its log.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "app_test_util.h"
#include "apps/common/results.h"

namespace fs = std::filesystem;
namespace harness = dl::harness;

namespace {

const std::string kApp = std::string(DL_BINARY_DIR) + "/lra_benchmark";

// Four cells (one model, two regimes, two seeds) of a few dozen steps each; `steps` sets their length.
std::string write_preset(const std::string& dir, int steps) {
  const std::string path = dir + "/jobs.json";
  std::ofstream(path) << R"({
    "tasks": ["listops"], "models": ["transformer"], "regimes": ["scratch", "spt-masked"], "seeds": [0, 1],
    "defaults": {"d_model": 16, "layers": 1, "heads": 2, "dropout": 0.1, "batch": 8, "warmup": 2,
                 "steps": )" << steps << R"(, "eval_every": )" << steps << R"(, "eval_batches": 2,
                 "checkpoint_every": 10, "pretrain_steps": )" << steps << R"(, "seq_len": 64, "train_size": 64,
                 "val_size": 16, "test_size": 16}
  })";
  return path;
}

int run(const std::string& args, const std::string& log) {
  const int st = std::system((kApp + " " + args + " > " + log + " 2>&1").c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::string text_of(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

const std::vector<std::string> kCells = {"listops__transformer__scratch__seed0", "listops__transformer__scratch__seed1",
                                         "listops__transformer__spt-masked__seed0", "listops__transformer__spt-masked__seed1"};

// Every cell's weights byte for byte and its metrics equal between two run folders.
void expect_same_cells(const std::string& a, const std::string& b) {
  for (auto& c : kCells) {
    dl::test::expect_identical_weights(a + "/cells/" + c + "/model.safetensors", b + "/cells/" + c + "/model.safetensors");
    auto ra = harness::CellResult::from_json(harness::json::parse(harness::read_text(a + "/cells/" + c + "/result.json")));
    auto rb = harness::CellResult::from_json(harness::json::parse(harness::read_text(b + "/cells/" + c + "/result.json")));
    EXPECT_EQ(ra.metrics, rb.metrics) << c;
  }
}

}  // namespace

TEST(Jobs, TwoJobsSplitTheCellsAndGiveTheResultsOfOneProcess) {
  const std::string d = dl::test::app_temp_dir("jobs_split"), preset = write_preset(d, 30);
  ASSERT_EQ(run("run --preset " + preset + " --threads 1 --out " + d + "/one", d + "/one.log"), 0) << text_of(d + "/one.log");
  ASSERT_EQ(run("run --preset " + preset + " --jobs 2 --out " + d + "/two", d + "/two.log"), 0) << text_of(d + "/two.log");
  expect_same_cells(d + "/one", d + "/two");
  EXPECT_TRUE(fs::exists(d + "/two/results.md"));  // (its wall-time and steps/s columns differ from one's)

  // each cell ran in exactly one job, and both jobs ran cells (the claims and the workers' logs say which)
  std::map<std::string, int> runs;  // cell label -> how many logs say it ran
  std::map<int, int> per_job;
  for (int k = 0; k < 2; k++) {
    std::istringstream log(text_of(d + "/two/jobs/worker" + std::to_string(k) + ".log"));
    for (std::string l; std::getline(log, l);)
      if (l.find(" runs in job " + std::to_string(k)) != std::string::npos) runs[l.substr(0, l.find(']') + 1)]++, per_job[k]++;
  }
  EXPECT_EQ(runs.size(), 4u);
  for (auto& [label, n] : runs) EXPECT_EQ(n, 1) << label << " ran in more than one job";
  EXPECT_GE(per_job[0], 1);
  EXPECT_GE(per_job[1], 1);
  for (auto& c : kCells) EXPECT_TRUE(fs::exists(d + "/two/jobs/claims/" + c + ".done")) << c;
  EXPECT_NE(text_of(d + "/two.log").find("(4/4 cells)"), std::string::npos) << text_of(d + "/two.log");
}

TEST(Jobs, AStoppedSweepResumesToTheWeightsOfAnUninterruptedOne) {
  // 400 steps a phase: the cells of this tiny model run at ~300 steps/s, and the stop below must land inside one
  const std::string d = dl::test::app_temp_dir("jobs_stop"), preset = write_preset(d, 400);
  ASSERT_EQ(run("run --preset " + preset + " --threads 1 --quiet --out " + d + "/one", d + "/one.log"), 0)
      << text_of(d + "/one.log");

  // start a two-job sweep, and stop it (SIGINT, as a Ctrl-C) once both jobs are inside a cell's training
  const std::string log = d + "/two.log";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1), ::dup2(fd, 2);
    const std::string out = d + "/two";
    ::execl(kApp.c_str(), kApp.c_str(), "run", "--preset", preset.c_str(), "--jobs", "2", "--out", out.c_str(), (char*)nullptr);
    ::_exit(127);
  }
  // The worker's status line shows the step ("  12/400"), rewritten at most twice a second. It stays on the file after
  // a phase ends ("400/400"), so a worker counts as training only while the count is short of 400; each worker has
  // two cells, so a stop sent then finds the sweep unfinished.
  auto training = [&](int k) {
    const std::string st = text_of(d + "/two/jobs/worker" + std::to_string(k) + ".status");
    const size_t slash = st.find("/400");
    if (slash == std::string::npos) return false;
    size_t b = slash;
    while (b > 0 && std::isdigit((unsigned char)st[b - 1])) b--;
    return b < slash && std::stoi(st.substr(b, slash - b)) < 400;
  };
  const auto t0 = std::chrono::steady_clock::now();
  while (!(training(0) && training(1)) && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ::kill(pid, SIGINT);
  int st = 0;
  ASSERT_EQ(::waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 130) << text_of(log);
  EXPECT_NE(text_of(log).find("continue with --resume"), std::string::npos) << text_of(log);
  EXPECT_FALSE(fs::exists(d + "/two/.lock")) << "the run lock outlived the run";

  ASSERT_EQ(run("run --preset " + preset + " --jobs 2 --resume --out " + d + "/two", d + "/resume.log"), 0)
      << text_of(d + "/resume.log");
  expect_same_cells(d + "/one", d + "/two");
}

TEST(Jobs, AFailingJobIsNamedWithItsLog) {
  const std::string d = dl::test::app_temp_dir("jobs_fail"), preset = write_preset(d, 30);
  // the official-format ListOps loader reads data_path when the cell runs, inside a worker
  EXPECT_EQ(run("run --preset " + preset + " --jobs 2 --set data_path=" + d + "/missing --out " + d + "/two", d + "/two.log"), 1);
  const std::string log = text_of(d + "/two.log");
  EXPECT_NE(log.find("failed (exit status 1); the end of its log " + d + "/two/jobs/worker"), std::string::npos) << log;
  EXPECT_NE(log.find(d + "/missing"), std::string::npos) << "the worker's own error is shown: " << log;
}
