// apps/fpt/export.cpp - see export.h.
#include "export.h"

#include <filesystem>
#include <iostream>

#include "apps/common/phase.h"
#include "apps/common/config.h"
#include "nn/onnx/check_file.h"
#include "nn/onnx/ops.h"
#include "tensor/safetensors.h"

namespace fpt {

using namespace dl;
namespace ox = dl::nn::onnx;
namespace harness = dl::harness;

// FptModel's layers by their state_dict names (it keeps them private; the names are its contract).
template <class M> static M& child(FptModel& m, const std::string& name) {
  for (auto& [n, c] : m.named_children())
    if (auto l = std::dynamic_pointer_cast<M>(c); n == name && l) return *l;
  fail("fpt export: the model has no " + std::string(name == "lstm" ? "SequenceLayer" : "layer of the expected type") +
       " named '" + name + "'");
}

// The input layer on the graph input; adds it and an example batch of B rows (padded after the mask when it is an input).
static std::string add_input(ox::Graph& g, FptModel& m, bool with_mask, int64_t B, Generator& gen, FptBatch* ex) {
  const FptTask& t = m.shape;
  const int64_t L = t.max_len;
  ex->mask = with_mask ? ox::example_padding_mask(B, L, gen) : ones({B, L});
  const float* mk = ex->mask.data<float>();
  std::string x;
  if (t.vocab > 0) {
    g.add_input("tokens", ox::ElemType::i64, {ox::kBatch, L});
    ex->tokens = randint(0, t.vocab, {B, L}, gen);
    for (int64_t i = 0; i < B * L; i++)
      if (mk[i] == 0) ex->tokens.data<int64_t>()[i] = 0;  // the padding id
    const std::string table = g.add_initializer("input.weight", child<nn::Embedding>(m, "input").weight.data());
    x = g.node("Gather", {table, "tokens"});  // (B, L, D)
  } else {
    g.add_input("features", ox::ElemType::f32, {ox::kBatch, L, t.features});
    ex->features = randn({B, L, t.features}, gen);
    for (int64_t i = 0; i < B * L * t.features; i++)
      if (mk[i / t.features] == 0) ex->features.data<float>()[i] = 0;
    x = ox::linear(g, child<nn::Linear>(m, "input"), "features", "input.");  // (B, L, D); dropout: eval
  }
  if (with_mask) g.add_input("mask", ox::ElemType::f32, {ox::kBatch, L});
  return x;
}

// Each row's last real position (forward's masked read-out): ArgMax of mask * (1..L) picks the last nonzero entry
// (position 0 when there is none, as forward), and a one-hot of it times the states reads it -> (B, 1, D).
static std::string last_real_position(ox::Graph& g, const std::string& h, int64_t L) {
  std::vector<float> ramp(L);
  std::vector<int64_t> positions(L);
  for (int64_t s = 0; s < L; s++) ramp[s] = float(s + 1), positions[s] = s;
  std::string ranked = ox::mul(g, "mask", g.constant(from_vector(ramp, {L}), "ramp"));                    // (B, L)
  std::string last = g.node("ArgMax", {ranked}, {ox::attr_int("axis", 1), ox::attr_int("keepdims", 1)});  // (B, 1)
  std::string hit = g.node("Equal", {ox::unsqueeze(g, last, {2}), g.constant(positions)});                // (B, 1, L)
  std::string onehot = g.node("Cast", {hit}, {ox::attr_int("to", int64_t(ox::ElemType::f32))});
  return g.node("MatMul", {onehot, h});  // (B, 1, L) x (B, L, D)
}

void export_onnx(FptModel& m, const std::string& onnx_path, int64_t batch, uint64_t seed) {
  if (batch < 1) throw ConfigError("fpt export: --batch must be at least 1, found " + std::to_string(batch));
  m.eval();
  const FptTask& t = m.shape;
  const int64_t L = t.max_len, R = t.readout, D = m.cfg.d_model;
  const bool masked = m.cfg.masked_readout && !t.bits;
  Generator gen(seed);
  ox::Graph g("fpt_" + m.cfg.task + "_" + m.cfg.arm);
  FptBatch ex;
  std::string h = add_input(g, m, masked, batch, gen, &ex);  // (B, L, D)
  if (m.has_transformer()) {
    h = m.transformer().export_embeds(g, h, L, "transformer.");
  } else {
    h = child<nn::SequenceLayer>(m, "lstm").export_onnx(g, {h, "", L, D}, "lstm.");  // forward passes no mask: causal
  }
  h = masked ? last_real_position(g, h, L)
             : g.node("Slice", {h, g.constant(std::vector<int64_t>{L - R}), g.constant(std::vector<int64_t>{L}),
                                g.constant(std::vector<int64_t>{1})});  // (B, R, D)
  g.add_node("Identity", {ox::linear(g, child<nn::Linear>(m, "output"), h, "output.")}, {"logits"});
  g.add_output("logits", ox::ElemType::f32, {ox::kBatch, R, t.outputs});
  g.save(onnx_path);

  NoGradGuard ng;
  Var out = m.forward(ex);  // (B, R, outputs)
  std::map<std::string, Tensor> inputs;
  if (t.vocab > 0) inputs["tokens"] = ex.tokens;
  else inputs["features"] = ex.features;
  if (masked) inputs["mask"] = ex.mask;
  ox::write_check_file(onnx_path, inputs, {{"logits", out.data()}});
}

std::string export_cell(const std::string& path, const harness::ExportOptions& o) {
  TensorFile f = load_safetensors(path);
  const CellConfig c = harness::checked_config_in_metadata<CellConfig>(f.metadata, path, "fpt");
  Generator g(0);
  FptModel m(c, fpt_task(c), g);
  m.load(path);
  export_onnx(m, o.onnx, o.batch, o.seed);
  return c.key() + ": wrote " + o.onnx + " and " + ox::check_file_path(o.onnx) + " (length " + std::to_string(m.shape.max_len) +
         ", dynamic batch)";
}

}  // namespace fpt
