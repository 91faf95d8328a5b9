// tests/apps/test_lra_predict.cpp - `lra_benchmark predict` (apps/lra_benchmark/predict.h): a finished cell's
// predictions for inputs given as text are the model's outputs on its task's own examples, for ListOps expressions and
// for retrieval's byte-text pairs; bad inputs are named.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "app_test_util.h"
#include "apps/common/experiment.h"
#include "apps/lra_benchmark/app.h"
#include "apps/lra_benchmark/config.h"
#include "apps/lra_benchmark/data.h"
#include "apps/lra_benchmark/model.h"
#include "apps/lra_benchmark/predict.h"
#include "tasks/listops.h"
#include "tasks/tokenizer.h"

using namespace lra;
namespace harness = dl::harness;

namespace {

// Two cells of a few steps: ListOps and Retrieval (two towers of byte text), S4D from scratch.
struct Cells {
  std::string out;
  std::vector<harness::Cell> cells;
};
const Cells& trained() {
  static const Cells c = [] {
    Cells r;
    const std::string d = dl::test::app_temp_dir("lra_predict");
    std::ofstream(d + "/mini.json") << R"({
      "tasks": ["listops", "retrieval"], "models": ["s4d"], "regimes": ["scratch"],
      "defaults": {"d_model": 16, "layers": 1, "d_state": 8, "dropout": 0.0, "batch": 8, "steps": 6, "warmup": 2,
                   "eval_every": 6, "eval_batches": 1, "checkpoint_every": 6, "seq_len": 64, "train_size": 64,
                   "val_size": 16, "test_size": 20}
    })";
    harness::Experiment e = experiment();
    harness::Preset p = load_preset(d + "/mini.json");
    r.out = d + "/out";
    r.cells = harness::expand_cells(e, p, p.values, {0}, {});
    harness::run_cells(e, p, r.cells, dl::test::quiet_in(r.out));
    return r;
  }();
  return c;
}

// The test split's examples written back as the text a user would give: ListOps tokens as the expression's words,
// byte tokens as their bytes (a retrieval pair's two texts joined by a tab).
std::string as_text(const CellConfig& c, const dl::tasks::Example& e) {
  if (c.task == "listops") {
    static const char* ops[] = {"[MIN", "[MAX", "[MED", "[SM", "]"};
    std::string s;
    for (int32_t t : e.tokens) s += (s.empty() ? "" : " ") + (t <= 10 ? std::to_string(t - 1) : std::string(ops[t - 11]));
    return s;
  }
  const dl::tasks::ByteTokenizer bt;
  return bt.decode(e.tokens) + (e.tokens2.empty() ? "" : "\t" + bt.decode(e.tokens2));
}

// The model's class and probability for each test example, batched as predict batches (in order, c.batch at a time).
std::vector<Prediction> on_the_split(const CellConfig& c, const std::string& path) {
  const dl::tasks::TaskData& data = task_data(c);
  const TaskShape s = shape_of(data);
  dl::Generator g((uint64_t)c.seed);
  LraModel m(c, s, false, g);
  m.load(path);
  dl::NoGradGuard ng;
  m.eval();
  dl::tasks::BatcherConfig bc;
  bc.batch_size = c.batch, bc.shuffle = false;
  dl::tasks::Batcher bt(data.test, bc);
  std::vector<Prediction> out;
  for (int64_t i = 0; i < bt.batches_per_epoch(); i++) {
    const dl::tasks::Batch b = bt.next();
    Inputs a = to_inputs(b), a2;
    if (s.two_tower) a2 = to_inputs(b, true);
    dl::Tensor y = dl::softmax(m.classify(a, s.two_tower ? &a2 : nullptr), 1).data().contiguous();
    for (int j = 0; j < b.batch_size; j++) {
      const float* row = y.data<float>() + (int64_t)j * s.classes;
      Prediction p;
      p.label = (int)(std::max_element(row, row + s.classes) - row);
      p.prob = row[p.label];
      out.push_back(p);
    }
  }
  return out;
}

}  // namespace

TEST(LraPredict, TextInputsGiveTheModelsOutputsOnTheTasksOwnExamples) {
  const Cells& t = trained();
  ASSERT_EQ(t.cells.size(), 2u);
  for (const harness::Cell& cell : t.cells) {
    SCOPED_TRACE(cell.key());
    const CellConfig c = CellConfig::from_json(cell.config, "test");
    const std::string path = harness::cell_dir(t.out, cell) + "/model.safetensors";
    const dl::tasks::Dataset& test = task_data(c).test;
    std::vector<std::string> inputs, where;
    for (const auto& e : test.examples) {
      inputs.push_back(as_text(c, e)), where.push_back("example " + std::to_string(inputs.size()));
      ASSERT_EQ(std::count(inputs.back().begin(), inputs.back().end(), '\t'), e.tokens2.empty() ? 0 : 1) << inputs.back();
    }
    const std::vector<Prediction> got = predict_inputs(c, path, inputs, where), want = on_the_split(c, path);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); i++) {
      EXPECT_EQ(got[i].label, want[i].label) << where[i] << ": " << inputs[i];
      EXPECT_NEAR(got[i].prob, want[i].prob, 1e-6) << where[i] << ": " << inputs[i];  // float64 softmax against float32
      EXPECT_FALSE(got[i].name.empty());
    }
  }
}

TEST(LraPredict, BadInputsAreNamed) {
  const Cells& t = trained();
  for (const harness::Cell& cell : t.cells) {
    const CellConfig c = CellConfig::from_json(cell.config, "test");
    const std::string path = harness::cell_dir(t.out, cell) + "/model.safetensors";
    auto error = [&](const std::string& in) {
      try {
        predict_inputs(c, path, {in}, {"notes.txt:7"});
      } catch (const std::exception& e) {
        return std::string(e.what());
      }
      return std::string("no error");
    };
    if (c.task == "listops") {
      EXPECT_NE(error("[MAX 2 X ]").find("notes.txt:7"), std::string::npos) << error("[MAX 2 X ]");
      EXPECT_NE(error("[MAX 2 X ]").find("'X'"), std::string::npos);
      std::string longer = "[SM";
      for (int i = 0; i < 80; i++) longer += " 1";
      EXPECT_NE(error(longer + " ]").find("82 tokens, and the model reads at most"), std::string::npos) << error(longer + " ]");
    } else {
      EXPECT_NE(error("one text without its pair").find("notes.txt:7: retrieval compares two texts"), std::string::npos)
          << error("one text without its pair");
      EXPECT_NE(error("a\tb\tc").find("separated by one tab"), std::string::npos);
      EXPECT_NE(error("\tb").find("the input is empty"), std::string::npos) << error("\tb");
    }
  }
}
