// fuzz/fuzz_text_label.cpp - libFuzzer target for a user's own task files of apps/pretrained_convs (textfile task:
// "label<TAB>text" TSV or a CSV with "text" and "label" columns, RFC 4180 quoting; read_text_label_file). Built by
// scripts/fuzz.sh; the rule is in fuzz_util.h. The same bytes are read as a .tsv and as a .csv.
#include "apps/pretrained_convs/data.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes((const char*)data, size);
  for (const char* name : {"train.tsv", "train.csv"}) {
    try {
      for (const auto& t : pconv::read_text_label_file(fuzz::write_scratch(name, bytes)))
        if (t.id.empty()) __builtin_trap();
    } catch (const dl::tasks::DataError&) {
    }
  }
  return 0;
}
