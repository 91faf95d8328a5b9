// tests/apps/test_studies_mpirun.cpp - the studies under mpirun, as a user starts them: the data-parallel harness
// splits every batch over the ranks, which is right for a loss that is a mean over the batch's examples and wrong for
// one that couples the whole batch (CoSENT ranks every pair of the batch against every other; UniLM's contrastive
// loss takes the batch's other pairs as negatives): a shard would see fewer pairs and train on another loss. Those
// losses declare it (PhaseParts::whole_batch_loss) and every rank computes the whole batch, so two ranks must print
// the table of one process to the last digit, and say why they do not speed up.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "app_test_util.h"
#include "apps/common/comm.h"

namespace {

std::string find_mpirun() {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string d; std::getline(dirs, d, ':');)
    if (!d.empty() && ::access((d + "/mpirun").c_str(), X_OK) == 0) return d + "/mpirun";
  return "";
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// results.md without its last line ("written: <folder>/..."), which names the output folder.
std::string table_of(const std::string& out) {
  std::string md = read(out + "/results.md");
  const size_t w = md.rfind("written:");
  return w == std::string::npos ? md : md.substr(0, w);
}

// Runs `studies <args>` in one process and on two ranks; returns {one process's table, two ranks' table, two ranks' log}.
struct Runs {
  std::string one, two, log;
};
Runs one_and_two_ranks(const std::string& mpirun, const std::string& name, const std::string& args) {
  const std::string d = dl::test::app_temp_dir("studies_mpirun_" + name);
  const std::string exe = std::string(DL_BINARY_DIR) + "/studies " + name + " run --seeds 0 --threads 1 --quiet " + args;
  EXPECT_EQ(std::system((exe + " --out " + d + "/one > " + d + "/one.log 2>&1").c_str()), 0) << read(d + "/one.log");
  const std::string ranks = mpirun + " --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS=1 -np 2 ";
  EXPECT_EQ(std::system((ranks + exe + " --out " + d + "/two > " + d + "/two.log 2>&1").c_str()), 0) << read(d + "/two.log");
  return {table_of(d + "/one"), table_of(d + "/two"), read(d + "/two.log")};
}

// One study's table on two ranks equals one process's, and the two ranks' log says why they do not speed up.
void expect_one_process_table(const std::string& name, const std::string& args, const std::string& why) {
  const std::string mpirun = find_mpirun();
  if (mpirun.empty()) GTEST_SKIP() << "mpirun is not installed";
  if (!dl::harness::built_with_mpi()) GTEST_SKIP() << "built without MPI: the studies cannot run data-parallel";
  const Runs r = one_and_two_ranks(mpirun, name, args);
  EXPECT_FALSE(r.one.empty());
  EXPECT_EQ(r.one, r.two) << "two ranks trained another loss than one process";
  EXPECT_NE(r.log.find(why), std::string::npos) << r.log;
}

TEST(StudiesMpirun, CosentOnTwoRanksGivesOneProcesssTable) {
  expect_one_process_table("cosent",
                           "--tasks brown --arms cosent --set steps=12 --set eval_every=6 --set lrs='\"0.01\"' "
                           "--set queries=40 --set val_pairs=80 --set test_pairs=80",
                           "CoSENT ranks every pair of the batch");
}

TEST(StudiesMpirun, UnilmContrastiveArmOnTwoRanksGivesOneProcesssTable) {
  expect_one_process_table("unilm",
                           "--arms con --set steps=12 --set eval_every=6 --set checkpoint_every=6 "
                           "--set test_pairs=60 --set val_pairs=40 --set decode_pairs=5",
                           "takes the batch's other pairs as negatives");
}

}  // namespace
