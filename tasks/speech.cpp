// tasks/speech.cpp - command words synthesised with espeak-ng, resampled to 16 kHz, and mu-law tokens.
// (WAV parsing and the Speech Commands folder reader are in speech_wav.cpp.)
#include <espeak-ng/speak_lib.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <csignal>
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
      // (this process only asks for the rate; the helper below synthesises)
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
// come out slightly different depending on what was synthesised before. To keep "same seed, same data", each
// utterance is made in a fork()ed child of a process that has initialised espeak-ng but never synthesised:
// the child starts from that pristine state, sends the 16-bit samples back through a pipe and exits.
//
// The forking is done by a helper process, not by this one. A process with other threads must not fork while
// one of them may hold a lock the child needs: glibc's malloc takes its locks around fork, but other
// allocators do not (clang 14's AddressSanitizer allocator hung a child in its first malloc while a test's
// second thread allocated: docs/reliability.md). So on first use this process starts the helper with
// posix_spawn (which does not fork the caller's threads or locks), re-executing its own program
// (/proc/self/exe) with DL_SPEECH_HELPER set; the constructor at the end of this section turns that new,
// single-threaded process into the helper before main() runs. The helper initialises espeak-ng once and forks
// one child per request, which is safe there. Requests go over a socket pair (SOCK_SEQPACKET: one message per
// request), each carrying the write end of a fresh pipe for the child's samples (SCM_RIGHTS); the reply is the
// child's exit code. The helper ignores SIGINT and SIGTERM (the app decides when to stop) and ends when this
// process closes its end of the socket, i.e. when it exits or is killed.

constexpr int kHelperFd = 3;  // the helper's end of the socket pair, at a fixed number in the new process
constexpr const char* kHelperEnv = "DL_SPEECH_HELPER";

struct Request {  // followed by the word's and the voice's bytes
  int32_t rate, pitch;
  uint32_t word_len, voice_len;
};

// In a child of the helper: synthesise from espeak-ng's pristine state into out_fd as "<int64 count><samples>";
// the exit code says what happened (0 ok, 2 no such voice, 3 synthesis failed, 4 the pipe broke).
[[noreturn]] void synthesize_to_pipe(const std::string& word, const std::string& voice, int32_t rate, int32_t pitch, int out_fd) {
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
    const ssize_t w = write(out_fd, out.data() + done, out.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) _exit(4);
    done += size_t(w);
  }
  _exit(status);  // without atexit handlers or destructors: the helper's state is not this child's to tear down
}

// The helper's loop (in the re-executed program, one thread): a request, a fork, the child's exit code back.
[[noreturn]] void run_helper(int sock) {
  std::signal(SIGINT, SIG_IGN);
  std::signal(SIGTERM, SIG_IGN);
  const bool ready = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, nullptr, 0) > 0;
  if (ready) {
    espeak_SetSynthCallback(collect_samples);
    espeak_SetVoiceByName("en");  // the English voice and dictionary once, inherited by every child
  }
  std::vector<char> buf(1 << 16);
  for (;;) {
    iovec iov{buf.data(), buf.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov, msg.msg_iovlen = 1, msg.msg_control = control, msg.msg_controllen = sizeof control;
    const ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(0);  // the app closed the socket (it ended)
    int out_fd = -1;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) std::memcpy(&out_fd, CMSG_DATA(c), sizeof out_fd);
    int32_t code = 5;  // a malformed request
    Request r{};
    if (out_fd >= 0 && size_t(n) >= sizeof r) {
      std::memcpy(&r, buf.data(), sizeof r);
      if (size_t(n) == sizeof r + size_t(r.word_len) + size_t(r.voice_len)) {
        const std::string word(buf.data() + sizeof r, r.word_len), voice(buf.data() + sizeof r + r.word_len, r.voice_len);
        const pid_t pid = ready ? fork() : -1;
        if (pid == 0) {
          close(sock);
          synthesize_to_pipe(word, voice, r.rate, r.pitch, out_fd);
        }
        close(out_fd), out_fd = -1;  // the child holds the only write end now: its exit is the reader's EOF
        int status = 0;
        if (!ready) code = 6;
        else if (pid < 0) code = 7;
        else {
          while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
          }
          code = WIFEXITED(status) ? WEXITSTATUS(status) : 100 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        }
      }
    }
    if (out_fd >= 0) close(out_fd);
    while (send(sock, &code, sizeof code, MSG_NOSIGNAL) < 0 && errno == EINTR) {
    }
  }
}

// Before main(): in a process started as the helper, become it (and never return).
__attribute__((constructor)) void become_helper_if_asked() {
  const char* v = std::getenv(kHelperEnv);
  if (v && std::strcmp(v, "1") == 0) run_helper(kHelperFd);
}

// This process's end of the helper's socket, the helper started on first use. Called with espeak_mutex() held.
int helper_socket() {
  static int sock = [] {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
      throw DataError("speech: socketpair() failed: " + std::string(std::strerror(errno)));
    if (sv[1] == kHelperFd) {  // dup2 onto itself would keep close-on-exec: move it off that number first
      const int moved = fcntl(sv[1], F_DUPFD_CLOEXEC, kHelperFd + 1);
      close(sv[1]);
      sv[1] = moved;
    }
    char exe[4096];
    const ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) throw DataError("speech: cannot find this program (/proc/self/exe) to start the espeak-ng helper");
    exe[len] = '\0';
    // the environment, with the helper's marker and one thread for any library that would start its own
    std::vector<std::string> env_s = {std::string(kHelperEnv) + "=1", "OMP_NUM_THREADS=1", "OPENBLAS_NUM_THREADS=1"};
    for (char** e = environ; *e; ++e) {
      const std::string kv = *e;
      if (kv.rfind(std::string(kHelperEnv) + "=", 0) != 0 && kv.rfind("OMP_NUM_THREADS=", 0) != 0 &&
          kv.rfind("OPENBLAS_NUM_THREADS=", 0) != 0)
        env_s.push_back(kv);
    }
    std::vector<char*> envp;
    for (auto& kv : env_s) envp.push_back(kv.data());
    envp.push_back(nullptr);
    char arg0[] = "dl-speech-helper";
    char* argv[] = {arg0, nullptr};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, sv[1], kHelperFd);  // dup2 clears close-on-exec on the copy
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, exe, &fa, nullptr, argv, envp.data());
    posix_spawn_file_actions_destroy(&fa);
    close(sv[1]);
    if (rc != 0) {
      close(sv[0]);
      throw DataError("speech: starting the espeak-ng helper (" + std::string(exe) + ") failed: " + std::strerror(rc));
    }
    return sv[0];
  }();
  return sock;
}

std::vector<int16_t> synthesize_in_child(const std::string& word, const std::string& voice, int32_t rate, int32_t pitch) {
  const int sock = helper_socket();
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw DataError("speech: pipe() failed: " + std::string(std::strerror(errno)));
  Request r{rate, pitch, uint32_t(word.size()), uint32_t(voice.size())};
  std::string req(reinterpret_cast<const char*>(&r), sizeof r);
  req += word, req += voice;
  if (req.size() > (1 << 16)) {
    close(fds[0]), close(fds[1]);
    throw DataError("speech: the word and voice are too long (" + std::to_string(req.size()) + " bytes)");
  }
  iovec iov{req.data(), req.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov, msg.msg_iovlen = 1, msg.msg_control = control, msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET, c->cmsg_type = SCM_RIGHTS, c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fds[1], sizeof(int));
  ssize_t sent;
  while ((sent = sendmsg(sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  close(fds[1]);
  const auto helper_gone = [&](const std::string& what) {
    return DataError("speech: the espeak-ng helper process is gone (" + what + "); synthesising \"" + word + "\" failed");
  };
  if (sent < 0) {
    close(fds[0]);
    throw helper_gone(std::string("sendmsg: ") + std::strerror(errno));
  }
  std::string in;
  char buf[1 << 16];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    in.append(buf, size_t(n));
  }
  close(fds[0]);
  int32_t code = -1;
  ssize_t got;
  while ((got = recv(sock, &code, sizeof code, 0)) < 0 && errno == EINTR) {
  }
  if (got != sizeof code) throw helper_gone(got == 0 ? "it closed the socket" : "no reply");
  if (code == 2) throw DataError("speech: espeak-ng has no voice \"" + voice + "\" (see `espeak-ng --voices=en`)");
  if (code == 6) throw DataError("speech: espeak_Initialize failed in the helper (is espeak-ng-data installed?)");
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
