// tests/optim/test_checkpoint.cpp - exact resume and the checkpoint protocol's refusals (optim/checkpoint.h).
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "op_harness.h"
#include "optim/adam.h"
#include "optim/checkpoint.h"
#include "optim/clip.h"
#include "optim/param_groups.h"
#include "optim/schedule.h"
#include "tensor/safetensors.h"
#include "tiny_model.h"

using namespace dl;
using namespace dl::test;
using namespace dl::optim;
namespace fs = std::filesystem;

namespace {

std::string scratch_dir(const std::string& name) {
  fs::path d = fs::path(DL_BINARY_DIR) / "test_optim_tmp" / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

// Everything a run owns. Rebuilt from nothing for a resume.
struct TrainRun {
  std::shared_ptr<TinyMLP> model;
  std::unique_ptr<AdamW> opt;
  Schedule sched = warmup_cosine(5, 20, 1e-4);
  Generator data{1234};  // batches
  Generator noise{99};   // label noise: a second generator whose state must travel too
  int64_t step = 0;

  explicit TrainRun(uint64_t init_seed) {
    model = std::make_shared<TinyMLP>(4, 16, 3, init_seed);
    GroupingOptions g;
    g.lr = 3e-2;
    g.weight_decay = 0.1;
    g.no_decay_norm_bias_embed = true;
    opt = std::make_unique<AdamW>(make_param_groups(*model, g));
  }
  void train(int n) {
    for (int i = 0; i < n; i++, step++) {
      Tensor x = randn({8, 4}, data);
      Tensor t = add(tanh(x.narrow(1, 0, 3)), mul_scalar(randn({8, 3}, noise), 0.1));
      Var y = model->forward(Var(x));
      y.backward(mul_scalar(sub(y.data(), t), 2.0 / (double)y.numel()));  // d mean((y - t)^2)
      clip_grad_norm(model->parameters(), 0.5);
      apply_schedule(*opt, sched, step);
      opt->step();
      opt->zero_grad();
      model->num_batches().fill_((double)step + 1);
    }
  }
  TrainingState state() const {
    TrainingState st;
    st.step = step;
    st.epoch = step / 7;
    st.best_metric = 0.25;
    st.data_position = "batch " + std::to_string(step);
    st.save_rng("data", data);
    st.save_rng("noise", noise);
    return st;
  }
  void resume(const std::string& dir) {
    TrainingState st = load_checkpoint(dir, *model, *opt);
    step = st.step;
    st.restore_rng("data", data);
    st.restore_rng("noise", noise);
    EXPECT_EQ(st.data_position, "batch " + std::to_string(step));
    EXPECT_EQ(st.epoch, step / 7);
    EXPECT_EQ(st.best_metric, 0.25);
  }
};

::testing::AssertionResult bit_identical(const nn::Module& a, const nn::Module& b) {
  auto sa = a.state_dict(), sb = b.state_dict();
  if (sa.size() != sb.size()) return ::testing::AssertionFailure() << "different tensor counts";
  for (auto& [n, t] : sa) {
    const Tensor& u = sb.at(n);
    if (t.shape() != u.shape() || std::memcmp(t.raw_data(), u.raw_data(), (size_t)t.numel() * dtype_size(t.dtype())) != 0)
      return ::testing::AssertionFailure() << n << " differs";
  }
  return ::testing::AssertionSuccess();
}

TEST(Checkpoint, ResumeIsBitIdentical) {
  std::string dir = scratch_dir("resume");
  TrainRun straight(7);
  straight.train(20);

  {
    TrainRun first(7);
    first.train(10);
    CheckpointInfo info = save_checkpoint(dir, *first.model, *first.opt, first.state());
    EXPECT_EQ(info.step, 10);
  }                        // everything destroyed
  TrainRun second(12345);  // even a different initialisation: the checkpoint must overwrite all of it
  second.resume(dir);
  EXPECT_EQ(second.step, 10);
  EXPECT_EQ(second.opt->step_count(), 10);
  second.train(10);

  EXPECT_TRUE(bit_identical(*straight.model, *second.model));
  OptimizerState a = straight.opt->state_dict(), b = second.opt->state_dict();
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (auto& [n, t] : a.tensors) EXPECT_EQ(std::memcmp(t.raw_data(), b.tensors.at(n).raw_data(), (size_t)t.numel() * 4), 0) << n;
  EXPECT_TRUE(a.tensors.count("fc1.weight.exp_avg") && a.tensors.count("fc2.bias.exp_avg_sq"));
}

TEST(Checkpoint, FilesHavePyTorchNamesAndOnlyCompleteFilesAppear) {
  std::string dir = scratch_dir("layout");
  TrainRun r(1);
  for (int i = 0; i < 3; i++) {
    r.train(2);
    save_checkpoint(dir, *r.model, *r.opt, r.state());
  }
  int safetensors = 0;
  for (auto& e : fs::directory_iterator(dir)) {
    std::string n = e.path().filename().string();
    EXPECT_EQ(n.find(".tmp"), std::string::npos) << "a temp file was left behind: " << n;
    if (e.path().extension() == ".safetensors") {
      safetensors++;
      EXPECT_NO_THROW(load_safetensors(e.path().string())) << n;
    }
  }
  EXPECT_EQ(safetensors, 2) << "keep_last = 1: one model and one state file";
  auto info = latest_checkpoint(dir);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->step, 6);
  TensorFile mf = load_safetensors(info->model_path);
  for (auto n : {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "num_batches"}) EXPECT_TRUE(mf.has(n)) << n;
  EXPECT_EQ(mf.at("fc1.weight").shape(), (Shape{16, 4}));  // torch.nn.Linear's (out, in)
  EXPECT_EQ(mf.metadata.at("format"), "pt");
  TensorFile sf = load_safetensors(info->state_path);
  EXPECT_TRUE(sf.has("fc1.weight.exp_avg"));
  EXPECT_EQ(sf.metadata.at("step"), "6");
  Generator g(0);
  g.set_state_string(sf.metadata.at("rng.data"));  // a Generator state string, as saved
}

TEST(Checkpoint, RefusesAModelAndStateFromDifferentSaves) {
  std::string dir = scratch_dir("mixed");
  TrainRun r(3);
  r.train(10);
  CheckpointOptions keep2;
  keep2.keep_last = 2;
  CheckpointInfo at10 = save_checkpoint(dir, *r.model, *r.opt, r.state(), keep2);
  r.train(10);
  CheckpointInfo at20 = save_checkpoint(dir, *r.model, *r.opt, r.state(), keep2);
  ASSERT_TRUE(fs::exists(at10.model_path)) << "keep_last = 2 keeps the older pair";

  TrainRun fresh(4);
  std::string msg = error_of([&] { load_checkpoint_files(at10.model_path, at20.state_path, *fresh.model, *fresh.opt); });
  EXPECT_NE(msg.find("mixed checkpoint"), std::string::npos) << msg;
  EXPECT_NE(msg.find("step 10"), std::string::npos) << msg;
  EXPECT_NE(msg.find("step 20"), std::string::npos) << msg;
  EXPECT_NE(msg.find(at10.model_path), std::string::npos) << msg;
  EXPECT_NE(msg.find(at20.state_path), std::string::npos) << msg;
  EXPECT_TRUE(bit_identical(*fresh.model, *TrainRun(4).model)) << "a refused load leaves the model untouched";
  EXPECT_EQ(fresh.opt->step_count(), 0);
  // the matching pairs load
  EXPECT_EQ(load_checkpoint_files(at10.model_path, at10.state_path, *fresh.model, *fresh.opt).step, 10);
  EXPECT_EQ(load_checkpoint(dir, *fresh.model, *fresh.opt).step, 20);
}

TEST(Checkpoint, CorruptOrTruncatedFilesAreNamed) {
  std::string dir = scratch_dir("corrupt");
  TrainRun r(5);
  r.train(3);
  CheckpointInfo info = save_checkpoint(dir, *r.model, *r.opt, r.state());
  std::string model_bytes, state_bytes;
  {
    std::ifstream m(info.model_path, std::ios::binary), s(info.state_path, std::ios::binary);
    model_bytes.assign(std::istreambuf_iterator<char>(m), {});
    state_bytes.assign(std::istreambuf_iterator<char>(s), {});
  }
  auto write = [](const std::string& p, const std::string& b) { std::ofstream(p, std::ios::binary) << b; };

  TrainRun fresh(6);
  write(info.model_path, model_bytes.substr(0, model_bytes.size() - 10));  // truncated
  std::string msg = error_of([&] { load_checkpoint(dir, *fresh.model, *fresh.opt); });
  EXPECT_NE(msg.find(info.model_path), std::string::npos) << msg;
  write(info.model_path, model_bytes);

  std::string bad = state_bytes;
  std::memset(bad.data() + 8, '#', 16);  // garbage in the JSON header
  write(info.state_path, bad);
  msg = error_of([&] { load_checkpoint(dir, *fresh.model, *fresh.opt); });
  EXPECT_NE(msg.find(info.state_path), std::string::npos) << msg;
  EXPECT_NE(msg.find("JSON"), std::string::npos) << msg;
  write(info.state_path, state_bytes);

  write((fs::path(dir) / "checkpoint.json").string(), "{\"step\": 3, \"id\"");
  msg = error_of([&] { load_checkpoint(dir, *fresh.model, *fresh.opt); });
  EXPECT_NE(msg.find("checkpoint.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("corrupt"), std::string::npos) << msg;

  msg = error_of([&] { load_checkpoint(scratch_dir("empty"), *fresh.model, *fresh.opt); });
  EXPECT_NE(msg.find("no complete checkpoint"), std::string::npos) << msg;
  EXPECT_TRUE(bit_identical(*fresh.model, *TrainRun(6).model));
}

TEST(Checkpoint, MissingMomentNamesTheParameter) {
  std::string dir = scratch_dir("moment");
  TrainRun r(8);
  r.train(2);
  CheckpointInfo info = save_checkpoint(dir, *r.model, *r.opt, r.state());
  TensorFile sf = load_safetensors(info.state_path);
  sf.tensors.erase("fc2.weight.exp_avg");
  save_safetensors(info.state_path, sf.tensors, sf.metadata);  // same ids: only the moment is gone
  TrainRun fresh(9);
  std::string msg = error_of([&] { load_checkpoint(dir, *fresh.model, *fresh.opt); });
  EXPECT_NE(msg.find("'fc2.weight'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fc2.weight.exp_avg"), std::string::npos) << msg;
  EXPECT_NE(msg.find(info.state_path), std::string::npos) << msg;
  EXPECT_EQ(fresh.opt->step_count(), 0);
}

TEST(Checkpoint, ModelMismatchIsRefusedAndUndone) {
  std::string dir = scratch_dir("shape");
  TrainRun r(10);
  r.train(2);
  save_checkpoint(dir, *r.model, *r.opt, r.state());
  // same parameter names, different hidden width: the optimiser's shape check refuses first
  TinyMLP other(4, 8, 3, 1);
  GroupingOptions g;
  g.no_decay_norm_bias_embed = true;  // the same groups as TrainRun's
  AdamW opt(make_param_groups(other, g));
  std::string msg = error_of([&] { load_checkpoint(dir, other, opt); });
  EXPECT_NE(msg.find("fc1."), std::string::npos) << msg;
  EXPECT_NE(msg.find("[8]"), std::string::npos) << msg;
  EXPECT_EQ(opt.step_count(), 0);

  // a model with one more buffer: the optimiser state fits, the model refuses, and the optimiser is undone
  struct WithExtra : TinyMLP {
    WithExtra() : TinyMLP(4, 16, 3, 2) { register_buffer("extra", zeros({2})); }
  } extra;
  AdamW opt2(make_param_groups(extra, g));
  msg = error_of([&] { load_checkpoint(dir, extra, opt2); });
  EXPECT_NE(msg.find("extra"), std::string::npos) << msg;
  EXPECT_NE(msg.find("missing"), std::string::npos) << msg;
  EXPECT_EQ(opt2.step_count(), 0) << "the optimiser load was undone";
  EXPECT_TRUE(opt2.state_dict().tensors.empty());
  // ...and an explicit partial load accepts it
  nn::LoadOptions allow;
  allow.allow_missing = {"extra"};
  EXPECT_EQ(load_checkpoint(dir, extra, opt2, allow).step, 2);
  EXPECT_EQ(opt2.step_count(), 2);
}

TEST(Checkpoint, CrashBeforeTheManifestKeepsThePreviousCheckpoint) {
  std::string dir = scratch_dir("crash");
  TrainRun r(11);
  r.train(4);
  save_checkpoint(dir, *r.model, *r.opt, r.state());
  TrainRun expected(0);
  expected.resume(dir);
  // What a crash during the next save can leave: a complete new state file, a half-written model temp
  // file, and no new manifest.
  r.train(4);
  std::string mid = "00000008-dead00";
  save_safetensors((fs::path(dir) / ("state-" + mid + ".safetensors")).string(), r.opt->state_dict().tensors,
                   {{"format", "dl.training_state/1"}, {"step", "8"}});
  std::ofstream((fs::path(dir) / ("model-" + mid + ".safetensors.tmp.4242")).string()) << "half a fi";
  TrainRun loaded(1);
  loaded.resume(dir);
  EXPECT_EQ(loaded.step, 4);
  EXPECT_TRUE(bit_identical(*loaded.model, *expected.model));
}

TEST(Checkpoint, FailedManifestWriteLeavesTheOldCheckpointIntact) {
  std::string dir = scratch_dir("failed_write");
  TrainRun r(12);
  r.train(3);
  save_checkpoint(dir, *r.model, *r.opt, r.state());
  std::string manifest = (fs::path(dir) / "checkpoint.json").string();
  std::string before;
  {
    std::ifstream in(manifest);
    before.assign(std::istreambuf_iterator<char>(in), {});
  }
  // Block the manifest's temp file (a directory where the file would go): the write fails part-way,
  // as a full disk or a read-only folder would make it fail (tests run as root, so chmod cannot).
  fs::create_directory(manifest + ".tmp." + std::to_string(::getpid()));
  r.train(3);
  std::string msg = error_of([&] { save_checkpoint(dir, *r.model, *r.opt, r.state()); });
  EXPECT_NE(msg.find("still the current one"), std::string::npos) << msg;
  fs::remove(manifest + ".tmp." + std::to_string(::getpid()));
  std::string after;
  {
    std::ifstream in(manifest);
    after.assign(std::istreambuf_iterator<char>(in), {});
  }
  EXPECT_EQ(before, after);
  TrainRun loaded(2);
  loaded.resume(dir);
  EXPECT_EQ(loaded.step, 3);
}

// A disk that fills up in the middle of the model file: RLIMIT_FSIZE (with SIGXFSZ ignored) makes write() fail with
// EFBIG once the file reaches the limit, as ENOSPC would on a full disk - a real write that stops part-way, in a child
// process so the limit does not outlive the test. The save must fail naming the reason, delete its partial file and
// leave the previous checkpoint loadable.
TEST(Checkpoint, AFullDiskMidWriteIsNamedAndLosesNothing) {
  std::string dir = scratch_dir("full_disk");
  TrainRun r(5);
  r.train(3);
  const CheckpointInfo first = save_checkpoint(dir, *r.model, *r.opt, r.state());
  const auto model_bytes = fs::file_size(first.model_path);
  ASSERT_GT(model_bytes, 600u);
  // the child (a lambda: the macro cannot take a block with commas)
  auto child = [&] {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit lim{};
    ::getrlimit(RLIMIT_FSIZE, &lim);
    const rlim_t old = lim.rlim_cur;
    lim.rlim_cur = model_bytes / 2;
    ::setrlimit(RLIMIT_FSIZE, &lim);
    r.train(3);
    const std::string msg = error_of([&] { save_checkpoint(dir, *r.model, *r.opt, r.state()); });
    lim.rlim_cur = old;
    ::setrlimit(RLIMIT_FSIZE, &lim);
    int bad = 0;
    if (msg.find("File too large") == std::string::npos || msg.find("untouched") == std::string::npos) {
      bad |= 1;
      fprintf(stderr, "message: %s\n", msg.c_str());
    }
    for (auto& e : fs::directory_iterator(dir))
      if (e.path().filename().string().find(".tmp.") != std::string::npos) {
        bad |= 2;
        fprintf(stderr, "partial file left: %s\n", e.path().c_str());
      }
    TrainRun loaded(2);
    loaded.resume(dir);
    if (loaded.step != 3) bad |= 4;
    std::_Exit(bad);
  };
  EXPECT_EXIT(child(), ::testing::ExitedWithCode(0), "");
}

TEST(Checkpoint, AtomicWriteNeverLeavesAPartialFile) {
  std::string dir = scratch_dir("atomic");
  std::string path = (fs::path(dir) / "f.bin").string();
  atomic_write_file(path, "old contents");
  fs::create_directory(path + ".tmp." + std::to_string(::getpid()));  // the temp file cannot be created
  EXPECT_THROW(atomic_write_file(path, "new contents that never arrive"), std::runtime_error);
  std::ifstream in(path);
  std::string s((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(s, "old contents");
  EXPECT_THROW(atomic_write_file((fs::path(dir) / "no_such_dir" / "f").string(), "x"), std::runtime_error);
  if (::geteuid() != 0) {  // a read-only folder, where permissions apply
    std::string ro = (fs::path(dir) / "ro").string();
    fs::create_directory(ro);
    atomic_write_file(ro + "/f", "old");
    fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
    EXPECT_THROW(atomic_write_file(ro + "/f", "new"), std::runtime_error);
    fs::permissions(ro, fs::perms::owner_all);
    std::ifstream r(ro + "/f");
    EXPECT_EQ(std::string((std::istreambuf_iterator<char>(r)), {}), "old");
  }
}

}  // namespace
