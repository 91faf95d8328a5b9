// apps/lra_benchmark/export.cpp - see export.h.
#include "export.h"

#include <filesystem>
#include <iostream>

#include "apps/common/phase.h"
#include "apps/common/config.h"
#include "data.h"
#include "nn/onnx/check_file.h"
#include "nn/onnx/ops.h"
#include "tensor/safetensors.h"

namespace lra {

using namespace dl;
namespace ox = dl::nn::onnx;
namespace harness = dl::harness;

// The model's head layers by their state_dict names (LraModel keeps them private; the names are its contract).
static const nn::Linear& child_linear(LraModel& m, const std::string& name) {
  for (auto& [n, c] : m.named_children())
    if (auto l = std::dynamic_pointer_cast<nn::Linear>(c); n == name && l) return *l;
  fail("export: the model has no Linear named '" + name + "'");
}

// One tower's inputs in the graph and as an example batch; suffix "" or "_b".
struct Tower {
  std::string input, mask;  // graph input names
  Inputs example;
};

static Tower add_tower(ox::Graph& g, const TaskShape& t, const std::string& suffix, int64_t B, Generator& gen) {
  const int64_t L = t.max_len;
  Tower w;
  w.mask = "mask" + suffix;
  if (t.vocab > 0) {
    w.input = "tokens" + suffix;
    g.add_input(w.input, ox::ElemType::i64, {ox::kBatch, L});
    w.example.tokens = randint(0, t.vocab, {B, L}, gen);
  } else {
    w.input = "features" + suffix;
    g.add_input(w.input, ox::ElemType::f32, {ox::kBatch, L, t.features + 1});
    Tensor f = randn({B, L, t.features + 1}, gen);
    float* p = f.data<float>();
    for (int64_t i = 0; i < B * L; i++) p[i * (t.features + 1) + t.features] = 0;  // masked SPT's channel: off
    w.example.features = f;
  }
  g.add_input(w.mask, ox::ElemType::f32, {ox::kBatch, L});
  w.example.mask = ox::example_padding_mask(B, L, gen);
  return w;
}

void export_onnx(LraModel& m, const std::string& onnx_path, int64_t batch, uint64_t seed) {
  if (batch < 1) throw ConfigError("export: --batch must be at least 1, found " + std::to_string(batch));
  m.eval();
  const TaskShape& t = m.shape;
  const int64_t L = t.max_len;
  Generator gen(seed);
  ox::Graph g("lra_benchmark_" + m.cfg.key());
  std::vector<Tower> towers = {add_tower(g, t, "", batch, gen)};
  if (t.two_tower) towers.push_back(add_tower(g, t, "_b", batch, gen));
  std::vector<std::string> pooled;  // (batch, D) per tower; the encoder's initializers are shared by name
  for (auto& w : towers)
    pooled.push_back(nn::SequenceBackbone::export_pool(g, m.export_encode(g, w.input, w.mask, L), w.mask, L, m.cfg.pool));
  std::string logits;
  if (!t.two_tower) {
    logits = ox::linear(g, child_linear(m, "head"), pooled[0], "head.");
  } else {  // [a, b, a*b, a-b] -> Linear(4D, D) -> GELU -> Linear(D, classes), as classify()
    const std::string& a = pooled[0];
    const std::string& b = pooled[1];
    std::string feats = g.node("Concat", {a, b, ox::mul(g, a, b), g.node("Sub", {a, b})}, {ox::attr_int("axis", 1)});
    logits = ox::linear(g, child_linear(m, "head"),
                        ox::gelu(g, ox::linear(g, child_linear(m, "head_hidden"), feats, "head_hidden.")), "head.");
  }
  g.add_node("Identity", {logits}, {"logits"});
  g.add_output("logits", ox::ElemType::f32, {ox::kBatch, t.classes});
  g.save(onnx_path);

  NoGradGuard ng;
  Var out = m.classify(towers[0].example, t.two_tower ? &towers[1].example : nullptr);  // (batch, classes)
  std::map<std::string, Tensor> inputs;
  for (auto& w : towers) {
    inputs[w.input] = t.vocab > 0 ? w.example.tokens : w.example.features;
    inputs[w.mask] = w.example.mask;
  }
  ox::write_check_file(onnx_path, inputs, {{"logits", out.data()}});
}

std::string export_cell(const std::string& path, const harness::ExportOptions& o) {
  TensorFile f = load_safetensors(path);
  const CellConfig c = harness::checked_config_in_metadata<CellConfig>(f.metadata, path, "lra_benchmark");
  Generator g((uint64_t)c.seed);
  LraModel m(c, shape_of(task_data(c)), c.regime == "spt-causal", g);
  m.load(path);
  export_onnx(m, o.onnx, o.batch, o.seed);
  return c.key() + ": wrote " + o.onnx + " and " + ox::check_file_path(o.onnx) + " (length " + std::to_string(m.shape.max_len) +
         ", dynamic batch)";
}

}  // namespace lra
