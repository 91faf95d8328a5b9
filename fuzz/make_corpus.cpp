// fuzz/make_corpus.cpp - writes the seed corpus of every fuzz target: small valid files made by the project's own
// writers (and, for the text formats, the smallest valid examples of each format), so the fuzzer starts from inputs
// that get past the first checks. scripts/fuzz.sh runs it before fuzzing; nothing of it is committed.
//
//   fuzz_make_corpus <out>      writes <out>/<target>/seed_<n>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "apps/fpt/config.h"
#include "apps/lra_benchmark/config.h"
#include "apps/pretrained_convs/config.h"
#include "fuzz_models.h"
#include "nlohmann/json.hpp"
#include "optim/adam.h"
#include "optim/checkpoint.h"
#include "tasks/digits.h"
#include "tasks/homology.h"
#include "tasks/image.h"
#include "tasks/pathfinder.h"
#include "tasks/speech.h"
#include "tasks/tokenizer.h"

namespace fs = std::filesystem;

static std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

static std::string out_dir;
static void seed(const std::string& target, const std::string& bytes) {
  const fs::path dir = fs::path(out_dir) / target;
  fs::create_directories(dir);
  int n = 0;
  while (fs::exists(dir / ("seed_" + std::to_string(n)))) n++;
  std::ofstream(dir / ("seed_" + std::to_string(n)), std::ios::binary).write(bytes.data(), (std::streamsize)bytes.size());
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_make_corpus <out folder>\n";
    return 2;
  }
  out_dir = argv[1];
  const std::string tmp = (fs::path(out_dir) / "tmp").string();
  fs::create_directories(tmp);
  using namespace dl;

  // IDX (a 2 x 3 x 3 uint8 array, as Fashion-MNIST's images) and a CIFAR-10 batch of two records
  tasks::IdxArray a;
  a.dims = {2, 3, 3};
  a.data.resize(18);
  for (size_t i = 0; i < a.data.size(); i++) a.data[i] = (uint8_t)(i * 13);
  tasks::write_idx_gz(tmp + "/a.idx.gz", a);
  const std::vector<uint8_t> idx = tasks::read_gz_file(tmp + "/a.idx.gz");
  seed("idx", std::string(idx.begin(), idx.end()));
  std::string cifar;
  for (int r = 0; r < 2; r++) cifar += (char)(r * 7), cifar += std::string(3072, (char)(40 + r));
  seed("idx", cifar);
  seed("idx", std::string("P5\n# gray\n3 2\n255\n") + std::string("\x01\x80\xff\x00\x10\x20", 6));
  seed("idx", "P2 2 2 15\n0 15\n7 8\n");
  seed("idx", std::string("P6 1 2 65535\n") + std::string(12, '\x7f'));

  // ListOps and AAN TSV
  seed("tsv", "Source\tTarget\n( ( [MAX 2 9 ( [MIN 4 7 ] ) 0 ] ) )\t9\n[SM 3 4 ]\t7\r\n");
  seed("tsv", "1.0\taan/a\taan/b\tfirst text\tsecond text\n0.0\tc\td\tz\tw\n");

  // Monash/UEA regression .ts (BIDMC)
  seed("ts", "#c\n@problemName B\n@timeStamps false\n@univariate false\n@dimensions 2\n@targetLabel true\n@data\n"
              "0.5,1,?,2:3,2,1,0:72.5\n1,2,3,4:0,0,0,1:-3e1\n");
  seed("ts", "@univariate true\n@targetlabel true\n@data\n1,2,3:4\n");

  // Pathfinder metadata and a 32 x 32 PNG
  seed("pathfinder_meta", "imgs/3 sample_9.png 9 0 14 2 1\r\nimgs/3 sample_10.png 10 1 14\n\n");
  std::vector<uint8_t> px(32 * 32);
  for (size_t i = 0; i < px.size(); i++) px[i] = (uint8_t)((i * 37) % 256);
  tasks::write_gray_png(tmp + "/a.png", px, 32, 32);
  seed("png", slurp(tmp + "/a.png"));

  // WAV: 16-bit PCM, mono and stereo
  std::vector<int16_t> s(64);
  for (size_t i = 0; i < s.size(); i++) s[i] = (int16_t)(i * 500 - 16000);
  tasks::write_wav(tmp + "/a.wav", s, 16000, 1);
  seed("wav", slurp(tmp + "/a.wav"));
  tasks::write_wav(tmp + "/b.wav", s, 8000, 2);
  seed("wav", slurp(tmp + "/b.wav"));
  {  // a Speech Commands folder (fuzz_speech_folder.cpp's records): two clips of each word, one of them listed for
     // validation and one for test
    auto record = [](int kind, const std::string& body) {
      return std::string(1, (char)kind) + (char)(body.size() & 255) + (char)(body.size() >> 8) + body;
    };
    const std::string clip = slurp(tmp + "/a.wav");
    seed("speech_folder", record(0, clip) + record(0, clip) + record(1, clip) + record(1, clip) +
                              record(2, "yes/0.wav\nno/2.wav\n") + record(3, "yes/1.wav\n") + record(4, clip));
  }

  // BPE tokenizer files
  tasks::BpeTokenizer::train("the cat sat on the mat; the cat ate the rat. 123 123", 12).save(tmp + "/bpe.json");
  seed("bpe", slurp(tmp + "/bpe.json"));
  // GPT-2's tokenizer files (the test fixture's small vocab.json and merges.txt) and a text: NUL-separated
  const std::string gpt2_dir = std::string(DL_SOURCE_DIR) + "/tests/fixtures/gpt2_bpe/";
  seed("gpt2_bpe", slurp(gpt2_dir + "vocab.json") + '\0' + slurp(gpt2_dir + "merges.txt") + '\0' + "Hello  world, it's 2026!\n");
  seed("gpt2_bpe", R"({"model": {"type": "BPE", "merges": ["h e", "Ġ s"], "vocab": )" + slurp(gpt2_dir + "vocab.json") +
                       R"(}, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false}})" + std::string(2, '\0') + "he said");

  // sentiment fixtures and a user's task files
  seed("sentiment", R"([{"text": "Great phone.", "class": 1}, {"text": "Broke in a day", "class": 0}, {"text": "", "class": null}])");
  seed("text_label", "positive\tA fine film.\r\nnegative\tDull.\n\n");
  seed("text_label", "text,label\n\"Fine, \"\"really\"\"\",positive\nDull,negative\n");

  // safetensors, a checkpoint folder (manifest, model, state: NUL-separated) and an HF-named GPT-2 file
  Generator g(1);
  fuzz::TinyModel m(g);
  m.save(tmp + "/tiny.safetensors", {{"note", "seed"}});
  seed("safetensors", slurp(tmp + "/tiny.safetensors"));
  optim::AdamW opt(m.parameters());
  for (auto& p : m.parameters()) p.mutable_grad() = ones(p.shape());
  opt.step();
  optim::TrainingState st;
  st.step = 1, st.epoch = 0, st.data_position = "7";
  st.save_rng("data", g);
  st.extra["curve"] = R"([{"step": 1, "loss": 0.5}])";
  const optim::CheckpointInfo info = optim::save_checkpoint(tmp + "/ckpt", m, opt, st);
  nlohmann::json man = nlohmann::json::parse(slurp(tmp + "/ckpt/checkpoint.json"));
  man["model"] = "model-a.safetensors", man["state"] = "state-a.safetensors";
  for (auto& h : man["history"]) h["model"] = "model-a.safetensors", h["state"] = "state-a.safetensors";
  std::string ck = man.dump();
  ck += '\0', ck += slurp(info.model_path), ck += '\0', ck += slurp(info.state_path);
  seed("checkpoint", ck);
  nn::GPT2Model gpt(fuzz::tiny_gpt2(), g);
  gpt.save(tmp + "/gpt2.safetensors");
  seed("hf_gpt2", slurp(tmp + "/gpt2.safetensors"));

  // presets: the LRA tiny preset, then overrides
  seed("preset", slurp(std::string(DL_SOURCE_DIR) + "/apps/lra_benchmark/presets/tiny.json") + '\0' + "lr=0.002\nsteps=30\n");
  seed("preset", std::string(R"({"tasks": ["listops"], "models": ["transformer"], "regimes": ["scratch"], "defaults": {"steps": 5}})") +
                     '\0' + "d_model=64\n");
  // an aclImdb folder: a review in each of the four folders (first byte: where it goes, fuzz_imdb.cpp), a file to skip
  seed("imdb", std::string("pgreat film") + '\0' + "qdull<br />plot" + '\0' + "rfine" + '\0' + "sbad" + '\0' + "tskip me");
  seed("imdb", std::string("pa") + '\0' + "qb" + '\0' + "rc" + '\0' + "sd" + '\0' + "vtest/neg");  // a folder deleted
  // apps/fpt's files: the first images of the packaged digits and two packaged profile HMMs (when installed; small
  // hand-made ones always)
  {
    std::string two = "0,0,5,13,9,1,0,0,0,0,13,15,10,15,5,0,0,3,15,2,0,11,8,0,0,4,12,0,0,8,8,0,0,5,8,0,0,9,8,0,0,4,11,0,"
                      "1,12,7,0,0,2,14,5,10,12,0,0,0,0,6,13,10,0,0,0,0\n";
    two += two.substr(0, two.size() - 3) + ",7\n";  // the same pixels labelled 7
    seed("digits", two);
    if (fs::exists(tasks::digits_default_path)) {
      const std::vector<uint8_t> gz = tasks::read_gz_file(tasks::digits_default_path);
      std::string text(gz.begin(), gz.end());
      size_t cut = 0;
      for (int line = 0; line < 20 && cut != std::string::npos; line++) cut = text.find('\n', cut + 1);
      seed("digits", text.substr(0, cut == std::string::npos ? text.size() : cut + 1));
    }
    for (const char* f : {"tutorial/fn3.hmm", "tutorial/globins4.hmm"})
      if (fs::exists(std::string(tasks::hmmer_examples_dir) + "/" + f))
        seed("hmmer", slurp(std::string(tasks::hmmer_examples_dir) + "/" + f));
    std::string e;  // one node: every emission uniform (-ln(1/20) = 2.99573), the only path M -> end
    for (int a = 0; a < 20; a++) e += " 2.99573";
    seed("hmmer", "HMMER3/f [3.3.2]\nNAME  tiny\nLENG  1\nALPH  amino\nHMM A C D E F G H I K L M N P Q R S T V W Y\n"
                  "  m->m m->i m->d i->m i->i d->m d->d\n" + e + "\n 0 * * 0 * 0 *\n 1" + e + " 1 x - - -\n" + e +
                  "\n 0 * * 0 * 0 *\n//\n");
  }
  // a model file's dl.config: each app's default cell, as its cells write it
  seed("model_config", lra::CellConfig().to_json().dump());
  seed("model_config", fpt::CellConfig().to_json().dump());
  seed("model_config", pconv::CellConfig().to_json().dump());
  fs::remove_all(tmp);
  std::cout << "fuzz corpus written to " << out_dir << "\n";
  return 0;
}
