// fuzz/fuzz_checkpoint.cpp - libFuzzer target for resuming from a checkpoint folder (optim/checkpoint.h
// load_latest_good_checkpoint): the manifest checkpoint.json, the model file and the training-state file.
// Built by scripts/fuzz.sh; the rule is in fuzz_util.h.
//
// The input is three parts separated by NUL bytes: manifest, model-a.safetensors, state-a.safetensors (the seed
// corpus holds a real checkpoint of the model below, its manifest rewritten to those names). A load must either
// succeed or throw CheckpointError, and a load that throws must leave the model's weights as they were.
#include <cstring>

#include "fuzz_util.h"
#include "optim/adam.h"
#include "optim/checkpoint.h"
#include "fuzz_models.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = fuzz::split_parts(data, size, 3);
  const std::string dir = fuzz::scratch_dir() + "/ckpt";
  std::filesystem::create_directories(dir);
  fuzz::write_scratch("ckpt/checkpoint.json", parts[0]);
  fuzz::write_scratch("ckpt/model-a.safetensors", parts[1]);
  fuzz::write_scratch("ckpt/state-a.safetensors", parts[2]);
  dl::Generator g(0);
  fuzz::TinyModel m(g);
  dl::optim::AdamW opt(m.parameters());
  const std::vector<float> before = fuzz::flat_weights(m);
  try {
    std::vector<std::string> skipped;
    const dl::optim::TrainingState st = dl::optim::load_latest_good_checkpoint(dir, m, opt, &skipped);
    if (st.step < 0) __builtin_trap();
  } catch (const dl::nn::CheckpointError&) {
    if (fuzz::flat_weights(m) != before) __builtin_trap();  // nothing changes unless everything validates
  }
  return 0;
}
