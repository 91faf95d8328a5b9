// tasks/speech.cpp - command words synthesised with espeak-ng, resampled to 16 kHz, and mu-law tokens.
// (WAV parsing and the Speech Commands folder reader are in speech_wav.cpp.)
#include <espeak-ng/speak_lib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <mutex>
#include <numbers>

#include "tasks/speech.h"

namespace dl::tasks {
namespace {

double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }
double uniform(std::mt19937_64& rng, double lo, double hi) { return lo + (hi - lo) * uniform01(rng); }
// Box-Muller from rng() directly, so a seed gives the same noise with any standard library.
double gaussian(std::mt19937_64& rng) {
  const double u1 = 1.0 - uniform01(rng), u2 = uniform01(rng);  // u1 in (0, 1]: log is finite
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

uint64_t mix64(uint64_t z) {  // splitmix64 finaliser: decorrelates per-example seeds
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// ---- espeak-ng: one process-wide engine behind one mutex ---------------------------------------

std::mutex& espeak_mutex() {
  static std::mutex m;
  return m;
}

// Called by espeak_Synth (synchronously, on the calling thread) with successive chunks of 16-bit audio;
// user_data is the vector we passed to espeak_Synth. Returning 0 asks for more.
int collect_samples(short* wav, int num_samples, espeak_EVENT* events) {
  if (wav && num_samples > 0 && events) {
    auto* out = static_cast<std::vector<int16_t>*>(events->user_data);
    out->insert(out->end(), wav, wav + num_samples);
  }
  return 0;
}

// Must be called with espeak_mutex() held. Returns espeak-ng's output rate (22050 Hz for its voices).
int espeak_rate_locked() {
  static int rate = [] {
    const int r = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, nullptr, 0);
    if (r > 0) {
      espeak_SetSynthCallback(collect_samples);
      // Load the English voice and dictionary once here, so the forked children (below) inherit them
      // instead of each reading the dictionary again.
      espeak_SetVoiceByName("en");
    }
    return r;
  }();
  if (rate <= 0)
    throw DataError("speech: espeak_Initialize failed (is espeak-ng-data installed? returned " + std::to_string(rate) + ")");
  return rate;
}

// Band-limited resampling by a windowed sinc (Hann window, 16 zero crossings each side of the output
// rate's kernel). The cut-off sits at 90% of the lower Nyquist frequency, so 22050 -> 16000 does not alias.
std::vector<float> resample(const std::vector<float>& in, double in_rate, double out_rate) {
  if (in.empty() || in_rate == out_rate) return in;
  const double cutoff = 0.9 * 0.5 * std::min(in_rate, out_rate) / in_rate;  // cycles per input sample
  const double half_width = 16.0 / (2.0 * cutoff);                          // in input samples
  const size_t n_out = size_t(std::floor(double(in.size()) * out_rate / in_rate));
  std::vector<float> out(n_out);
  for (size_t j = 0; j < n_out; ++j) {
    const double centre = double(j) * in_rate / out_rate;  // position of output sample j in input samples
    const int64_t k0 = std::max<int64_t>(0, int64_t(std::ceil(centre - half_width)));
    const int64_t k1 = std::min<int64_t>(int64_t(in.size()) - 1, int64_t(std::floor(centre + half_width)));
    double acc = 0.0;
    for (int64_t k = k0; k <= k1; ++k) {
      const double t = double(k) - centre;
      const double x = 2.0 * cutoff * t;
      const double sinc = x == 0.0 ? 1.0 : std::sin(std::numbers::pi * x) / (std::numbers::pi * x);
      const double window = 0.5 + 0.5 * std::cos(std::numbers::pi * t / half_width);
      acc += in[size_t(k)] * 2.0 * cutoff * sinc * window;
    }
    out[j] = float(acc);
  }
  return out;
}

// espeak-ng is not a pure function of its inputs: it keeps function-level statics that advance with every
// sample it makes (e.g. the pitch-flutter index in wavegen.c's AdvanceParameters) and draws fricative noise
// from rand(), and no API resets them, not even espeak_Terminate + espeak_Initialize. So the same word would
// come out slightly different depending on what was synthesised before. To keep "same seed, same data",
// this process initialises espeak-ng once but never synthesises itself: each utterance is made in a
// fork()ed child, which starts from that pristine state, sends the 16-bit samples back through a pipe and
// exits. fork is cheap here (copy-on-write; measured cost in docs/data.md) and the mutex makes sure no
// other thread is inside espeak-ng while we fork.
std::vector<int16_t> synthesize_in_child(const std::string& word, const std::string& voice, int32_t rate, int32_t pitch) {
  int fds[2];
  if (pipe(fds) != 0) throw DataError("speech: pipe() failed: " + std::string(std::strerror(errno)));
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    throw DataError("speech: fork() failed: " + std::string(std::strerror(errno)));
  }
  if (pid == 0) {  // child: synthesise, write "<int64 count><samples>", leave without running atexit handlers
    close(fds[0]);
    std::vector<int16_t> pcm;
    int status = 0;
    std::srand(1u);  // espeak-ng's noise comes from rand()
    if (espeak_SetVoiceByName(voice.c_str()) != EE_OK) {
      status = 2;
    } else {
      espeak_SetParameter(espeakRATE, std::clamp(rate, espeakRATE_MINIMUM, espeakRATE_MAXIMUM), 0);
      espeak_SetParameter(espeakPITCH, std::clamp(pitch, 0, 100), 0);
      if (espeak_Synth(word.c_str(), word.size() + 1, 0, POS_CHARACTER, 0, espeakCHARS_AUTO, nullptr, &pcm) != EE_OK) status = 3;
    }
    const int64_t n = int64_t(pcm.size());
    const char* p = reinterpret_cast<const char*>(&n);
    std::string out(p, p + sizeof n);
    out.append(reinterpret_cast<const char*>(pcm.data()), pcm.size() * sizeof(int16_t));
    for (size_t done = 0; done < out.size();) {
      const ssize_t w = write(fds[1], out.data() + done, out.size() - done);
      if (w <= 0) _exit(4);
      done += size_t(w);
    }
    _exit(status);
  }
  close(fds[1]);
  std::string in;
  char buf[1 << 16];
  for (ssize_t r; (r = read(fds[0], buf, sizeof buf)) != 0;) {
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) break;
    in.append(buf, size_t(r));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 100;
  if (code == 2) throw DataError("speech: espeak-ng has no voice \"" + voice + "\" (see `espeak-ng --voices=en`)");
  int64_t n = -1;
  if (in.size() >= sizeof n) std::memcpy(&n, in.data(), sizeof n);
  if (code != 0 || n < 0 || in.size() != sizeof n + size_t(n) * sizeof(int16_t))
    throw DataError("speech: synthesising \"" + word + "\" with voice " + voice + " failed (child status " +
                    std::to_string(code) + ")");
  std::vector<int16_t> pcm(static_cast<size_t>(n));
  std::memcpy(pcm.data(), in.data() + sizeof n, pcm.size() * sizeof(int16_t));
  return pcm;
}

}  // namespace

std::vector<float> synthesize_word(const std::string& word, const std::string& voice, int32_t rate, int32_t pitch) {
  std::vector<int16_t> pcm;
  int native_rate = 0;
  {
    std::lock_guard<std::mutex> lock(espeak_mutex());
    native_rate = espeak_rate_locked();
    pcm = synthesize_in_child(word, voice, rate, pitch);
  }
  // Trim silence: espeak pads words with quiet lead-in and tail; keep from the first to the last sample
  // above 2% of the peak.
  int32_t peak = 1;
  for (int16_t s : pcm) peak = std::max<int32_t>(peak, std::abs(int32_t(s)));
  const int32_t threshold = std::max(1, peak / 50);
  size_t first = 0, last = pcm.size();
  while (first < last && std::abs(int32_t(pcm[first])) <= threshold) ++first;
  while (last > first && std::abs(int32_t(pcm[last - 1])) <= threshold) --last;
  std::vector<float> samples(last - first);
  for (size_t i = first; i < last; ++i) samples[i - first] = float(pcm[i]) / 32768.0f;
  return resample(samples, native_rate, kSpeechSampleRate);
}

std::vector<float> synthesize_clip(const SpeechConfig& config, const std::string& word, std::mt19937_64& rng) {
  if (config.voices.empty()) throw DataError("speech: SpeechConfig::voices is empty");
  std::string voice = config.voices[rng() % config.voices.size()];
  if (!config.variants.empty()) {
    const std::string& v = config.variants[rng() % config.variants.size()];
    if (!v.empty()) voice += "+" + v;
  }
  const int32_t rate = config.min_rate + int32_t(rng() % uint64_t(config.max_rate - config.min_rate + 1));
  const int32_t pitch = config.min_pitch + int32_t(rng() % uint64_t(config.max_pitch - config.min_pitch + 1));
  std::vector<float> w = synthesize_word(word, voice, rate, pitch);

  float peak = 1e-6f;
  for (float s : w) peak = std::max(peak, std::abs(s));
  const float gain = float(uniform(rng, config.min_peak, config.max_peak)) / peak;
  // Centre the word in the second (cropping both ends equally if it is longer), shifted a little at random.
  const int64_t N = kSpeechSampleRate, L = int64_t(w.size());
  const int64_t max_shift = int64_t(config.max_shift_s * N);
  const int64_t shift = max_shift > 0 ? int64_t(rng() % uint64_t(2 * max_shift + 1)) - max_shift : 0;
  const int64_t start = std::clamp<int64_t>((N - L) / 2 + shift, std::min<int64_t>(0, N - L), std::max<int64_t>(0, N - L));
  std::vector<float> clip(size_t(N), 0.0f);
  for (int64_t i = 0; i < N; ++i) {
    const int64_t k = i - start;
    if (k >= 0 && k < L) clip[size_t(i)] = w[size_t(k)] * gain;
  }
  // Background noise, its level log-uniform so quiet and noisy clips are equally common.
  const double sigma = std::exp(uniform(rng, std::log(config.min_noise), std::log(config.max_noise)));
  for (float& s : clip) s = std::clamp(float(s + sigma * gaussian(rng)), -1.0f, 1.0f);
  return clip;
}

int32_t mu_law_encode(float x) {
  const double mu = 255.0, v = std::clamp(double(x), -1.0, 1.0);
  const double y = std::copysign(std::log1p(mu * std::abs(v)) / std::log1p(mu), v);  // in [-1, 1]
  return int32_t(std::lround((y + 1.0) / 2.0 * mu));
}

float mu_law_decode(int32_t token) {
  const double mu = 255.0, y = std::clamp(token, 0, 255) / mu * 2.0 - 1.0;
  return float(std::copysign((std::pow(1.0 + mu, std::abs(y)) - 1.0) / mu, y));
}

void encode_audio(const std::vector<float>& samples, AudioEncoding encoding, Example& example) {
  if (encoding == AudioEncoding::mu_law) {
    example.tokens.resize(samples.size());
    for (size_t i = 0; i < samples.size(); ++i) example.tokens[i] = mu_law_encode(samples[i]);
  } else {
    example.features = samples;  // (T, 1)
  }
}

Dataset make_synthetic_speech(const SpeechConfig& config, int64_t num_examples, uint64_t seed, const std::string& name) {
  if (config.words.empty()) throw DataError("speech: SpeechConfig::words is empty");
  Dataset d;
  d.name = name;
  d.num_classes = int32_t(config.words.size());
  d.class_names = config.words;
  d.max_len = kSpeechSampleRate;
  if (config.encoding == AudioEncoding::mu_law) d.vocab_size = 256;
  else d.feature_dim = 1;
  std::vector<int32_t> labels(static_cast<size_t>(num_examples));
  for (int64_t i = 0; i < num_examples; ++i) labels[size_t(i)] = int32_t(i % d.num_classes);
  std::mt19937_64 order_rng(mix64(seed));
  for (int64_t i = num_examples - 1; i > 0; --i) std::swap(labels[size_t(i)], labels[order_rng() % uint64_t(i + 1)]);
  d.examples.resize(size_t(num_examples));
  for (int64_t i = 0; i < num_examples; ++i) {
    std::mt19937_64 rng(mix64(seed ^ mix64(uint64_t(i) + 1)));  // example i can be regenerated alone
    Example& e = d.examples[size_t(i)];
    e.label = labels[size_t(i)];
    encode_audio(synthesize_clip(config, config.words[size_t(e.label)], rng), config.encoding, e);
  }
  return d;
}

}  // namespace dl::tasks
