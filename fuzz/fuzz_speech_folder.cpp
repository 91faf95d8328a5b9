// fuzz/fuzz_speech_folder.cpp - libFuzzer target for the Speech Commands folder reader (tasks/speech.h
// read_speech_commands): <root>/<word>/*.wav split by validation_list.txt and testing_list.txt. A folder walk, so the
// input describes a folder; each WAV file's bytes are fuzzed too (fuzz_wav.cpp fuzzes the WAV parser alone).
// Built by scripts/fuzz.sh; the rule is in fuzz_util.h.
//
// The input: records of [kind byte][length, 2 bytes little-endian][that many bytes] (WAV files hold NUL bytes, so
// not fuzz_util.h's NUL-separated parts); at most 10 records. Kind mod 7: 0 yes/<i>.wav, 1 no/<i>.wav, 2
// validation_list.txt, 3 testing_list.txt, 4 _background_noise_/<i>.wav (not a word), 5 a folder named yes/<i>.wav,
// 6 a file named <i>.wav at the root (not in a word folder).
#include "fuzz_util.h"
#include "tasks/speech.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  const std::string root = fuzz::scratch_dir() + "/speech_commands";
  fs::remove_all(root);
  for (const char* d : {"yes", "no", "_background_noise_"}) fs::create_directories(root + "/" + d);
  size_t at = 0;
  for (int i = 0; i < 10 && at + 3 <= size; i++) {
    const int kind = data[at] % 7;
    const size_t len = std::min<size_t>(data[at + 1] | (size_t)data[at + 2] << 8, size - at - 3);
    const std::string body((const char*)data + at + 3, len), n = std::to_string(i);
    at += 3 + len;
    static const char* where[] = {"yes/", "no/", "", "", "_background_noise_/", "", ""};
    std::string path = root + "/" + where[kind] + n + ".wav";
    if (kind == 2) path = root + "/validation_list.txt";
    if (kind == 3) path = root + "/testing_list.txt";
    if (kind == 5) fs::create_directories(root + "/yes/" + n + ".wav");
    else std::ofstream(path, std::ios::binary | std::ios::app) << body;
  }
  dl::tasks::SpeechCommandsOptions o;
  o.max_per_split = 3;  // the encoding of 16000 samples per clip is the slow part
  try {
    const dl::tasks::TaskData t = dl::tasks::read_speech_commands(root, o);
    for (const dl::tasks::Dataset* d : {&t.train, &t.val, &t.test}) {
      if (d->num_classes != 2 || (int64_t)d->examples.size() > 3) __builtin_trap();  // yes, no; the cap holds
      for (const auto& e : d->examples) {
        if (e.label < 0 || e.label >= d->num_classes) __builtin_trap();
        if ((int64_t)e.tokens.size() != dl::tasks::kSpeechSampleRate) __builtin_trap();  // 1 s, zero-padded
        for (int32_t tok : e.tokens)
          if (tok < 0 || tok >= d->vocab_size) __builtin_trap();
      }
    }
  } catch (const dl::tasks::DataError&) {
  }
  return 0;
}
