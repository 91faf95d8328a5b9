// apps/lra_benchmark/predict.cpp - a finished cell's predictions for the user's own inputs (see predict.h).
#include "predict.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "apps/common/batch_check.h"
#include "apps/common/phase.h"    // cell_model_file
#include "apps/common/results.h"  // read_text
#include "data.h"
#include "tasks/image.h"
#include "tasks/listops.h"
#include "tasks/tokenizer.h"
#include "tensor/safetensors.h"

namespace lra {

using namespace dl;
namespace harness = dl::harness;

// The pixel-token tasks: a grayscale image, row-major, one token per pixel value 0..255 (tasks/image.h, pathfinder.h).
static bool pixel_task(const std::string& task) {
  for (const char* t : {"image", "image14", "cifar10", "pathfinder", "pathfinder64", "pathx", "pathx256"})
    if (task == t) return true;
  return false;
}

// An image file as a pixel task's tokens: its side as the task's (the square root of its sequence length), or an integer
// multiple of it, average-pooled as the task pools (image14 is Fashion-MNIST's 28 x 28 pooled by 2).
static tasks::Example image_example(const CellConfig& c, const TaskShape& s, const std::string& path) {
  if (!pixel_task(c.task))
    throw ConfigError(path + ": --image is for the pixel tasks (image, image14, cifar10, pathfinder, pathx); task " + c.task +
                      " reads " + (s.features > 0 ? "continuous signals" : "tokens: give --text"));
  const int32_t side = (int32_t)std::lround(std::sqrt((double)s.max_len));
  const std::string bytes = harness::read_text(path);
  tasks::ImageSet img = tasks::parse_netpbm((const uint8_t*)bytes.data(), bytes.size(), path);
  if (img.rows != img.cols || img.rows % side != 0)
    throw ConfigError(path + ": a " + std::to_string(img.cols) + "x" + std::to_string(img.rows) + " image, and task " + c.task +
                      " reads " + std::to_string(side) + "x" + std::to_string(side) + " (or a square whose side is a multiple)");
  if (img.rows > side) img = tasks::average_pool(img, img.rows / side, path);
  tasks::Example e;
  e.tokens.assign(img.pixels.begin(), img.pixels.end());
  e.label = 0;
  return e;
}

// Input i as the task's examples are made: ListOps tokens, or byte tokens (two towers: the texts either side of a tab).
static tasks::Example encode(const CellConfig& c, const TaskShape& s, const std::string& in, const std::string& where) {
  tasks::Example e;
  const int32_t bytes = tasks::ByteTokenizer{}.vocab_size();
  if (s.features > 0 || (c.task != "listops" && s.vocab != bytes))
    throw ConfigError(where + ": predict reads text (a ListOps expression, or text for the byte tasks: text, retrieval, "
                      "brown_genre, spam_assassin, wordnet_supersense), and task " + c.task + " reads " +
                      (s.features > 0 ? "continuous signals" : "pixel or signal tokens") +
                      (pixel_task(c.task) ? ": give its images with --image FILE (PGM or PPM)"
                                          : "; `lra_benchmark eval --cell` runs a cell on its task's own splits"));
  if (c.task == "listops") {
    e.tokens = tasks::tokenize_listops(in, where);
  } else if (s.two_tower) {
    const size_t tab = in.find('\t');
    if (tab == std::string::npos || in.find('\t', tab + 1) != std::string::npos)
      throw ConfigError(where + ": " + c.task + " compares two texts: give them separated by one tab");
    e.tokens = tasks::ByteTokenizer{}.encode(std::string_view(in).substr(0, tab));
    e.tokens2 = tasks::ByteTokenizer{}.encode(std::string_view(in).substr(tab + 1));
  } else {
    e.tokens = tasks::ByteTokenizer{}.encode(in);
  }
  for (const auto* t : {&e.tokens, &e.tokens2}) {
    if (t->empty() && (t == &e.tokens || s.two_tower)) throw ConfigError(where + ": the input is empty");
    if ((int64_t)t->size() > s.max_len)
      throw ConfigError(where + ": " + std::to_string(t->size()) + " tokens, and the model reads at most " +
                        std::to_string(s.max_len) + " (the longest sequence of its task, " + c.task + ")");
  }
  e.label = 0;  // read by no one: the batch's labels are checked against the classes
  if (s.regression) e.label = -1, e.target_features = {0.f};
  return e;
}

// The model on the examples `make(s)` gives, batched as eval batches a split.
template <class Make>
static std::vector<Prediction> predict_examples(const CellConfig& c, const std::string& model_path, Make make) {
  const tasks::TaskData& data = task_data(c);
  const TaskShape s = shape_of(data);
  tasks::Dataset d = data.test;  // the task's vocabulary, classes and names; the examples are the inputs
  d.name = "predict", d.examples = make(s);
  Generator g((uint64_t)c.seed);
  LraModel m(c, s, c.regime == "spt-causal", g);
  m.load(model_path);
  NoGradGuard ng;
  m.eval();
  tasks::Batcher bt = in_order(d, c.batch);
  const harness::BatchLimits limits = batch_limits(false, m, d);
  std::vector<Prediction> out;
  for (int64_t i = 0; i < bt.batches_per_epoch(); i++) {
    const tasks::Batch b = bt.next();
    harness::check_batch(b, limits, model_path + ": prediction batch " + std::to_string(i));
    const Tensor y = classify_batch(m, harness::to_tensors(b), b).data().to(Device::cpu).contiguous();  // (B, classes)
    const float* py = y.data<float>();
    for (int j = 0; j < b.batch_size; j++) {
      Prediction p;
      const float* row = py + (int64_t)j * s.classes;
      if (s.regression) {
        p.value = row[0] * s.target_scale + s.target_mean;
      } else {  // the softmax's largest probability, computed in float64 from the logits
        p.label = (int)(std::max_element(row, row + s.classes) - row);
        double z = 0;
        for (int k = 0; k < s.classes; k++) z += std::exp((double)row[k] - row[p.label]);
        p.prob = 1 / z;
        p.name = (size_t)p.label < d.class_names.size() ? d.class_names[p.label] : std::to_string(p.label);
      }
      out.push_back(p);
    }
  }
  return out;
}

std::vector<Prediction> predict_inputs(const CellConfig& c, const std::string& model_path, const std::vector<std::string>& inputs,
                                       const std::vector<std::string>& where) {
  return predict_examples(c, model_path, [&](const TaskShape& s) {
    std::vector<tasks::Example> ex;
    for (size_t i = 0; i < inputs.size(); i++) ex.push_back(encode(c, s, inputs[i], where[i]));
    return ex;
  });
}

std::vector<Prediction> predict_images(const CellConfig& c, const std::string& model_path,
                                       const std::vector<std::string>& files) {
  return predict_examples(c, model_path, [&](const TaskShape& s) {
    std::vector<tasks::Example> ex;
    for (const std::string& f : files) ex.push_back(image_example(c, s, f));
    return ex;
  });
}

void predict_cell(const std::string& cell_path, const std::vector<std::string>& texts, const std::string& file,
                  const std::vector<std::string>& images) {
  std::vector<std::string> inputs, where;
  for (size_t i = 0; i < texts.size(); i++) inputs.push_back(texts[i]), where.push_back("--text " + std::to_string(i + 1));
  if (!file.empty()) {
    std::istringstream in(harness::read_text(file));
    int line = 0;
    for (std::string s; std::getline(in, s);) {
      line++;
      if (!s.empty() && s.back() == '\r') s.pop_back();
      if (!s.empty()) inputs.push_back(s), where.push_back(file + ":" + std::to_string(line));
    }
  }
  if (inputs.empty() == images.empty())
    throw ConfigError(images.empty() ? "predict: no input: give --text INPUT (repeatable), --file FILE (one input a line) or "
                                       "--image FILE (repeatable; PGM or PPM)"
                                     : "predict: give --image files or text inputs, not both");
  const std::string path = harness::cell_model_file(cell_path);
  dl::TensorFile f = dl::load_safetensors(path);
  const CellConfig c = harness::checked_config_in_metadata<CellConfig>(f.metadata, path, "lra_benchmark");
  if (!images.empty()) inputs = images;
  const std::vector<Prediction> ps = images.empty() ? predict_inputs(c, path, inputs, where) : predict_images(c, path, images);
  for (size_t i = 0; i < ps.size(); i++) {
    std::string head = inputs[i].substr(0, 60);
    std::replace(head.begin(), head.end(), '\t', ' ');
    if (ps[i].label < 0) std::cout << std::setprecision(6) << ps[i].value;
    else std::cout << ps[i].name << "\t" << std::fixed << std::setprecision(3) << ps[i].prob << std::defaultfloat;
    std::cout << "\t" << head << (inputs[i].size() > 60 ? "..." : "") << "\n";
  }
  std::cerr << c.key() << ": " << ps.size() << " inputs\n";
}

}  // namespace lra
