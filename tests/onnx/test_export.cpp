// tests/onnx/test_export.cpp - sequence backbones with every exported mixer, exported to ONNX and checked by ONNX's
// checker and by ONNX Runtime against the framework's own outputs at two batch sizes (the batch is dynamic), with
// padding, so every mask the model uses is exercised. A layer without an export fails with its name.
// Shape letters: B batch, L length, D d_model.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "nn/models/sequence_backbone.h"
#include "nn/onnx/check_file.h"
#include "nn/onnx/ops.h"
#include "nn/registry.h"
#include "tensor/backend.h"
#include "ort_check.h"

using namespace dl;
using namespace dl::nn;

namespace {

constexpr int64_t kL = 16, kD = 16, kVocab = 11, kClasses = 3;

struct Case {
  std::string name, layer;
  LayerConfig own = LayerConfig::object();
  bool causal = false;
  std::string norm = "layer", pool = "mean", positions = "none";
  bool prenorm = true, tokens = true;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// A classifier as the apps build it: the backbone, a pool and a linear head; its export has the graph inputs "tokens"
// (or "features") and "mask" and the outputs "hidden" (B, L, D) and "logits" (B, classes).
struct Classifier {
  Generator g{7};
  std::shared_ptr<SequenceBackbone> backbone;
  std::shared_ptr<Linear> head;
  Case c;

  explicit Classifier(const Case& cs) : c(cs) {
    SequenceBackboneOptions o;
    if (c.tokens) o.vocab = kVocab;
    else o.features = 5;
    o.d_model = kD, o.max_len = kL, o.layers = 2, o.positions = c.positions, o.final_norm = c.norm;
    o.block.norm = c.norm, o.block.prenorm = c.prenorm, o.block.ffn_hidden = 2 * kD;
    BackboneOptions bo;
    bo.causal = c.causal, bo.max_len = kL, bo.d_state = 8, bo.heads = 2;
    backbone = std::make_shared<SequenceBackbone>(o, registry_mixer(c.layer, bo, c.own), g);
    head = std::make_shared<Linear>(kD, kClasses, g);
    if (c.norm == "batch") settle_batch_norms();
    backbone->eval();
  }
  // A few training-mode forwards so the running statistics are not the initial (0, 1): the export must use them.
  void settle_batch_norms() {
    NoGradGuard ng;
    for (int i = 0; i < 3; i++) backbone->encode(input(4), Tensor());
  }
  Tensor input(int64_t B) { return c.tokens ? randint(0, kVocab, {B, kL}, g) : randn({B, kL, 5}, g); }
  onnx::Graph export_graph() {
    onnx::Graph gr("test_" + c.name);
    const std::string in = c.tokens ? "tokens" : "features";
    if (c.tokens) gr.add_input(in, onnx::ElemType::i64, {onnx::kBatch, kL});
    else gr.add_input(in, onnx::ElemType::f32, {onnx::kBatch, kL, 5});
    gr.add_input("mask", onnx::ElemType::f32, {onnx::kBatch, kL});
    std::string h = backbone->export_encode(gr, in, "mask", kL);
    gr.add_node("Identity", {h}, {"hidden"});
    std::string logits = onnx::linear(gr, *head, SequenceBackbone::export_pool(gr, h, "mask", kL, c.pool), "head.");
    gr.add_node("Identity", {logits}, {"logits"});
    gr.add_output("hidden", onnx::ElemType::f32, {onnx::kBatch, kL, kD});
    gr.add_output("logits", onnx::ElemType::f32, {onnx::kBatch, kClasses});
    return gr;
  }
  std::map<std::string, Tensor> forward(const Tensor& in, const Tensor& mask) {
    NoGradGuard ng;
    Var h = backbone->encode(in, mask);
    Var logits = head->forward(SequenceBackbone::pool(h, mask, c.pool));
    return {{"hidden", h.data()}, {"logits", logits.data()}};
  }
};

class OnnxExport : public ::testing::TestWithParam<Case> {};

TEST_P(OnnxExport, CheckerAcceptsAndRuntimeReproducesAtTwoBatchSizes) {
  Classifier m(GetParam());
  const std::string dir = test::fresh_temp_dir(GetParam().name);
  const std::string file = dir + "/model.onnx";
  onnx::Graph graph = m.export_graph();
  graph.save(file);
  std::string skipped;
  test::ToolResult chk = test::onnx_checker(file);
  if (!chk.available) skipped += chk.skip_reason + "; ";
  EXPECT_EQ(chk.error, "") << "onnx.checker rejected " << file;
  for (int64_t B : {2, 3}) {
    Tensor in = m.input(B), mask = onnx::example_padding_mask(B, kL, m.g);
    const std::string in_name = GetParam().tokens ? "tokens" : "features";
    auto expected = m.forward(in, mask);
    onnx::write_check_file(file, {{in_name, in}, {"mask", mask}}, expected);
    std::map<std::string, Tensor> got;
    test::ToolResult ort = test::run_onnx_runtime(file, onnx::check_file_path(file), &got);
    if (!ort.available) {
      skipped += ort.skip_reason;
      break;
    }
    ASSERT_EQ(ort.error, "") << "ONNX Runtime failed on " << file;
    // hidden at real positions only: what a padded position holds is unspecified (a windowed attention's padded query
    // may have no real key in reach, and then averages a different set of values than the full band mask does)
    Tensor real = mask.unsqueeze(2);
    const std::string what = GetParam().name + " B=" + std::to_string(B);
    test::expect_close(what + " hidden", mul(got.at("hidden"), real), mul(expected.at("hidden"), real), test::kFixtureLong);
    test::expect_close(what + " logits", got.at("logits"), expected.at("logits"), test::kFixtureLong);
  }
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
  if (!skipped.empty()) GTEST_SKIP() << skipped;
}

Case make(std::string name, std::string layer, LayerConfig own = LayerConfig::object()) {
  Case c;
  c.name = std::move(name), c.layer = std::move(layer), c.own = std::move(own);
  return c;
}
Case causal(Case c) { return c.causal = true, c; }
Case with(Case c, const std::string& pool, const std::string& positions) { return c.pool = pool, c.positions = positions, c; }

INSTANTIATE_TEST_SUITE_P(
    Layers, OnnxExport,
    ::testing::Values(make("transformer", "attention"), with(causal(make("transformer_causal", "attention")), "last", "learned"),
                      with(make("transformer_window", "attention", {{"window", 3}}), "mean", "sinusoidal"),
                      causal(make("transformer_rotary", "attention", {{"rotary", true}})), make("s4d_bidirectional", "s4d"),
                      causal(make("s4d_causal", "s4d")), causal(make("s4", "s4")), make("s4_bidirectional", "s4"),
                      make("s4d_minimal", "s4d_minimal"), make("dlr", "dlr"), causal(make("ema", "ema")), make("fnet", "fnet"),
                      causal(make("lstm", "lstm", {{"num_layers", 2}})), make("mlp_mixer", "mixer"),
                      causal(make("lstm_layer_norm", "lstm", {{"num_layers", 2}, {"layer_norm", true}})),
                      make("lightconv", "lightconv", {{"num_heads", 2}}),
                      causal(make("dynamicconv", "dynamicconv", {{"num_heads", 2}})),
                      make("dilatedconv", "dilatedconv", {{"dilation", 2}}), make("linear_attention", "linear_attention"),
                      causal(make("linear_attention_causal_relu", "linear_attention", {{"feature", "relu"}})),
                      make("performer", "performer", {{"features", 12}}),
                      causal(make("performer_causal", "performer", {{"features", 12}})),
                      [] {
                        Case c = make("s4d_batchnorm_postnorm_features", "s4d");
                        c.norm = "batch", c.prenorm = false, c.tokens = false;
                        return c;
                      }()),
    [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

// Every registry layer has an export (the cases above check each against ONNX Runtime); a new layer without one fails
// here with its name until it gets one and a case above.
TEST(OnnxExport, EveryRegistryLayerExports) {
  for (const LayerEntry& e : layer_registry()) {
    try {
      Classifier(make(e.name, e.name)).export_graph();
    } catch (const std::exception& ex) {
      ADD_FAILURE() << "registry layer '" << e.name << "' does not export: " << ex.what();
    }
  }
}

TEST(OnnxExport, InitializersAreStateDictNamesOrMarkedDerived) {
  Classifier m(causal(make("s4d", "s4d")));
  onnx::Graph graph = m.export_graph();
  auto sd = m.backbone->state_dict();
  for (auto& [n, t] : m.head->state_dict()) sd["head." + n] = t;
  std::set<std::string> used;
  for (auto& n : graph.initializer_names()) {
    if (n.rfind("onnx::", 0) == 0) continue;
    EXPECT_TRUE(sd.count(n)) << "initializer '" << n << "' is neither a state_dict name nor marked onnx::";
    used.insert(n);
  }
  for (auto& [n, t] : m.backbone->named_parameters())  // every weight the forward uses is in the file, bar the kernel's
    if (n.find(".kernel.") == std::string::npos) EXPECT_TRUE(used.count(n)) << "parameter '" << n << "' is not exported";
}

}  // namespace

namespace {

// A layer of a user's own that has not written its export: the default refuses, naming it and where it sits.
struct NoExportLayer : SequenceLayer {
  std::string type_name() const override { return "MyLayer"; }
  Var forward(const Var& x, const Tensor&) override { return x; }
};

TEST(OnnxExport, DefaultExportRefusesNamingTheLayer) {
  NoExportLayer layer;
  onnx::Graph g("refuse");
  try {
    layer.export_onnx(g, {"x", "", 4, 8}, "blocks.3.mixer.");
    FAIL() << "a layer without an export exported";
  } catch (const std::exception& e) {
    EXPECT_EQ(std::string(e.what()).find("layer 'MyLayer' (blocks.3.mixer) has no ONNX export yet") == std::string::npos, false)
        << e.what();
  }
}

}  // namespace

namespace {

// Export reads every tensor back to the host, so a model on the device gives the same bytes as on the CPU. Runs where
// Device::cuda has a backend: the GPU, or the host twin under DL_TEST_DEVICE=twin (ctest's onnx_export_on_twin).
TEST(OnnxExport, ModelOnTheDeviceGivesTheSameFile) {
  Backend* b = device_backend(Device::cuda);
  if (!b || !b->available()) GTEST_SKIP() << "no CUDA device (DL_TEST_DEVICE=twin runs this on the host twin)";
  for (const Case& c :
       {make("transformer", "attention"), causal(make("s4d", "s4d")), make("s4", "s4"), make("performer", "performer")}) {
    Classifier m(c);
    const std::string on_cpu = m.export_graph().serialize();
    for (Module* mod : std::vector<Module*>{m.backbone.get(), m.head.get()}) {
      mod->move_buffers(Device::cuda);
      for (auto& [name, v] : mod->named_parameters()) v.mutable_data() = v.data().to(Device::cuda);
    }
    EXPECT_TRUE(m.export_graph().serialize() == on_cpu) << c.name << ": the export from the device differs";
  }
}

}  // namespace
