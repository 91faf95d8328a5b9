// tasks/homology.h - the stand-in for TAPE remote homology in FPT: which protein family an amino-acid sequence was
// emitted from, for sequences sampled from the profile HMMs that Debian's hmmer-examples ships.
//
// What it measures, plainly: family recognition among N (default 9) Pfam families, from fragments of sequences
// sampled from each family's profile HMM. TAPE's task (Rao et al. 2019, from SCOP 1.75) is fold classification of
// real proteins across 1195 folds, with whole superfamilies held out of training - "remote" homology. Here every
// family is seen in training and the test sequences are fresh samples of the same profiles, so this is much easier
// and says nothing about generalising to unseen superfamilies; it does test learning a classifier from an
// amino-acid token sequence, where order and composition both carry the label.
//
// What it is.
//  - A reader of the HMMER3 save-file text format ("HMMER3/f", the HMMER 3.3 user guide, "HMMER profile HMM files"):
//    header lines (NAME, LENG, ALPH required, the rest skipped) up to the "HMM" line; the transition header line;
//    an optional COMPO line; node 0's insert emissions and transitions; then per node k = 1..LENG its match
//    emissions (the node number, 20 scores, then up to 5 annotation fields that are skipped), insert emissions
//    (20) and transitions (7: m->m m->i m->d i->m i->i d->m d->d); "//" ends a model, and a file may hold
//    several. Scores are -ln(probability), "*" is probability 0; each distribution is renormalised (the file rounds
//    to 5 decimals). Only amino-acid models (ALPH amino) are read. A bad file is a DataError naming the file, the
//    line and what was expected and found.
//  - A sampler of the core model, the sequences `hmmemit` writes by default (HMMER's p7_CoreEmit): begin in node
//    0's match state, follow the transitions, emit a residue in every match and insert state, none in a delete
//    state, end on leaving node LENG. It runs in C++ on this project's random numbers, so a seed gives the same
//    data on every machine, and the tests need the examples' files only, not the hmmer binary. (The alternative -
//    running hmmemit once into the data cache - would add a subprocess and a binary to every run and give data
//    that depends on HMMER's own generator.) Emission is capped at 4 x LENG + 100 residues, so a profile whose
//    insert loops never end cannot hang.
//  - Examples: a window of exactly `window` residues (default 64). A sampled domain longer than the window gives a
//    window at a uniformly random offset (a fragment); a shorter one is placed at a random offset inside background
//    residues, drawn from one distribution shared by all families (the mean of their node-0 insert emissions), so
//    the flanks carry no label. Tokens: the 20 amino acids in HMMER's order ACDEFGHIKLMNPQRSTVWY, ids 0..19, every
//    example of full length (no padding). Families are the classes in the order given; each split has
//    size / N examples per family.
// What it is not: the TAPE LMDB reader, and not fold classification.
#pragma once
#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "tasks/dataset.h"

namespace dl::tasks {

inline constexpr int kAminoAcids = 20;
inline const char* kAminoOrder = "ACDEFGHIKLMNPQRSTVWY";
inline const char* hmmer_examples_dir = "/usr/share/doc/hmmer/examples";

// One profile HMM, probabilities (not scores). Node 0 has insert emissions and transitions only.
struct ProfileHmm {
  std::string name;
  int32_t length = 0;                                 // LENG: match states 1..length
  std::vector<std::array<double, kAminoAcids>> match;  // [0..length], match[0] unused
  std::vector<std::array<double, kAminoAcids>> insert; // [0..length]
  std::vector<std::array<double, 7>> trans;            // [0..length]: MM MI MD IM II DM DD
};
enum HmmTransition { kMM, kMI, kMD, kIM, kII, kDM, kDD };

// Every model in the text; `source` names it in errors. At least one model.
std::vector<ProfileHmm> parse_hmmer3(std::string_view text, const std::string& source);
// A .hmm file, plain or gzip-compressed.
std::vector<ProfileHmm> read_hmmer3(const std::string& path);

// One core-model emission: residue ids 0..19.
std::vector<int32_t> emit_sequence(const ProfileHmm& hmm, std::mt19937_64& rng);

// The amino-acid families of hmmer-examples used by default (name, path under hmmer_examples_dir): every amino model
// the package has longer than 50 nodes (its others: a 20-node test model "test", XYPPX with 5, M1 with 1).
const std::vector<std::pair<std::string, std::string>>& hmmer_example_families();

struct HomologyConfig {
  std::string path;              // empty: hmmer_example_families(); else a .hmm file or a folder of .hmm(.gz) files
  std::vector<std::string> families;  // names to keep, in class order (empty: all, in the order found)
  int32_t window = 64;
  int64_t train_size = 9 * 400, val_size = 9 * 50, test_size = 9 * 100;
  uint64_t seed = 0;
};

// The profile HMMs of the config, in class order.
std::vector<ProfileHmm> homology_families(const HomologyConfig& config);
TaskData make_homology(const HomologyConfig& config);
// One split from given families (the tests build small ones), `size` / families examples of each, interleaved.
Dataset homology_dataset(const std::vector<ProfileHmm>& families, int64_t size, int32_t window, uint64_t seed,
                         const std::string& name);

}  // namespace dl::tasks
