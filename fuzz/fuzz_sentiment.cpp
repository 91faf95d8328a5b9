// fuzz/fuzz_sentiment.cpp - libFuzzer target for the sentiment-sentences reader (npm sentiment's JSON fixtures,
// tasks/text_classification.h sentiment_sentences). Built by scripts/fuzz.sh; the rule is in fuzz_util.h. The
// input is amazon.json (imdb.json and yelp.json are empty lists); every accepted sentence has label 0 or 1.
#include "fuzz_util.h"
#include "tasks/text_classification.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool once = [] {
    fuzz::write_scratch("imdb.json", "[]");
    fuzz::write_scratch("yelp.json", "[]");
    return true;
  }();
  (void)once;
  fuzz::write_scratch("amazon.json", std::string((const char*)data, size));
  try {
    for (const auto& s : dl::tasks::sentiment_sentences(fuzz::scratch_dir()))
      if (s.label != 0 && s.label != 1) __builtin_trap();
  } catch (const dl::tasks::DataError&) {
  }
  return 0;
}
