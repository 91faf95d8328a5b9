// apps/unargmaxable/unargmaxable.cpp - see unargmaxable.h.
#include "unargmaxable.h"

#include <glpk.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "tensor/safetensors.h"

namespace unargmax {

int64_t argmax_of(const Head& h, const std::vector<double>& x, double* margin) {
  double best = -std::numeric_limits<double>::infinity(), second = best;
  int64_t arg = -1;
  for (int64_t j = 0; j < h.C; j++) {
    double s = h.bias(j);
    for (int64_t k = 0; k < h.d; k++) s += h.w(j, k) * x[k];
    if (s > best) second = best, best = s, arg = j;
    else if (s > second) second = s;
  }
  if (margin) *margin = best - second;
  return arg;
}

// A witness counts when class i wins strictly (by more than rounding) and x lies in the box.
static bool verified(const Head& h, int64_t i, const std::vector<double>& x, double box) {
  for (double v : x)
    if (!(std::abs(v) <= box)) return false;
  double margin = 0;
  return argmax_of(h, x, &margin) == i && margin > 1e-12;
}

bool reflect_search(const Head& h, int64_t i, int patience, std::vector<double>* witness) {
  std::vector<double> x(h.W.begin() + i * h.d, h.W.begin() + (i + 1) * h.d), n(h.d);
  for (int it = 0; it < patience; it++) {
    double margin = 0;
    const int64_t j = argmax_of(h, x, &margin);
    if (j == i && margin > 1e-12) {
      if (witness) *witness = x;
      return true;
    }
    if (j == i) return false;  // a tie at the top: reflecting across the tie plane would not move x
    double norm = 0;
    for (int64_t k = 0; k < h.d; k++) n[k] = h.w(i, k) - h.w(j, k), norm += n[k] * n[k];
    norm = std::sqrt(norm);
    if (norm == 0) return false;  // identical rows: only the bias separates them, reflection cannot help
    double dot = (h.bias(i) - h.bias(j)) / norm;
    for (int64_t k = 0; k < h.d; k++) n[k] /= norm, dot += n[k] * x[k];
    for (int64_t k = 0; k < h.d; k++) x[k] -= 2 * dot * n[k];
  }
  return false;
}

bool chebyshev_lp(const Head& h, int64_t i, const Options& o, std::vector<double>* centre, double* radius) {
  // columns 1..d: x; column d + 1: r. Rows: one per j != i.
  glp_prob* lp = glp_create_prob();
  glp_set_obj_dir(lp, GLP_MAX);
  const int nrows = (int)h.C - 1, ncols = (int)h.d + 1;
  if (nrows > 0) glp_add_rows(lp, nrows);
  glp_add_cols(lp, ncols);
  for (int k = 1; k <= (int)h.d; k++) glp_set_col_bnds(lp, k, GLP_DB, -o.box, o.box);
  glp_set_col_bnds(lp, ncols, GLP_DB, 0.0, 1e6);  // r is bounded even where no row limits it
  glp_set_obj_coef(lp, ncols, 1.0);
  std::vector<int> ia(1), ja(1);
  std::vector<double> ar(1);
  int row = 0;
  for (int64_t j = 0; j < h.C; j++) {
    if (j == i) continue;
    row++;
    double norm = 0;
    for (int64_t k = 0; k < h.d; k++) {
      const double a = h.w(j, k) - h.w(i, k);
      norm += a * a;
      if (a != 0) ia.push_back(row), ja.push_back((int)k + 1), ar.push_back(a);
    }
    if (norm == 0) {  // the same row: only the biases decide, the same way for every x
      if (h.bias(i) <= h.bias(j)) {
        glp_delete_prob(lp);
        return false;  // j scores at least as high everywhere
      }
      glp_set_row_bnds(lp, row, GLP_FR, 0.0, 0.0);  // always satisfied
      continue;
    }
    ia.push_back(row), ja.push_back(ncols), ar.push_back(std::sqrt(norm));
    glp_set_row_bnds(lp, row, GLP_UP, 0.0, -(h.bias(j) - h.bias(i)));
  }
  glp_load_matrix(lp, (int)ia.size() - 1, ia.data(), ja.data(), ar.data());
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.presolve = GLP_ON;  // with presolve an infeasible problem is reported as such, not as a failed solve
  const int rc = glp_simplex(lp, &parm);
  bool ok = false;
  // the region counts when its largest ball is wider than eps: GLPK's own feasibility tolerance (1e-7) would let
  // an empty region through as a ball of radius ~0
  if (rc == 0 && glp_get_status(lp) == GLP_OPT && glp_get_col_prim(lp, ncols) > o.eps) {
    ok = true;
    if (centre) {
      centre->assign(h.d, 0.0);
      for (int k = 1; k <= (int)h.d; k++) (*centre)[k - 1] = glp_get_col_prim(lp, k);
    }
    if (radius) *radius = glp_get_col_prim(lp, ncols);
  } else if (rc != 0 && rc != GLP_ENOPFS && rc != GLP_ENODFS) {
    glp_delete_prob(lp);
    throw std::runtime_error("chebyshev_lp: GLPK's simplex failed on class " + std::to_string(i) + " (code " +
                             std::to_string(rc) + ")");
  }
  glp_delete_prob(lp);
  return ok;
}

Report check_head(const Head& h, const Options& o) {
  if (h.C < 1 || h.d < 1 || (int64_t)h.W.size() != h.C * h.d || (!h.b.empty() && (int64_t)h.b.size() != h.C))
    throw std::invalid_argument("check_head: W must hold C x d values and b C values (or none)");
  glp_term_out(GLP_OFF);
  const auto t0 = std::chrono::steady_clock::now();
  Report r;
  r.C = h.C, r.d = h.d;
  r.classes.resize(h.C);
  for (int64_t i = 0; i < h.C; i++) {
    ClassResult& c = r.classes[i];
    std::vector<double> x;
    if (!o.exact_all && reflect_search(h, i, o.patience, &x) && verified(h, i, x, o.box)) {
      c.argmaxable = true, c.decided_by = "reflect", c.witness = x, r.by_reflect++;
      continue;
    }
    double rad = 0;
    c.decided_by = "lp", r.by_lp++;
    if (chebyshev_lp(h, i, o, &x, &rad)) {
      if (!verified(h, i, x, o.box))
        throw std::runtime_error("check_head: the LP's centre for class " + std::to_string(i) + " (radius " +
                                 std::to_string(rad) +
                                 ") does not make it the argmax; the head is too ill-conditioned "
                                 "for this box and eps");
      c.argmaxable = true, c.witness = x, c.radius = rad;
    } else {
      r.unargmaxable.push_back(i);
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

Head unit_norm_rows(Head h) {
  for (int64_t i = 0; i < h.C; i++) {
    double n = 0;
    for (int64_t k = 0; k < h.d; k++) n += h.w(i, k) * h.w(i, k);
    n = std::sqrt(n);
    if (n > 0)
      for (int64_t k = 0; k < h.d; k++) h.W[i * h.d + k] /= n;
  }
  h.b.clear();
  return h;
}

Head nearest_neighbour_bias(Head h) {
  h.b.assign(h.C, 0.0);
  for (int64_t i = 0; i < h.C; i++)
    for (int64_t k = 0; k < h.d; k++) h.b[i] -= 0.5 * h.w(i, k) * h.w(i, k);
  return h;
}

static std::string matrices(const dl::TensorFile& f) {
  std::string s;
  for (auto& [n, t] : f.tensors)
    if (t.dim() == 2) s += (s.empty() ? "" : ", ") + n + " " + dl::shape_str(t.shape());
  return s.empty() ? std::string("none") : s;
}

std::string matrices_of(const std::string& path) { return matrices(dl::load_safetensors(path)); }

Head read_head(const std::string& path, const std::string& weight, const std::string& bias) {
  dl::TensorFile f = dl::load_safetensors(path);
  auto it = f.tensors.find(weight);
  if (it == f.tensors.end())
    throw std::invalid_argument(path + ": no tensor '" + weight + "' (its 2-D tensors: " + matrices(f) + ")");
  if (it->second.dim() != 2)
    throw std::invalid_argument(path + ": '" + weight + "' has shape " + dl::shape_str(it->second.shape()) +
                                "; a head's weight is (classes, features)");
  Head h;
  dl::Tensor w = it->second.to(dl::DType::f64).contiguous();
  h.C = w.size(0), h.d = w.size(1);
  h.W.assign(w.data<double>(), w.data<double>() + h.C * h.d);
  if (!bias.empty()) {
    auto bt = f.tensors.find(bias);
    if (bt == f.tensors.end()) throw std::invalid_argument(path + ": no tensor '" + bias + "' for the bias");
    if (bt->second.dim() != 1 || bt->second.size(0) != h.C)
      throw std::invalid_argument(path + ": bias '" + bias + "' has shape " + dl::shape_str(bt->second.shape()) + ", expected (" +
                                  std::to_string(h.C) + ") for the " + std::to_string(h.C) + " rows of '" + weight + "'");
    dl::Tensor b = bt->second.to(dl::DType::f64).contiguous();
    h.b.assign(b.data<double>(), b.data<double>() + h.C);
  }
  return h;
}

}  // namespace unargmax
