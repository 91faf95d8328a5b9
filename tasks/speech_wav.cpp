// tasks/speech_wav.cpp - a strict RIFF/WAVE (16-bit PCM) parser and writer, and the Speech Commands
// folder reader (see speech.h).
//
// RIFF layout: "RIFF" <u32 size> "WAVE", then chunks <4-byte id> <u32 size> <size bytes> [pad byte if size
// is odd]. We need "fmt " (format tag, channels, sample rate, byte rate, block align, bits per sample;
// 40 bytes with a sub-format GUID when the tag is 0xFFFE, WAVE_FORMAT_EXTENSIBLE) before "data"; other
// chunks (LIST, fact, ...) are skipped. All integers are little-endian.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "tasks/speech.h"

namespace dl::tasks {
namespace fs = std::filesystem;
namespace {

uint32_t u32_at(std::string_view b, size_t i) {
  return uint32_t(uint8_t(b[i])) | uint32_t(uint8_t(b[i + 1])) << 8 | uint32_t(uint8_t(b[i + 2])) << 16 |
         uint32_t(uint8_t(b[i + 3])) << 24;
}
uint16_t u16_at(std::string_view b, size_t i) { return uint16_t(uint8_t(b[i]) | uint8_t(b[i + 1]) << 8); }

std::string printable(std::string_view s) {
  std::string out;
  for (char c : s) out += (c >= 32 && c < 127) ? c : '?';
  return "\"" + out + "\"";
}

void put_u32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s += char((v >> (8 * i)) & 0xFF);
}
void put_u16(std::string& s, uint16_t v) {
  s += char(v & 0xFF);
  s += char(v >> 8);
}

}  // namespace

WavData parse_wav(std::string_view b, const std::string& name) {
  if (b.size() < 12 || b.substr(0, 4) != "RIFF" || b.substr(8, 4) != "WAVE")
    throw DataError(name + ": not a RIFF/WAVE file (expected \"RIFF\"....\"WAVE\" header, found " +
                    printable(b.substr(0, std::min<size_t>(12, b.size()))) + ")");
  WavData wav;
  bool have_fmt = false;
  uint16_t block_align = 0;
  size_t pos = 12;
  while (pos + 8 <= b.size()) {
    const std::string_view id = b.substr(pos, 4);
    const uint32_t size = u32_at(b, pos + 4);
    const size_t body = pos + 8;
    if (size > b.size() - body)
      throw DataError(name + ": chunk " + printable(id) + " at byte " + std::to_string(pos) + " claims " + std::to_string(size) +
                      " bytes but only " + std::to_string(b.size() - body) + " remain (truncated file)");
    if (id == "fmt ") {
      if (size < 16) throw DataError(name + ": fmt chunk has " + std::to_string(size) + " bytes, expected >= 16");
      uint16_t tag = u16_at(b, body);
      wav.channels = u16_at(b, body + 2);
      wav.sample_rate = int32_t(u32_at(b, body + 4));
      block_align = u16_at(b, body + 12);
      const uint16_t bits = u16_at(b, body + 14);
      if (tag == 0xFFFE) {  // WAVE_FORMAT_EXTENSIBLE: the real tag is the first 2 bytes of the GUID
        if (size < 40) throw DataError(name + ": extensible fmt chunk has " + std::to_string(size) + " bytes, expected 40");
        tag = u16_at(b, body + 24);
      }
      if (tag != 1)
        throw DataError(name + ": expected PCM audio (format tag 1), found format tag " + std::to_string(tag) +
                        (tag == 3 ? " (IEEE float)" : ""));
      if (bits != 16) throw DataError(name + ": expected 16 bits per sample, found " + std::to_string(bits));
      if (wav.channels < 1 || block_align != wav.channels * 2)
        throw DataError(name + ": inconsistent fmt chunk: " + std::to_string(wav.channels) + " channels but block align " +
                        std::to_string(block_align));
      if (wav.sample_rate <= 0) throw DataError(name + ": sample rate must be > 0, found " + std::to_string(wav.sample_rate));
      have_fmt = true;
    } else if (id == "data") {
      if (!have_fmt) throw DataError(name + ": data chunk before fmt chunk");
      if (size % block_align != 0)
        throw DataError(name + ": data chunk of " + std::to_string(size) + " bytes is not a whole number of " +
                        std::to_string(block_align) + "-byte frames");
      wav.samples.resize(size / 2);
      for (size_t i = 0; i < wav.samples.size(); ++i) wav.samples[i] = int16_t(u16_at(b, body + 2 * i));
      return wav;
    }
    pos = body + size + (size & 1);  // chunks are padded to an even size
  }
  throw DataError(name + (have_fmt ? ": no data chunk" : ": no fmt chunk") + " found in " + std::to_string(b.size()) + " bytes");
}

WavData read_wav(const std::string& path) { return parse_wav(read_file(path, "WAV file"), path); }

void write_wav(const std::string& path, const std::vector<int16_t>& samples, int32_t sample_rate, int32_t channels) {
  const uint32_t data_bytes = uint32_t(samples.size() * 2);
  std::string s = "RIFF";
  put_u32(s, 36 + data_bytes);
  s += "WAVEfmt ";
  put_u32(s, 16);
  put_u16(s, 1);  // PCM
  put_u16(s, uint16_t(channels));
  put_u32(s, uint32_t(sample_rate));
  put_u32(s, uint32_t(sample_rate * channels * 2));  // byte rate
  put_u16(s, uint16_t(channels * 2));                // block align
  put_u16(s, 16);
  s += "data";
  put_u32(s, data_bytes);
  for (int16_t v : samples) put_u16(s, uint16_t(v));
  std::ofstream out(path, std::ios::binary);
  out.write(s.data(), std::streamsize(s.size()));
  if (!out) throw DataError(path + ": writing WAV failed");
}

TaskData read_speech_commands(const std::string& root, const SpeechCommandsOptions& options) {
  const fs::path dir(root);
  if (!fs::is_directory(dir)) throw DataError(root + ": Speech Commands root directory is missing");
  std::vector<std::string> words = options.words;
  if (words.empty()) {
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.is_directory() && entry.path().filename().string()[0] != '_') words.push_back(entry.path().filename());
    std::sort(words.begin(), words.end());
    if (words.empty()) throw DataError(root + ": no <word>/ folders");
  }
  auto read_list = [&](const char* file) {
    std::set<std::string> names;
    const std::string content = read_file((dir / file).string(), "split list");
    Lines lines(content);
    for (std::string_view line; lines.next(line);)
      if (!line.empty()) names.insert(std::string(line));
    return names;
  };
  const std::set<std::string> val_list = read_list("validation_list.txt"), test_list = read_list("testing_list.txt");

  TaskData data;
  for (Dataset* d : {&data.train, &data.val, &data.test}) {
    d->num_classes = int32_t(words.size());
    d->class_names = words;
    d->max_len = kSpeechSampleRate;
    if (options.encoding == AudioEncoding::mu_law) d->vocab_size = 256;
    else d->feature_dim = 1;
  }
  data.train.name = "speech_commands/train";
  data.val.name = "speech_commands/val";
  data.test.name = "speech_commands/test";
  for (size_t label = 0; label < words.size(); ++label) {
    const fs::path word_dir = dir / words[label];
    if (!fs::is_directory(word_dir)) throw DataError(word_dir.string() + ": word folder is missing");
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(word_dir))
      if (entry.path().extension() == ".wav") files.push_back(entry.path().filename());
    std::sort(files.begin(), files.end());
    for (const std::string& file : files) {
      const std::string rel = words[label] + "/" + file;  // the form used in the split lists
      Dataset& split = val_list.count(rel) ? data.val : test_list.count(rel) ? data.test : data.train;
      if (options.max_per_split >= 0 && int64_t(split.examples.size()) >= options.max_per_split) continue;
      const std::string path = (word_dir / file).string();
      const WavData wav = read_wav(path);
      if (wav.sample_rate != kSpeechSampleRate || wav.channels != 1)
        throw DataError(path + ": expected mono 16000 Hz audio, found " + std::to_string(wav.channels) + " channel(s) at " +
                        std::to_string(wav.sample_rate) + " Hz");
      if (wav.samples.size() > size_t(kSpeechSampleRate))
        throw DataError(path + ": expected at most 16000 samples (1 s), found " + std::to_string(wav.samples.size()));
      // Short clips are zero-padded at the end, as the usual Speech Commands pipelines do.
      std::vector<float> samples(kSpeechSampleRate, 0.0f);
      for (size_t i = 0; i < wav.samples.size(); ++i) samples[i] = float(wav.samples[i]) / 32768.0f;
      Example e;
      e.label = int32_t(label);
      encode_audio(samples, options.encoding, e);
      split.examples.push_back(std::move(e));
    }
  }
  return data;
}

}  // namespace dl::tasks
