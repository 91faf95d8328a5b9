// tests/apps/app_test_util.h - what the app tests share: a fresh scratch folder, the message of a thrown error, the
// toy dataset of the harness tests, the check that two runs left byte-identical weights, and a killed cell that must resume to them.
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <string>

#include "apps/common/experiment.h"
#include "autograd/nn_ops.h"
#include "nn/layers.h"
#include "op_harness.h"  // error_of
#include "tasks/batching.h"
#include "tasks/dataset.h"
#include "tensor/safetensors.h"

namespace dl::test {

// <build>/test_tmp/<name>, emptied and created.
inline std::string app_temp_dir(const std::string& name) {
  std::string d = std::string(DL_BINARY_DIR) + "/test_tmp/" + name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// The toy problem of the harness tests: 64 examples of 6 tokens in [0, 5), label = token sum mod 2 ("toy/train").
inline tasks::Dataset toy_data() {
  tasks::Dataset d;
  d.name = "toy/train", d.vocab_size = 5, d.num_classes = 2, d.max_len = 6;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 64; i++) {
    tasks::Example e;
    int s = 0;
    for (int t = 0; t < 6; t++) e.tokens.push_back((int)(rng() % 5)), s += e.tokens.back();
    e.label = s % 2;
    d.examples.push_back(e);
  }
  return d;
}

// A toy batch as the harness tests' linear models read it: token counts (B, 5) over the real positions, and labels (B).
inline std::pair<Tensor, Tensor> toy_counts(const tasks::Batch& b) {
  Tensor counts = zeros({b.batch_size, 5}), y = Tensor::empty({b.batch_size}, DType::i64);
  for (int i = 0; i < b.batch_size; i++) {
    for (int t = 0; t < b.seq_len; t++)
      if (b.mask[i * b.seq_len + t]) counts.data<float>()[i * 5 + b.tokens[i * b.seq_len + t]] += 1;
    y.data<int64_t>()[i] = b.labels[i];
  }
  return {counts, y};
}

// The harness tests' model: token counts -> Dropout(0.2) -> Linear(5, 2) -> cross-entropy on the toy data.
struct ToyModel : nn::Module {
  explicit ToyModel(Generator& g) {
    lin = register_module("lin", std::make_shared<nn::Linear>(5, 2, g));
    drop = register_module("drop", std::make_shared<nn::Dropout>(0.2, g));
  }
  std::string type_name() const override { return "Toy"; }
  Var loss(const tasks::Batch& b) {
    auto [counts, y] = toy_counts(b);
    return cross_entropy(lin->forward(drop->forward(Var(counts))), y);
  }
  std::shared_ptr<nn::Linear> lin;
  std::shared_ptr<nn::Dropout> drop;
};

// Every tensor of safetensors file b equals a's, byte for byte (an exact resume).
inline void expect_identical_weights(const std::string& a, const std::string& b) {
  TensorFile fa = load_safetensors(a), fb = load_safetensors(b);
  ASSERT_EQ(fa.tensors.size(), fb.tensors.size()) << a << " vs " << b;
  for (auto& [n, t] : fa.tensors) {
    const Tensor& u = fb.at(n);
    ASSERT_EQ(t.shape(), u.shape()) << n;
    EXPECT_EQ(0, std::memcmp(t.raw_data(), u.raw_data(), t.numel() * dtype_size(t.dtype()))) << n << " differs after resume";
  }
}

// Runs `cell` into <dir>/part, killed after `stop_after` steps as a SIGKILL would (no checkpoint then), resumes it,
// and expects the model file of the uninterrupted run of the same cell in `whole_out`, byte for byte.
inline void expect_killed_cell_resumes(const harness::Experiment& e, const harness::Preset& p, const harness::Cell& cell,
                                       harness::SweepOptions o, const std::string& whole_out, const std::string& dir,
                                       int stop_after) {
  o.out = dir + "/part", o.stop_after = stop_after, o.resume = false;
  EXPECT_THROW(harness::run_cells(e, p, {cell}, o), harness::Interrupted);
  o.stop_after = -1, o.resume = true;
  harness::run_cells(e, p, {cell}, o);
  expect_identical_weights(harness::cell_dir(whole_out, cell) + "/model.safetensors",
                           harness::cell_dir(o.out, cell) + "/model.safetensors");
}

// Options that run a sweep into `out` and print nothing.
inline harness::SweepOptions quiet_in(const std::string& out) {
  harness::SweepOptions o;
  o.out = out, o.quiet = true;
  return o;
}

// Runs `cells` into `out` as a sweep stopped twice and resumed: inside the first cell at step `stop_after` (its last
// checkpoint before it), then, resumed, inside the third, then resumed to the end.
inline void run_sweep_stopped_twice(const harness::Experiment& e, const harness::Preset& p,
                                    const std::vector<harness::Cell>& cells, const std::string& out, int stop_after = 5) {
  harness::SweepOptions part = quiet_in(out);
  part.stop_after = stop_after;
  EXPECT_THROW(harness::run_cells(e, p, cells, part), harness::Interrupted);
  part.resume = true;  // the first cell finishes from its checkpoint, the second runs whole, the third is stopped
  EXPECT_THROW(harness::run_cells(e, p, cells, part), harness::Interrupted);
  part.stop_after = -1;
  harness::run_cells(e, p, cells, part);
}

// The same sweep twice: whole into <dir>/whole, and stopped twice then resumed into <dir>/part (run_sweep_stopped_twice),
// each with its reports written; returns the two runs' results.json, each of which must hold n cells (a test failure
// otherwise).
inline std::pair<harness::json, harness::json> sweep_whole_and_resumed(const harness::Experiment& e, const harness::Preset& p,
                                                                       const std::vector<harness::Cell>& cells,
                                                                       const std::string& dir, size_t n) {
  harness::run_cells(e, p, cells, quiet_in(dir + "/whole"));
  harness::write_reports(e, p, dir + "/whole");
  run_sweep_stopped_twice(e, p, cells, dir + "/part");
  harness::write_reports(e, p, dir + "/part");
  std::pair<harness::json, harness::json> r = {harness::json::parse(harness::read_text(dir + "/whole/results.json")),
                                               harness::json::parse(harness::read_text(dir + "/part/results.json"))};
  EXPECT_EQ(r.first["cells"].size(), n);
  EXPECT_EQ(r.second["cells"].size(), n);
  return r;
}

// Every cell of two runs' results.json equal at each field in `fields` (JSON pointers such as "/metrics", "/curve",
// "/extra/selection"), named by the cell; and the two tables equal.
inline void expect_same_cells_and_table(const harness::json& whole, const harness::json& resumed,
                                        const std::vector<std::string>& fields) {
  ASSERT_EQ(whole["cells"].size(), resumed["cells"].size());
  for (size_t i = 0; i < whole["cells"].size(); i++) {
    SCOPED_TRACE(whole["cells"][i]["cell"].get<std::string>());
    for (const std::string& f : fields)
      EXPECT_EQ(whole["cells"][i].at(harness::json::json_pointer(f)), resumed["cells"][i].at(harness::json::json_pointer(f)))
          << f;
  }
  EXPECT_EQ(whole["table"], resumed["table"]);
}

}  // namespace dl::test
