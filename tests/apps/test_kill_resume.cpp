// tests/apps/test_kill_resume.cpp - kill anywhere, lose nothing: each app's executable runs a small cell in a child
// process, is killed with SIGKILL several times - at a random moment, and while a checkpoint file is being written
// (its temporary "<file>.tmp.<pid>" exists) - and is restarted with --resume each time. The finished run must leave
// a model file byte-identical to an uninterrupted run of the same cell, and the same metrics.
//
// A SIGKILL cannot be caught: no handler runs, so what survives is exactly what was on disk (the atomic writes and
// the checkpoint manifest written last, optim/checkpoint.h). The LRA cell has two phases (self-pretraining, then
// fine-tuning), so kills land in both. Every app is covered: lra_benchmark, pretrained_convs, fpt and the classify
// example app, and - where mpirun is installed - a 2-rank data-parallel cell, whose whole job (mpirun and both
// ranks) is killed at once, as a lost machine or an out-of-memory kill of the job would, and resumed under
// mpirun -np 2 --resume.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <random>
#include <thread>

#include "app_test_util.h"
#include "apps/common/comm.h"
#include "optim/checkpoint.h"

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

extern char** environ;

namespace {

struct AppCell {
  std::string name;                   // the executable in the build folder
  std::vector<std::string> args;      // after "cell"
  std::vector<std::string> launcher;  // what starts it, if anything: mpirun and its options (the ranks are its children)
};

pid_t spawn(const AppCell& a, const std::string& out, bool resume) {
  std::vector<std::string> args = a.launcher;
  for (std::string s : {std::string(DL_BINARY_DIR) + "/" + a.name, std::string("cell"), std::string("--out"), out,
                        std::string("--quiet"), std::string("--threads"), std::string("1"), std::string("--seed"), std::string("0")})
    args.push_back(s);
  args.insert(args.end(), a.args.begin(), a.args.end());
  if (resume) args.push_back("--resume");
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0].c_str(), &fa, nullptr, argv.data(), environ);
  EXPECT_EQ(rc, 0) << args[0] << ": " << std::strerror(rc);
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

// Every process below `root` (its children, theirs, ...), read from /proc. mpirun's ranks are its children, each in a
// process group of its own, so a signal to mpirun's group would not reach them.
std::vector<pid_t> descendants(pid_t root) {
  std::vector<std::pair<pid_t, pid_t>> parent_of;  // (pid, ppid)
  for (auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t close = stat.rfind(')');  // "pid (comm) state ppid ...": comm may hold spaces
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    char state = 0;
    pid_t ppid = 0;
    if (rest >> state >> ppid) parent_of.push_back({(pid_t)std::stoi(name), ppid});
  }
  std::vector<pid_t> found{root};
  for (size_t i = 0; i < found.size(); i++)
    for (auto& [pid, ppid] : parent_of)
      if (ppid == found[i]) found.push_back(pid);
  found.erase(found.begin());
  return found;
}

// SIGKILL to a job: the process and everything below it, at once.
std::vector<pid_t> kill_job(pid_t pid) {
  std::vector<pid_t> below = descendants(pid);
  kill(pid, SIGKILL);
  for (pid_t p : below) kill(p, SIGKILL);
  return below;
}

// Waits until none of `pids` runs any more (they are not our children: init reaps them). False after 10 s.
bool all_gone(const std::vector<pid_t>& pids) {
  for (int i = 0; i < 10000; i++) {
    bool any = false;
    for (pid_t p : pids) any = any || ::kill(p, 0) == 0;
    if (!any) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

// The exit code, or 128 + the signal that ended it; -1 while it still runs (when !block).
int reap(pid_t pid, bool block) {
  int status = 0;
  if (waitpid(pid, &status, block ? 0 : WNOHANG) == 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool has_checkpoint(const std::string& out) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(out, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->path().filename() == "checkpoint.json") return true;
  return false;
}

bool writing_a_file(const std::string& out) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(out, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->path().filename().string().find(".tmp.") != std::string::npos) return true;
  return false;
}

// The finished cell's folder (out/cells/<one>), its metrics and its model file.
std::string cell_dir(const std::string& out) {
  std::vector<fs::path> cells;
  for (auto& e : fs::directory_iterator(out + "/cells")) cells.push_back(e.path());
  EXPECT_EQ(cells.size(), 1u) << out;
  return cells.empty() ? "" : cells[0].string();
}

// The finished model: the cell's model file, or (the classify app writes none) the final checkpoint's of its phase.
std::string model_file(const std::string& out) {
  const std::string cell = cell_dir(out);
  if (fs::exists(cell + "/model.safetensors")) return cell + "/model.safetensors";
  auto last = dl::optim::latest_checkpoint(cell + "/train");
  EXPECT_TRUE(last.has_value()) << cell << " has neither model.safetensors nor a checkpoint in train/";
  return last ? last->model_path : "";
}

json metrics(const std::string& out) {
  std::ifstream in(cell_dir(out) + "/result.json");
  return json::parse(in).at("metrics");
}

// Runs `a` whole into <base>/whole; then into <base>/part, killed `kills` times (even kills at a random moment after
// the first checkpoint, odd kills while a file is being written) and resumed after each; then compares.
void expect_survives_kills(const AppCell& a, const std::string& base, int kills, uint64_t seed) {
  const std::string whole = base + "/whole", part = base + "/part";
  const auto t0 = Clock::now();
  ASSERT_EQ(reap(spawn(a, whole, false), true), 0) << a.name << " (uninterrupted) failed";
  const double whole_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::mt19937_64 rng(seed);
  int killed = 0, in_write = 0, attempts = 0;
  bool finished = false;
  while (killed < kills && attempts++ < 3 * kills) {
    const pid_t pid = spawn(a, part, attempts > 1);
    const bool at_write = killed % 2 == 1;
    const auto start = Clock::now();
    // a random moment within the first third of an uninterrupted run's time (a resumed run has less left to do),
    // once a first checkpoint exists
    const double delay = std::uniform_real_distribution<double>(0.05, 0.35)(rng) * whole_s;
    int code = -1;
    while ((code = reap(pid, false)) < 0) {
      const double t = std::chrono::duration<double>(Clock::now() - start).count();
      if (has_checkpoint(part) && (at_write ? writing_a_file(part) || t > 2 * whole_s : t > delay)) {
        const bool mid_write = writing_a_file(part);
        const std::vector<pid_t> below = kill_job(pid);
        code = reap(pid, true);
        EXPECT_TRUE(all_gone(below)) << a.name << ": a process of the killed job still runs";
        if (code == 128 + SIGKILL) killed++, in_write += mid_write;
        break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    ASSERT_TRUE(code == 0 || code == 128 + SIGKILL) << a.name << " exited with " << code;
    if (code == 0) {
      finished = true;
      break;
    }
  }
  if (!finished) ASSERT_EQ(reap(spawn(a, part, true), true), 0) << a.name << " did not resume after " << killed << " kills";
  EXPECT_GE(killed, 2) << a.name << ": the run ended before it could be killed; make the cell longer";
  EXPECT_GE(in_write, 1) << a.name << ": no kill landed in a checkpoint write";
  dl::test::expect_identical_weights(model_file(whole), model_file(part));
  EXPECT_EQ(metrics(whole), metrics(part)) << a.name;
  std::cerr << "[kill-resume] " << a.name << (a.launcher.empty() ? "" : " under mpirun") << ": " << killed << " SIGKILLs (" << in_write
            << " during a checkpoint write), resumed to identical weights; uninterrupted run " << whole_s << " s\n";
}

}  // namespace

TEST(KillResume, LraBenchmarkSelfPretrainingThenFineTuning) {
  expect_survives_kills({"lra_benchmark",
                         {"--task", "listops", "--model", "transformer", "--regime", "spt-masked", "--set", "seq_len=64",
                          "--set", "train_size=256", "--set", "val_size=64", "--set", "test_size=64", "--set", "d_model=32",
                          "--set", "layers=1", "--set", "batch=8", "--set", "pretrain_steps=100", "--set", "steps=100",
                          "--set", "eval_every=30", "--set", "checkpoint_every=5"}, {}},
                        dl::test::app_temp_dir("kill_lra"), 4, 1);
}

TEST(KillResume, PretrainedConvsSeq2Seq) {
  // (the span-corruption pretraining is cached in the data cache, shared by every run: its own resume is tested in
  // test_pretrained_convs.cpp, in process)
  expect_survives_kills({"pretrained_convs",
                         {"--task", "sentiment", "--model", "lightconv", "--regime", "scratch", "--set", "train_size=256",
                          "--set", "val_size=64", "--set", "test_size=64", "--set", "max_src=64", "--set", "d_model=32",
                          "--set", "d_ff=64", "--set", "layers=1", "--set", "decoder_layers=1", "--set", "batch=8",
                          "--set", "steps=300", "--set", "eval_every=150", "--set", "eval_examples=64", "--set",
                          "checkpoint_every=5"}, {}},
                        dl::test::app_temp_dir("kill_pconv"), 4, 2);
}

TEST(KillResume, FptFrozenTransformerOnBits) {
  expect_survives_kills({"fpt",
                         {"--task", "bit_xor", "--arm", "random", "--set", "layers=1", "--set", "d_model=32", "--set",
                          "heads=2", "--set", "batch=8", "--set", "steps=300", "--set", "eval_every=150", "--set",
                          "checkpoint_every=5"}, {}},
                        dl::test::app_temp_dir("kill_fpt"), 4, 3);
}

TEST(KillResume, ClassifyExampleApp) {
  // (classify checkpoints at every evaluation: eval_every=5 with a small validation split)
  expect_survives_kills({"classify",
                         {"--task", "listops", "--layer", "s4d", "--set", "seq_len=64", "--set", "train_size=256", "--set",
                          "val_size=16", "--set", "test_size=64", "--set", "d_model=32", "--set", "batch=8", "--set",
                          "steps=300", "--set", "eval_every=5"}, {}},
                        dl::test::app_temp_dir("kill_classify"), 4, 4);
}

// mpirun on the PATH, or "" when it is not installed.
static std::string find_mpirun() {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string d; std::getline(dirs, d, ':');)
    if (!d.empty() && ::access((d + "/mpirun").c_str(), X_OK) == 0) return d + "/mpirun";
  return "";
}

TEST(KillResume, DataParallelTwoRanksKilledAsAWholeJob) {
  const std::string mpirun = find_mpirun();
  if (mpirun.empty()) GTEST_SKIP() << "mpirun is not installed";
  // the apps of a build without MPI (-DDL_MPI=OFF, as scripts/fuzz.sh's sanitizer build) run each rank alone
  if (!dl::harness::built_with_mpi()) GTEST_SKIP() << "built without MPI: the apps cannot run data-parallel";
  // OpenMPI's flags for root (CI) and for 2 ranks on fewer cores (docs/distributed.md); one thread per rank
  const AppCell a{"classify",
                  {"--task", "listops", "--layer", "lstm", "--set", "seq_len=64", "--set", "train_size=256", "--set",
                   "val_size=16", "--set", "test_size=64", "--set", "d_model=16", "--set", "batch=8", "--set", "steps=200",
                   "--set", "eval_every=5"},
                  {mpirun, "--allow-run-as-root", "--oversubscribe", "-x", "OMP_NUM_THREADS=1", "-np", "2"}};
  const std::string base = dl::test::app_temp_dir("kill_mpirun");
  expect_survives_kills(a, base, 4, 5);
  for (const std::string run : {"whole", "part"}) {  // both were data-parallel runs (not two single processes)
    std::ifstream in(cell_dir(base + "/" + run) + "/result.json");
    EXPECT_EQ(json::parse(in).at("extra").value("ranks", 1), 2) << run << ": classify was not built with MPI?";
  }
}
