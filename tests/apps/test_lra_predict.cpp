// tests/apps/test_lra_predict.cpp - `lra_benchmark predict` (apps/lra_benchmark/predict.h): a finished cell's
// predictions for inputs given as text or image files are the model's outputs on its task's own examples, for ListOps
// expressions, retrieval's byte-text pairs and image14's pictures; bad inputs are named.
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

// Three cells of a few steps: ListOps, Retrieval (two towers of byte text) and Image at 14 x 14, S4D from scratch.
struct Cells {
  std::string out;
  std::vector<harness::Cell> cells;
};
const Cells& trained() {
  static const Cells c = [] {
    Cells r;
    const std::string d = dl::test::app_temp_dir("lra_predict");
    std::ofstream(d + "/mini.json") << R"({
      "tasks": ["listops", "retrieval", "image14"], "models": ["s4d"], "regimes": ["scratch"],
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
  dl::tasks::Batcher bt = in_order(data.test, c.batch);
  std::vector<Prediction> out;
  for (int64_t i = 0; i < bt.batches_per_epoch(); i++) {
    const dl::tasks::Batch b = bt.next();
    dl::Tensor y = dl::softmax(classify_batch(m, harness::to_tensors(b), b), 1).data().contiguous();
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
  ASSERT_EQ(t.cells.size(), 3u);
  for (const harness::Cell& cell : t.cells) {
    SCOPED_TRACE(cell.key());
    const CellConfig c = CellConfig::from_json(cell.config, "test");
    if (c.task == "image14") continue;  // ImageFilesGiveTheModelsOutputsOnTheTasksOwnImages
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

// Each test image of image14 written as the 28 x 28 PGM it was pooled from would be (every pixel four times) and as a
// 14 x 14 one: both give the model's outputs on the split.
TEST(LraPredict, ImageFilesGiveTheModelsOutputsOnTheTasksOwnImages) {
  const Cells& t = trained();
  const harness::Cell& cell = t.cells.back();
  const CellConfig c = CellConfig::from_json(cell.config, "test");
  ASSERT_EQ(c.task, "image14");
  const std::string path = harness::cell_dir(t.out, cell) + "/model.safetensors", dir = dl::test::app_temp_dir("lra_predict_pgm");
  std::vector<std::string> small, large;
  for (const auto& e : task_data(c).test.examples) {
    ASSERT_EQ(e.tokens.size(), 196u);
    small.push_back(dir + "/s" + std::to_string(small.size()) + ".pgm");
    large.push_back(dir + "/l" + std::to_string(large.size()) + ".pgm");
    std::ofstream s(small.back(), std::ios::binary), l(large.back(), std::ios::binary);
    s << "P5\n# a comment\n14 14\n255\n";
    for (int32_t v : e.tokens) s.put((char)v);
    l << "P5 28 28 255\n";
    for (int y = 0; y < 28; y++)
      for (int x = 0; x < 28; x++) l.put((char)e.tokens[(y / 2) * 14 + x / 2]);
  }
  const std::vector<Prediction> want = on_the_split(c, path);
  for (const auto* files : {&small, &large}) {
    const std::vector<Prediction> got = predict_images(c, path, *files);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); i++) {
      EXPECT_EQ(got[i].label, want[i].label) << (*files)[i];
      EXPECT_NEAR(got[i].prob, want[i].prob, 1e-6) << (*files)[i];
    }
  }
  auto error = [&](const std::string& content) {
    std::ofstream(dir + "/bad.pgm", std::ios::binary) << content;
    try {
      predict_images(c, path, {dir + "/bad.pgm"});
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string wrong_size = "P5 20 20 255\n" + std::string(400, 'a');
  EXPECT_NE(error(wrong_size).find("a 20x20 image, and task image14 reads 14x14"), std::string::npos) << error(wrong_size);
  EXPECT_NE(error("P5 14 14 255\n" + std::string(100, 'a')).find("100 bytes of pixels, expected 196"), std::string::npos);
  EXPECT_NE(error("GIF89a").find("not a PGM or PPM image"), std::string::npos);
  std::string ascii = "P2 14 14 9\n10";
  for (int i = 1; i < 196; i++) ascii += " 1";
  EXPECT_NE(error(ascii).find("a pixel value 10 above the maximum 9"), std::string::npos) << error(ascii);
  EXPECT_NE(error("P2 14 14 9\n1 2").find("expected a pixel value at byte"), std::string::npos) << error("P2 14 14 9\n1 2");
}

TEST(LraPredict, BadInputsAreNamed) {
  const Cells& t = trained();
  for (const harness::Cell& cell : t.cells) {
    const CellConfig c = CellConfig::from_json(cell.config, "test");
    const std::string path = harness::cell_dir(t.out, cell) + "/model.safetensors";
    if (c.task == "image14") {
      try {
        predict_inputs(c, path, {"some text"}, {"--text 1"});
        ADD_FAILURE() << "image14 took text";
      } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("task image14 reads pixel or signal tokens: give its images with --image"),
                  std::string::npos)
            << e.what();
      }
      continue;
    }
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
