// fuzz/fuzz_gpt2_bpe.cpp - libFuzzer target for GPT-2's tokenizer files, as apps/generate reads them: vocab.json and
// merges.txt (tasks/gpt2_bpe.h Gpt2Bpe::parse), Hugging Face's tokenizer.json (tasks/gpt2_tokenizer_json.h), and the
// pre-tokenizer on any bytes. Built by scripts/fuzz.sh; the rule is in fuzz_util.h. The input is "vocab.json NUL
// merges.txt NUL text"; the first part is also read as a tokenizer.json. The pre-split of any bytes gives the bytes
// back; a tokenizer that loads emits ids inside its vocabulary and decodes them to the text (the first 512 bytes).
#include "fuzz_util.h"
#include "tasks/dataset.h"
#include "tasks/gpt2_bpe.h"
#include "tasks/gpt2_tokenizer_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> parts = fuzz::split_parts(data, size, 3);
  std::string joined;
  for (std::string_view p : dl::tasks::gpt2_pre_split(std::string_view((const char*)data, size))) {
    if (p.empty()) __builtin_trap();
    joined += p;
  }
  if (joined != std::string((const char*)data, size)) __builtin_trap();
  const std::string text = parts[2].substr(0, 512) + " the cat's 123 caf\xC3\xA9 \xFF\n";
  const auto check = [&](const dl::tasks::Gpt2Bpe& tok) {
    const std::vector<int32_t> ids = tok.encode(text);
    for (int32_t id : ids)
      if (id < 0 || id >= tok.vocab_size()) __builtin_trap();
    if (tok.decode(ids) != text) __builtin_trap();
  };
  try {
    check(dl::tasks::Gpt2Bpe::parse(parts[0], parts[1]));
  } catch (const dl::tasks::DataError&) {
  }
  try {
    check(dl::tasks::parse_gpt2_tokenizer_json(parts[0]));
  } catch (const dl::tasks::DataError&) {
  }
  return 0;
}
