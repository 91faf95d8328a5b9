// fuzz/fuzz_hf_gpt2.cpp - libFuzzer target for loading Hugging Face GPT-2 weights (nn/models/gpt2.h load_gpt2_hf:
// safetensors with HF's names, Conv1D layouts, a tied or separate lm_head), as apps/fpt's `--set pretrained=FILE`
// does. Built by scripts/fuzz.sh; the rule is in fuzz_util.h: the load succeeds or throws CheckpointError /
// SafetensorsError naming the file, and a failed load leaves the model's weights as they were.
#include "fuzz_models.h"
#include "fuzz_util.h"
#include "tensor/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_scratch("gpt2.safetensors", std::string((const char*)data, size));
  dl::Generator g(0);
  dl::nn::GPT2Model m(fuzz::tiny_gpt2(), g);
  const std::vector<float> before = fuzz::flat_weights(m);
  try {
    dl::nn::load_gpt2_hf(m, path);
  } catch (const dl::nn::CheckpointError&) {
    if (fuzz::flat_weights(m) != before) __builtin_trap();
  } catch (const dl::SafetensorsError&) {
    if (fuzz::flat_weights(m) != before) __builtin_trap();
  }
  return 0;
}
