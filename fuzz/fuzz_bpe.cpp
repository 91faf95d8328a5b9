// fuzz/fuzz_bpe.cpp - libFuzzer target for the BPE tokenizer file (tasks/tokenizer.h BpeTokenizer::parse). Built
// by scripts/fuzz.sh; the rule is in fuzz_util.h. A tokenizer that loads must round-trip text through encode and
// decode, and every id it emits must be inside its vocabulary.
#include "fuzz_util.h"
#include "tasks/dataset.h"
#include "tasks/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto tok = dl::tasks::BpeTokenizer::parse(std::string_view((const char*)data, size), "fuzz.json");
    const std::string text = "the cat sat on the mat, 123 times!\n\tOK";
    const std::vector<int32_t> ids = tok.encode(text);
    for (int32_t id : ids)
      if (id < 0 || id >= tok.vocab_size()) __builtin_trap();
    if (tok.decode(ids) != text) __builtin_trap();
  } catch (const dl::tasks::DataError&) {
  }
  return 0;
}
