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
// seed; then both losses are trained on the seeds (a seed draws the initialisation, the batch order and the Genz
// draws; the data are fixed). Reported on the test split: accuracy, NLL and ECE (15 equal-width bins of the max
// softmax probability) of softmax(logits) as they are, and after temperature scaling fitted on the validation split
// (EXACT's logits have no probabilistic scale of their own, so the scaled figures are the fair calibration
// comparison); mean +- SE over seeds, the paired EXACT - CE accuracy difference, the whole selection grid, and
// test-accuracy-vs-step curves (the curve is drawn, never used to choose).
//
// The study is an experiment on the harness (apps/common/experiment.h), axes task (mixture, fashion) x arm (ce,
// exact), seeds:
//   studies exact run  [--preset default|large|FILE] [--tasks mixture] [--arms ce,exact] [--seeds 0-4]
//                      [--set lrs=0.001,0.003].. [--resume] [--jobs 2] [--threads 1] [--quiet] [--out DIR]
//   studies exact cell --task mixture --arm exact [--seed 0] ...
//   studies exact list
// A cell (task, arm, seed) first reads the arm's selection grid - every lr (x sigma mode x margin for EXACT) trained
// on selection_seed and scored on the validation split - from <out>/selection/<task>/<arm>/ (selection.h: trained
// there once, by the first cell that needs it), then trains the chosen setting on its seed; both on run_phase, with
// checkpoints every eval_every steps. The old form `studies exact --seeds 5 --lrs 0.001,0.01 --no-grad-norm` still
// runs: an option first means `run`, --seeds N is a count, the other flags are `--set` (exact_legacy_flags).
// Output: <out>/results.{md,json} (the table, the selection grid as its note), <out>/plots/curve_<task>.{dat,gp,png}.
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "apps/common/experiment.h"
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
  std::string loss = "ce";  // "ce" or "exact"
  double lr = 3e-3;
  double margin = INFINITY;  // EXACT only
  bool learn_sigma = false;  // EXACT: sigma = exp(log_sigma), log_sigma = 0 at the start; else sigma = 1
  bool grad_norm = true;     // EXACT: nn::GradientNormalizer between backward and the step
  int genz_samples = 16;     // EXACT, C > 3
};

struct ExactRun {
  double val_acc = 0, val_nll = 0;                         // the validation split (what the grid keeps)
  double test_acc = 0, test_nll = 0, test_ece = 0;         // softmax(logits) as they are
  double temperature = 1, test_nll_t = 0, test_ece_t = 0;  // after temperature scaling fitted on val
  double sigma = 1;                                        // EXACT's sigma at the end
  std::vector<dl::harness::CurvePoint> curve;              // accuracy: the test accuracy every eval_every steps
};

// One training run on run_phase, phase "train" in ctx.dir (checkpoints every `checkpoint_every` steps and at the end;
// --resume continues from them): `steps` Adam steps of `batch` rows, the test accuracy on the curve every eval_every.
struct ExactBudget {
  int steps = 1500, batch = 128, eval_every = 100, checkpoint_every = 100;
};
ExactRun train_exact_arm(const ExactTask& task, const ExactArm& arm, int seed, const ExactBudget& budget,
                         const dl::harness::RunContext& ctx);

// Expected calibration error with `bins` equal-width bins of the max probability: sum_b |B_b| / N |acc_b - conf_b|.
double expected_calibration_error(const dl::Tensor& probs, const dl::Tensor& labels, int bins = 15);

// One cell's settings: the preset's defaults, then --set. The axes fill task and arm.
struct ExactConfig {
  std::string task = "mixture", arm = "ce";
  int seed = 0;
  int selection_seed = 100;  // the seed the grid is run on (distinct from the reported seeds)
  std::string lrs = "0.0001,0.0003,0.001,0.003";
  std::string margins = "none,1,3";  // EXACT's margins to select from; "none" (or 0): no margin
  std::string sigma_modes = "fixed,learned";
  int steps = 1500, fashion_steps = 1500, batch = 128, eval_every = 100;
  int mixture_train = 4000, mixture_val = 1000, mixture_test = 5000;
  double label_noise = 0.2;
  int fashion_train = 6000, fashion_val = 2000, fashion_test = 5000;
  std::string fashion_dir;
  int genz_samples = 16;
  bool grad_norm = true;
  template <class C, class F> static void fields(C& c, F&& f) {
    f("task", c.task), f("arm", c.arm), f("seed", c.seed), f("selection_seed", c.selection_seed), f("lrs", c.lrs);
    f("margins", c.margins), f("sigma_modes", c.sigma_modes), f("steps", c.steps), f("fashion_steps", c.fashion_steps);
    f("batch", c.batch), f("eval_every", c.eval_every), f("mixture_train", c.mixture_train);
    f("mixture_val", c.mixture_val), f("mixture_test", c.mixture_test), f("label_noise", c.label_noise);
    f("fashion_train", c.fashion_train), f("fashion_val", c.fashion_val), f("fashion_test", c.fashion_test);
    f("fashion_dir", c.fashion_dir), f("genz_samples", c.genz_samples), f("grad_norm", c.grad_norm);
  }
  std::vector<double> lr_list() const;      // `lrs` parsed (a ConfigError names a bad item)
  std::vector<double> margin_list() const;  // `margins` parsed, "none" and 0 as INFINITY
  std::vector<std::string> sigma_list() const;
  int task_steps() const { return task == "fashion" ? fashion_steps : steps; }
  // The arms of the selection grid in the order they are tried: every lr, and for EXACT every sigma mode and margin.
  std::vector<ExactArm> grid() const;
  void validate() const;  // a ConfigError naming the field
};

dl::harness::Experiment exact_experiment();
struct LegacyFlags;
const LegacyFlags& exact_legacy_flags();  // the flags of the command line before the harness (cli.h)

}  // namespace studies
