// tests/onnx/ort_check.cpp - see ort_check.h.
#include "ort_check.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "nn/onnx/check_file.h"
#include "tensor/safetensors.h"

namespace dl::test {

namespace fs = std::filesystem;

// Runs a shell command, capturing stdout and stderr; returns its exit status.
static int run(const std::string& cmd, std::string* out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out->append(buf.data(), n);
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static std::string quote(const std::string& s) { return "'" + s + "'"; }  // the paths here are ours: no quotes inside

ToolResult onnx_checker(const std::string& onnx_path) {
  ToolResult r;
  std::string out;
  if (run("/usr/bin/python3 -c 'import onnx'", &out) != 0) {
    r.available = false;
    r.skip_reason = "/usr/bin/python3 cannot import onnx (scripts/setup.sh installs python3-onnx): " + out;
    return r;
  }
  out.clear();
  const std::string py = "import onnx, sys; onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)";
  if (run("/usr/bin/python3 -c " + quote(py) + " " + quote(onnx_path), &out) != 0) r.error = out;
  return r;
}

ToolResult run_onnx_runtime(const std::string& onnx_path, const std::string& inputs_path,
                            std::map<std::string, Tensor>* outputs) {
  ToolResult r;
  std::string out;
  if (run("node --version", &out) != 0) {
    r.available = false;
    r.skip_reason = "node is not installed";
    return r;
  }
  const std::string script = std::string(DL_FIXTURE_DIR) + "/../onnx/run_ort.js";
  const std::string result = inputs_path + ".ort.safetensors";
  out.clear();
  const int rc = run("node " + quote(script) + " " + quote(onnx_path) + " " + quote(inputs_path) + " " + quote(result), &out);
  if (rc == 2) {
    r.available = false;
    r.skip_reason = out;
  } else if (rc != 0) {
    r.error = out;
  } else {
    *outputs = load_safetensors(result).tensors;
  }
  return r;
}

void expect_close(const std::string& what, const Tensor& actual, const Tensor& expected, Tol tol) {
  ASSERT_EQ(shape_str(actual.shape()), shape_str(expected.shape())) << what;
  Tensor a = actual.to(DType::f64).contiguous(), e = expected.to(DType::f64).contiguous();
  const double* pa = a.data<double>();
  const double* pe = e.data<double>();
  int64_t worst = -1;
  double worst_excess = 0;
  for (int64_t i = 0; i < a.numel(); i++) {
    const double excess = std::abs(pa[i] - pe[i]) - (tol.atol + tol.rtol * std::abs(pe[i]));
    if (!(excess <= worst_excess)) worst = i, worst_excess = std::isnan(excess) ? INFINITY : excess;
  }
  if (worst >= 0)
    ADD_FAILURE() << what << ": element " << worst << " is " << pa[worst] << ", expected " << pe[worst] << " (atol " << tol.atol
                  << ", rtol " << tol.rtol << ")";
}

std::string fresh_temp_dir(const std::string& hint) {
  std::random_device rd;
  fs::path p = fs::temp_directory_path() / ("dl_onnx_" + hint + "_" + std::to_string(rd()));
  fs::create_directories(p);
  return p.string();
}

static std::string bytes_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::string check_cell_export(const std::string& exe, const std::string& cell, const std::string& dir, const std::string& what,
                              const std::function<void(const TensorFile&, int64_t batch)>& per_check) {
  return check_export([&](const std::string& onnx) { return exe + " export --cell " + cell + " --onnx " + onnx; }, dir, what,
                      per_check);
}

std::string check_export(const std::function<std::string(const std::string& onnx)>& command, const std::string& dir,
                         const std::string& what, const std::function<void(const TensorFile&, int64_t batch)>& per_check) {
  auto sh = [](const std::string& cmd) { return std::system((cmd + " > /dev/null 2>&1").c_str()); };
  const std::string file = dir + "/model.onnx", file3 = dir + "/model_b3.onnx";
  if (sh(command(file) + " --batch 2") != 0 || sh(command(file3) + " --batch 3 --seed 1") != 0) {
    ADD_FAILURE() << what << ": " << command(file) << " failed";
    return "";
  }
  EXPECT_TRUE(bytes_of(file) == bytes_of(file3)) << what << ": the graph depends on --batch or --seed";
  std::string skipped;
  ToolResult chk = onnx_checker(file);
  if (!chk.available) skipped += chk.skip_reason + "; ";
  EXPECT_EQ(chk.error, "") << "onnx.checker rejected " << file;
  for (const auto& [f, batch] : {std::pair{file, 2}, {file3, 3}}) {
    TensorFile check = load_safetensors(nn::onnx::check_file_path(f));
    EXPECT_EQ(check.at("logits").size(0), batch) << what;
    per_check(check, batch);
    std::map<std::string, Tensor> got;
    ToolResult ort = run_onnx_runtime(file, nn::onnx::check_file_path(f), &got);  // the one file, both check files
    if (!ort.available) return skipped + ort.skip_reason;
    if (!ort.error.empty()) {
      ADD_FAILURE() << "ONNX Runtime failed on " << file << ": " << ort.error;
      return skipped;
    }
    EXPECT_TRUE(got.count("logits")) << what << ": the graph has no output 'logits'";
    for (const auto& [name, t] : got)  // every output the check file holds (logits; a cached step's presents too)
      if (check.has(name)) expect_close(what + " B=" + std::to_string(batch) + " " + name, t, check.at(name), kFixtureLong);
  }
  return skipped;
}

}  // namespace dl::test
