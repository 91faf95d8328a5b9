// apps/unargmaxable/unargmaxable.h - which classes of a softmax layer can never be its argmax (Grivas, Bogoychev,
// Lopez, ACL 2022, "Low-Rank Softmax Can Have Unargmaxable Classes in Theory but Rarely in Practice").
//
// A head scores C classes from a d-dimensional input: s = W x + b, W (C, d), b (C) or none. Class i is argmaxable when
// some x gives s_i > s_j for every j != i. With C <= d + 1 (and W of full rank) every class is; a low-rank head
// (C > d + 1, e.g. an LM head over a vocabulary larger than its width) can have classes no input selects - without
// bias exactly the rows of W inside the convex hull of the others (Cover 1967; Demeter et al. 2020).
//
// The check, per class i (the paper's, `andreasgrv/unargmaxable` stollen/__init__.py):
//   1. reflect (fast, can only say "argmaxable"): start at x = w_i; while j = argmax(W x + b) != i, reflect x across
//      the hyperplane where i and j tie: n = (w_i - w_j) / |w_i - w_j|, c = (b_i - b_j) / |w_i - w_j|,
//      x <- x - 2 (n.x + c) n; up to `patience` steps. A point found is a witness.
//   2. the exact LP (GLPK simplex) for the classes reflect did not settle - the largest ball inside class i's region
//      within the box |x_k| <= box:
//        maximise r  subject to  a_j.x + |a_j| r <= -beta_j  (j != i),  a_j = w_j - w_i,  beta_j = b_j - b_i,
//                                -box <= x_k <= box,  r >= 0
//      a ball wider than eps -> argmaxable, its centre x is a witness; otherwise (infeasible, or r <= eps: a region
//      too thin to hold a strict winner) -> unargmaxable within the box.
// Every witness is verified: argmax(W x + b) must be i, with s_i above the runner-up.
// Prevention (the paper's Appendix D): rows scaled to unit norm (no bias: every row a hull vertex), or
// b_i = -|w_i|^2 / 2 (argmax becomes the nearest row: every distinct row owns its Voronoi cell).
// What it is not: a statement about inputs a model can actually produce (x is any point of the box), nor a check of
// softmax probabilities (a class can be argmaxable yet never likely).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace unargmax {

struct Head {
  int64_t C = 0, d = 0;
  std::vector<double> W;  // (C, d) row-major
  std::vector<double> b;  // (C) or empty
  double w(int64_t i, int64_t k) const { return W[i * d + k]; }
  double bias(int64_t i) const { return b.empty() ? 0.0 : b[i]; }
};

struct Options {
  int patience = 2500;     // reflection steps per class
  double box = 100;        // |x_k| <= box for the LP (the paper's bounds)
  double eps = 1e-6;       // the smallest ball radius that counts as a region (above GLPK's tolerance 1e-7)
  bool exact_all = false;  // run the LP for every class, not only those reflect left open (to cross-check)
};

struct ClassResult {
  bool argmaxable = false;
  std::string decided_by;       // "reflect" or "lp"
  std::vector<double> witness;  // an x with argmax(W x + b) = i (empty when unargmaxable)
  double radius = 0;            // the LP's ball radius (0 when reflect decided)
};

struct Report {
  int64_t C = 0, d = 0;
  std::vector<ClassResult> classes;
  std::vector<int64_t> unargmaxable;  // class ids
  int64_t by_reflect = 0, by_lp = 0;
  double seconds = 0;
};

// The scores' argmax for input x and the gap to the runner-up (for verifying witnesses).
int64_t argmax_of(const Head& h, const std::vector<double>& x, double* margin = nullptr);
// Step 1 for one class: true and the witness when a point is found within `patience` reflections.
bool reflect_search(const Head& h, int64_t i, int patience, std::vector<double>* witness);
// Step 2 for one class: the Chebyshev-ball LP. Returns whether the region is non-empty; fills the centre and radius.
bool chebyshev_lp(const Head& h, int64_t i, const Options& o, std::vector<double>* centre, double* radius);
// Every class.
Report check_head(const Head& h, const Options& o = {});

Head unit_norm_rows(Head h);          // w_i / |w_i|, bias dropped
Head nearest_neighbour_bias(Head h);  // b_i = -|w_i|^2 / 2

// A head from a safetensors file: `weight` names a 2-D tensor (C, d), `bias` (optional) a 1-D tensor (C). An
// unknown name is an error listing the file's 2-D tensors; shapes that do not fit are named.
Head read_head(const std::string& path, const std::string& weight, const std::string& bias = "");
// "name [C, d], ..." for every 2-D tensor of a safetensors file ("none" when it has none).
std::string matrices_of(const std::string& path);

}  // namespace unargmax
