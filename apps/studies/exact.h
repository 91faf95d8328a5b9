// apps/studies/exact.h - `studies exact`: does training the expected accuracy (EXACT, Karpukhin et al. 2022,
// nn/exact_loss.h) beat cross-entropy on accuracy, and what does it do to calibration?
//
// The same small MLP (in -> hidden -> ReLU -> C) is trained with cross-entropy (CE) and with EXACT (sigma fixed at 1
// or learned as exp(log_sigma), a margin, gradient normalisation, fresh Genz draws every step) by Adam at a constant
// learning rate, on two tasks built here:
//   mixture  a 2-D Gaussian mixture, C = 4 classes of 2 components each (std 0.4) at seeded centres in [-3, 3]^2;
//            `label_noise` of the labels of every split replaced by another class at random (the test split too, so
//            that calibration is measured on the distribution the temperature was fitted on). Synthetic.
//   fashion  Fashion-MNIST (Debian dataset-fashion-mnist, tasks/image.h): seeded random train / validation subsets of
//            the 60k training images, the first `test` of the 10k test images; pixels / 255, standardised. C = 10
//            (EXACT's Genz path, 9 dimensions). A subset stand-in for the paper's image sets (it used CIFAR etc.).
// Settings: each loss's lr (and EXACT's margin and sigma mode) are chosen by validation accuracy on one selection
// seed; then both losses are trained on `seeds` seeds (a seed draws the initialisation, the batch order and the Genz
// draws; the data are fixed). Reported on the test split: accuracy, NLL and ECE (15 equal-width bins of the max
// softmax probability) of softmax(logits) as they are, and after temperature scaling fitted on the validation split
// (EXACT's logits have no probabilistic scale of their own, so the scaled figures are the fair calibration
// comparison); mean +- SE over seeds, the paired EXACT - CE accuracy difference, the whole selection grid, and
// accuracy-vs-step curves.
// Output: <out>/exact.{md,json}, <out>/plots/curve_<task>.{dat,gp,png}.
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace studies {

struct ExactTask {
  std::string name;
  int64_t classes = 0;
  dl::Tensor x_train, x_val, x_test;  // (N, F) float32
  dl::Tensor y_train, y_val, y_test;  // (N) int64
  int hidden = 64;
};

// The tasks above. fashion_dir empty: /usr/share/datasets/fashion-mnist.
ExactTask make_mixture_task(int64_t n_train, int64_t n_val, int64_t n_test, double label_noise, uint64_t seed = 0);
ExactTask make_fashion_task(int64_t n_train, int64_t n_val, int64_t n_test, const std::string& fashion_dir = "");

struct ExactArm {
  std::string loss = "ce";   // "ce" or "exact"
  double lr = 3e-3;
  double margin = INFINITY;  // EXACT only
  bool learn_sigma = false;  // EXACT: sigma = exp(log_sigma), log_sigma = 0 at the start; else sigma = 1
  bool grad_norm = true;     // EXACT: nn::GradientNormalizer between backward and the step
  int genz_samples = 16;     // EXACT, C > 3
};

struct ExactRun {
  double val_acc = 0, test_acc = 0, test_nll = 0, test_ece = 0;  // softmax(logits) as they are
  double temperature = 1, test_nll_t = 0, test_ece_t = 0;        // after temperature scaling fitted on val
  double sigma = 1;                                              // EXACT's sigma at the end
  std::vector<int> steps;                                        // the curve: test accuracy every eval_every steps
  std::vector<double> curve;
};

ExactRun train_exact_arm(const ExactTask& task, const ExactArm& arm, int seed, int steps, int batch, int eval_every);

// Expected calibration error with `bins` equal-width bins of the max probability: sum_b |B_b| / N |acc_b - conf_b|.
double expected_calibration_error(const dl::Tensor& probs, const dl::Tensor& labels, int bins = 15);

struct ExactStudyOptions {
  std::vector<std::string> tasks = {"mixture", "fashion"};
  int seeds = 5;
  int selection_seed = 100;  // the seed the grid is run on (distinct from the reported seeds 0..seeds-1)
  std::vector<double> lrs = {1e-4, 3e-4, 1e-3, 3e-3};
  std::vector<double> margins = {INFINITY, 1.0, 3.0};
  int steps = 1500, batch = 128, eval_every = 100;
  int fashion_steps = 1500;
  int64_t mixture_train = 4000, mixture_val = 1000, mixture_test = 5000;
  double label_noise = 0.2;
  int64_t fashion_train = 6000, fashion_val = 2000, fashion_test = 5000;
  std::string fashion_dir;
  int genz_samples = 16;
  std::vector<std::string> sigma_modes = {"fixed", "learned"};  // EXACT's sigma: 1, or exp(log_sigma) learned
  bool grad_norm = true;
  std::string out = "runs/studies/exact";
};

void run_exact_study(const ExactStudyOptions& o);

}  // namespace studies
