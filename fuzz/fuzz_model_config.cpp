// fuzz/fuzz_model_config.cpp - libFuzzer target for the config a finished cell's model file carries (its "dl.config"
// safetensors metadata), as `eval --cell`, `fpt attention` and `explain` read it from a file a user hands over:
// apps/common/config.h checked_config_in_metadata, with each app's CellConfig. Built by
// scripts/fuzz.sh; the rule is in fuzz_util.h: anything wrong is a ConfigError naming the file and the field.
//
// The input: the metadata entry's text. Every app reads the same bytes (a user may hand any app any model file).
#include "apps/common/config.h"
#include "apps/fpt/config.h"
#include "apps/lra_benchmark/config.h"
#include "apps/pretrained_convs/config.h"
#include "fuzz_util.h"

template <class C> static void read_as(const std::map<std::string, std::string>& meta) {
  try {
    const C c = dl::harness::checked_config_in_metadata<C>(meta, "fuzz.safetensors", "fuzz");
    if (c.to_json() != C::from_json(c.to_json(), "round trip").to_json()) __builtin_trap();  // what it accepts, it rewrites
  } catch (const dl::harness::ConfigError& e) {
    if (std::string(e.what()).find("fuzz.safetensors") == std::string::npos) __builtin_trap();  // the file is named
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::map<std::string, std::string> meta = {{"dl.config", std::string((const char*)data, size)}};
  read_as<lra::CellConfig>(meta);
  read_as<fpt::CellConfig>(meta);
  read_as<pconv::CellConfig>(meta);
  return 0;
}
