// tests/optim/test_module_state.cpp - nn::Module state dicts through safetensors, strict and partial loads,
// and the initialisers' guarantees (nn/module.h, nn/init.h), seen from the checkpoint side.
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "op_harness.h"
#include "tensor/safetensors.h"
#include "tiny_model.h"

using namespace dl;
using namespace dl::test;
namespace fs = std::filesystem;

namespace {

std::string tmp_file(const std::string& name) {
  fs::path d = fs::path(DL_BINARY_DIR) / "test_optim_tmp";
  fs::create_directories(d);
  return (d / (name + "-" + std::to_string(::getpid()) + ".safetensors")).string();
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.contiguous().raw_data(), b.contiguous().raw_data(), (size_t)a.numel() * dtype_size(a.dtype())) == 0;
}

// A "backbone + head" model, for partial loads.
class Classifier : public nn::Module {
 public:
  Classifier(uint64_t seed, int64_t classes) {
    Generator g(seed);
    backbone = register_module("backbone", std::make_shared<TinyMLP>(4, 6, 5, seed));
    head = register_module("head", std::make_shared<TestLinear>(5, classes, g));
  }
  std::string type_name() const override { return "Classifier"; }
  std::shared_ptr<TinyMLP> backbone;
  std::shared_ptr<TestLinear> head;
};

// A file that cannot be read says why: missing (the system's reason) or a folder given where a file was meant.
TEST(ModuleState, UnreadableSafetensorsPathSaysWhy) {
  auto what = [](const std::string& path) {
    try {
      load_safetensors(path);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("loaded");
  };
  EXPECT_EQ(what("/nonexistent/m.safetensors"),
            "/nonexistent/m.safetensors: cannot open for reading (No such file or directory)");
  const std::string dir = std::filesystem::path(tmp_file("a_folder")).string();
  std::filesystem::create_directories(dir);
  EXPECT_EQ(what(dir), dir + ": is a folder, not a safetensors file");
}

TEST(ModuleState, SafetensorsRoundTripIsExact) {
  TinyMLP a(4, 6, 5, 1), b(4, 6, 5, 2);
  a.num_batches().fill_(17);
  std::string p = tmp_file("roundtrip");
  a.save(p, {{"note", "hello"}});
  EXPECT_EQ(load_safetensors(p).metadata.at("note"), "hello");
  const void* storage = b.fc1->weight.data().raw_data();
  nn::LoadReport r = b.load(p);
  EXPECT_TRUE(r.ok()) << r.str();
  EXPECT_EQ(r.loaded.size(), 5u);
  for (auto& [n, t] : a.state_dict()) EXPECT_TRUE(same_bits(t, b.state_dict().at(n))) << n;
  EXPECT_EQ(b.fc1->weight.data().raw_data(), storage) << "loading writes into the existing storage";
  auto names = a.state_dict();
  std::vector<std::string> keys;
  for (auto& [n, t] : names) keys.push_back(n);
  EXPECT_EQ(keys, (std::vector<std::string>{"fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight", "num_batches"}));
}

TEST(ModuleState, StrictLoadListsEveryProblemAndChangesNothing) {
  TinyMLP a(4, 6, 5, 1), b(4, 6, 5, 2);
  auto sd = a.state_dict();
  sd.erase("fc2.bias");              // missing
  sd["fc3.weight"] = zeros({2, 2});  // unexpected
  sd["fc1.weight"] = zeros({6, 3});  // wrong shape
  std::map<std::string, Tensor> before;
  for (auto& [n, t] : b.state_dict()) before[n] = t.clone();
  try {
    b.load_state_dict(sd);
    FAIL() << "a strict load of a mismatched state must throw";
  } catch (const nn::CheckpointError& e) {
    std::string m = e.what();
    for (auto n : {"fc2.bias", "fc3.weight", "fc1.weight", "[6, 4]", "[6, 3]"})
      EXPECT_NE(m.find(n), std::string::npos) << "should name " << n << ": " << m;
  }
  for (auto& [n, t] : b.state_dict()) EXPECT_TRUE(same_bits(t, before[n])) << n << " changed by a refused load";
  nn::LoadOptions lenient;
  lenient.strict = false;
  nn::LoadReport r = b.load_state_dict(sd, lenient);
  EXPECT_EQ(r.missing, std::vector<std::string>{"fc2.bias"});
  EXPECT_EQ(r.unexpected, std::vector<std::string>{"fc3.weight"});
  ASSERT_EQ(r.shape_mismatch.size(), 1u);
  EXPECT_EQ(r.shape_mismatch[0].rfind("fc1.weight", 0), 0u);
  EXPECT_TRUE(same_bits(b.fc2->weight.data(), a.fc2->weight.data())) << "the matching tensors were loaded";
}

TEST(ModuleState, PartialLoadsAreExplicit) {
  // a pretrained backbone saved on its own -> a classifier with a fresh head
  TinyMLP pretrained(4, 6, 5, 3);
  Classifier c(4, 2);
  Tensor head0 = c.head->weight.data().clone();
  auto backbone_only = pretrained.state_dict();
  std::map<std::string, Tensor> prefixed;
  for (auto& [n, t] : backbone_only) prefixed["backbone." + n] = t;
  EXPECT_THROW(c.load_state_dict(prefixed), nn::CheckpointError) << "the head is missing: must be asked for";
  nn::LoadOptions o;
  o.allow_missing = {"head."};
  nn::LoadReport r = c.load_state_dict(prefixed, o);
  EXPECT_TRUE(r.ok()) << r.str();
  EXPECT_EQ(r.loaded.size(), 5u);
  EXPECT_TRUE(same_bits(c.backbone->fc1->weight.data(), pretrained.fc1->weight.data()));
  EXPECT_TRUE(same_bits(c.head->weight.data(), head0)) << "an allowed-missing tensor is left as it was";

  // the other way: a whole classifier file -> the bare backbone, dropping "backbone." and ignoring the head
  Classifier trained(5, 2);
  TinyMLP bare(4, 6, 5, 6);
  EXPECT_THROW(bare.load_state_dict(trained.state_dict()), nn::CheckpointError);
  nn::LoadOptions strip;
  strip.strip_prefix = "backbone.";
  EXPECT_THROW(bare.load_state_dict(trained.state_dict(), strip), nn::CheckpointError) << "head.* is unexpected unless ignored";
  strip.ignore_unexpected = {"head."};
  r = bare.load_state_dict(trained.state_dict(), strip);
  EXPECT_TRUE(r.ok()) << r.str();
  EXPECT_TRUE(same_bits(bare.fc2->bias.data(), trained.backbone->fc2->bias.data()));
}

TEST(Init, OrthogonalRowsOrColumnsAreOrthonormal) {
  Generator g(21);
  for (Shape s : {Shape{4, 8}, Shape{8, 4}, Shape{5, 5}, Shape{3, 2, 2}, Shape{64, 16}}) {
    Tensor w = nn::init::orthogonal(s, g).reshape({s[0], -1}).to(DType::f64);
    int64_t r = w.size(0), c = w.size(1);
    bool rows = r <= c;  // the shorter side's vectors are orthonormal
    int64_t k = rows ? r : c, n = rows ? c : r;
    const double* p = w.data<double>();
    auto at = [&](int64_t v, int64_t i) { return rows ? p[v * c + i] : p[i * c + v]; };
    double worst = 0;
    for (int64_t a = 0; a < k; a++)
      for (int64_t b = 0; b < k; b++) {
        double d = 0;
        for (int64_t i = 0; i < n; i++) d += at(a, i) * at(b, i);
        worst = std::max(worst, std::abs(d - (a == b ? 1.0 : 0.0)));
      }
    EXPECT_LT(worst, 1e-5) << shape_str(s) << ": Q Q^T differs from I by " << worst;
  }
  Tensor w2 = nn::init::orthogonal({3, 3}, g, 2.0);
  double norm = 0;
  for (int i = 0; i < 3; i++) norm += w2.at({0, i}) * w2.at({0, i});
  EXPECT_NEAR(norm, 4.0, 1e-5) << "gain scales Q";
}

TEST(Init, XavierAndKaimingBounds) {
  Generator g(22);
  Shape s{200, 300};  // fan_in 300, fan_out 200
  double a = std::sqrt(6.0 / 500.0);
  Tensor u = nn::init::xavier_uniform(s, g);
  auto v = u.to_vector();
  double mx = 0, sum = 0, sq = 0;
  for (float x : v) {
    mx = std::max(mx, (double)std::abs(x));
    sum += x;
    sq += (double)x * x;
  }
  EXPECT_LE(mx, a);
  EXPECT_GT(mx, 0.99 * a) << "60000 draws reach the bound";
  EXPECT_NEAR(sum / v.size(), 0.0, 0.01 * a);
  EXPECT_NEAR(std::sqrt(sq / v.size()), a / std::sqrt(3.0), 0.02 * a);  // std of U(-a, a)
  Tensor n = nn::init::xavier_normal(s, g);
  double sq2 = 0;
  for (float x : n.to_vector()) sq2 += (double)x * x;
  EXPECT_NEAR(std::sqrt(sq2 / v.size()), std::sqrt(2.0 / 500.0), 0.02 * std::sqrt(2.0 / 500.0));
  double k = 1.0 / std::sqrt(300.0), mk = 0;
  for (float x : nn::init::kaiming_uniform_linear(s, g).to_vector()) mk = std::max(mk, (double)std::abs(x));
  EXPECT_LE(mk, k);
  EXPECT_GT(mk, 0.99 * k);
  EXPECT_EQ(nn::init::fan_in({8, 3, 5}), 15);
  EXPECT_EQ(nn::init::fan_out({8, 3, 5}), 40);
}

}  // namespace
