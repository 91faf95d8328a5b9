// tasks/speech.h - keyword-spotting audio: words synthesised in-process with espeak-ng, and a reader for
// the Speech Commands dataset's WAV folders (Warden 2018; used as SC10/SC35 by S4 and in Never Train
// from Scratch, Amos et al. 2023).
//
// What it is: (1) a seeded generator of 1-second, 16 kHz clips of command words spoken by several
// espeak-ng voices and accents at random rate and pitch, trimmed of silence, centred (with a small random
// shift), scaled to a random loudness and mixed with Gaussian noise; (2) a strict RIFF/WAVE parser and
// writer (16-bit PCM); (3) a loader for <root>/<word>/*.wav with validation_list.txt / testing_list.txt.
// Clips become either 8-bit mu-law tokens (vocab 256, ITU-T G.711 style companding with mu = 255) or raw
// float samples in [-1, 1] (feature_dim 1).
// What it is not: a feature extractor (no MFCC or spectrogram) and not a recording of human speakers:
// synthetic speech is far more regular than the real dataset, so numbers on it are not comparable to
// published Speech Commands results.
//
// espeak-ng keeps global state (one voice, one callback, and static counters that no API resets): every
// call into it takes one process-wide mutex, espeak_Initialize runs once on first use, and each utterance
// is synthesised in a fork()ed child of that pristine engine so the output does not depend on what was
// spoken before (see speech.cpp). Cost: ~15 ms per clip on one core.
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "tasks/dataset.h"

namespace dl::tasks {

inline constexpr int32_t kSpeechSampleRate = 16000;  // Speech Commands' rate; clips are 1 s = 16000 samples

enum class AudioEncoding { mu_law, float_samples };

struct SpeechConfig {
  std::vector<std::string> words = {"yes", "no", "up", "down", "left", "right", "on", "off", "stop", "go"};
  // espeak-ng voice names; a "+variant" (m1..m7, f1..f4, ...) is appended at random to vary the speaker.
  std::vector<std::string> voices = {"en", "en-us", "en-gb-scotland", "en-029", "en-gb-x-rp", "en-us-nyc"};
  std::vector<std::string> variants = {"", "m1", "m3", "m7", "f1", "f2", "f4"};
  int32_t min_rate = 130, max_rate = 230;      // words per minute (espeak default 175)
  int32_t min_pitch = 25, max_pitch = 75;      // espeak pitch 0-100 (default 50)
  double min_peak = 0.3, max_peak = 0.9;       // peak amplitude after scaling
  double min_noise = 0.002, max_noise = 0.03;  // std of added Gaussian noise (log-uniform)
  double max_shift_s = 0.1;                    // random offset of the centred word
  AudioEncoding encoding = AudioEncoding::mu_law;
};

// Synthesises `word` with one voice at one rate and pitch and returns its samples at 16 kHz in [-1, 1],
// leading and trailing silence trimmed (espeak-ng's own rate, 22050 Hz, is resampled with a windowed
// sinc). Throws DataError if espeak-ng cannot be initialised or the voice is unknown.
std::vector<float> synthesize_word(const std::string& word, const std::string& voice, int32_t rate, int32_t pitch);

// One 1-second clip (16000 samples in [-1, 1]) of `word`, with voice, rate, pitch, loudness, position
// and noise drawn from rng.
std::vector<float> synthesize_clip(const SpeechConfig& config, const std::string& word, std::mt19937_64& rng);

// `num_examples` clips with balanced classes (example i has class i % words.size(), then shuffled).
Dataset make_synthetic_speech(const SpeechConfig& config, int64_t num_examples, uint64_t seed,
                              const std::string& name = "speech_synth");

// 8-bit mu-law companding (mu = 255): x in [-1, 1] -> token 0..255, and back.
int32_t mu_law_encode(float x);
float mu_law_decode(int32_t token);

// Fills Example::tokens (mu_law) or Example::features (float_samples) from samples.
void encode_audio(const std::vector<float>& samples, AudioEncoding encoding, Example& example);

// ---- WAV -----------------------------------------------------------------------------------

struct WavData {
  int32_t sample_rate = 0;
  int32_t channels = 0;
  std::vector<int16_t> samples;  // interleaved when channels > 1
};

// Parses a whole RIFF/WAVE file held in memory; `name` only labels error messages. Accepts format tag 1
// (PCM) or WAVE_FORMAT_EXTENSIBLE with the PCM sub-format, 16 bits per sample; skips unknown chunks.
WavData parse_wav(std::string_view bytes, const std::string& name);
WavData read_wav(const std::string& path);
void write_wav(const std::string& path, const std::vector<int16_t>& samples, int32_t sample_rate, int32_t channels = 1);

// ---- Speech Commands folders -----------------------------------------------------------------

struct SpeechCommandsOptions {
  std::vector<std::string> words;  // classes in label order; empty = every <root>/<word>/ folder not
                                   // starting with '_' (e.g. _background_noise_), sorted
  AudioEncoding encoding = AudioEncoding::mu_law;
  int64_t max_per_split = -1;  // keep at most this many examples per split (-1 = all)
};

// Reads <root>/<word>/*.wav (16-bit PCM mono 16 kHz; shorter clips are zero-padded at the end, longer
// ones rejected) and splits them with <root>/validation_list.txt and <root>/testing_list.txt (lines
// "<word>/<file>.wav"); every other file is training data, as in the dataset's README.
TaskData read_speech_commands(const std::string& root, const SpeechCommandsOptions& options);

}  // namespace dl::tasks
