// apps/demo_mnist - the smallest end-to-end use of the framework: an MLP trained on Fashion-MNIST.
//
//   pixels (B, 784) / 255 -> Linear(784, H) -> GELU -> Dropout -> Linear(H, 10) -> cross entropy, AdamW
// Data: Debian's dataset-fashion-mnist (gz IDX in /usr/share/datasets/fashion-mnist), read by tasks/image.h.
// Prints the test accuracy (about 87-88% after 5 epochs); exits non-zero if it is below --min-acc.
#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>
#include <numeric>
#include <random>

#include "nn/layers.h"
#include "optim/adam.h"
#include "optim/schedule.h"
#include "tasks/image.h"

using namespace dl;

struct Mlp : nn::Module {
  std::shared_ptr<nn::Linear> fc1, fc2;
  std::shared_ptr<nn::Dropout> drop;
  Mlp(int hidden, double p, Generator& g) {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(784, hidden, g));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(hidden, 10, g));
    drop = register_module("drop", std::make_shared<nn::Dropout>(p, g));
  }
  std::string type_name() const override { return "Mlp"; }
  Var forward(const Var& x) { return fc2->forward(drop->forward(gelu(fc1->forward(x)))); }
};

// (indices) -> x (B, 784) in [0, 1], y (B)
static std::pair<Tensor, Tensor> make_batch(const tasks::Dataset& d, const std::vector<int64_t>& idx) {
  int64_t B = (int64_t)idx.size();
  Tensor x = Tensor::empty({B, 784}), y = Tensor::empty({B}, DType::i64);
  for (int64_t b = 0; b < B; b++) {
    const auto& e = d.examples[idx[b]];
    for (int i = 0; i < 784; i++) x.data<float>()[b * 784 + i] = e.tokens[i] / 255.0f;
    y.data<int64_t>()[b] = e.label;
  }
  return {x, y};
}

static double accuracy(Mlp& m, const tasks::Dataset& d) {
  NoGradGuard ng;
  m.eval();
  int64_t correct = 0, n = (int64_t)d.examples.size();
  for (int64_t s = 0; s < n; s += 1000) {
    std::vector<int64_t> idx(std::min<int64_t>(1000, n - s));
    std::iota(idx.begin(), idx.end(), s);
    auto [x, y] = make_batch(d, idx);
    Tensor pred = argmax(m.forward(Var(x)), 1);
    for (size_t i = 0; i < idx.size(); i++) correct += pred.data<int64_t>()[i] == y.data<int64_t>()[i];
  }
  m.train();
  return (double)correct / n;
}

int main(int argc, char** argv) {
  CLI::App app{"Fashion-MNIST MLP demo"};
  int epochs = 5, batch = 128, hidden = 256, seed = 0;
  double lr = 1e-3, min_acc = 0.0;
  std::string data_dir;
  app.add_option("--epochs", epochs)->capture_default_str();
  app.add_option("--batch", batch)->capture_default_str();
  app.add_option("--hidden", hidden)->capture_default_str();
  app.add_option("--lr", lr)->capture_default_str();
  app.add_option("--seed", seed)->capture_default_str();
  app.add_option("--data", data_dir, "IDX folder (default: Debian's dataset-fashion-mnist)");
  app.add_option("--min-acc", min_acc, "exit with status 1 if the test accuracy is below this");
  CLI11_PARSE(app, argc, argv);
  try {
    tasks::ImageTaskConfig ic;
    ic.dir = data_dir;
    ic.seed = (uint64_t)seed;
    tasks::TaskData data = tasks::make_fashion_mnist(ic);
    Generator g((uint64_t)seed);
    Mlp model(hidden, 0.1, g);
    optim::AdamW opt(model.parameters(), [&] {
      optim::AdamWOptions o;
      o.lr = lr;
      return o;
    }());
    int64_t n = (int64_t)data.train.examples.size(), steps_per_epoch = n / batch;
    optim::Schedule sched = optim::warmup_cosine(100, epochs * steps_per_epoch);
    std::mt19937_64 rng((uint64_t)seed);
    std::vector<int64_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    auto t0 = std::chrono::steady_clock::now();
    int64_t step = 0;
    for (int e = 0; e < epochs; e++) {
      std::shuffle(order.begin(), order.end(), rng);
      double loss_sum = 0;
      for (int64_t s = 0; s < steps_per_epoch; s++, step++) {
        std::vector<int64_t> idx(order.begin() + s * batch, order.begin() + (s + 1) * batch);
        auto [x, y] = make_batch(data.train, idx);
        optim::apply_schedule(opt, sched, step);
        Var loss = cross_entropy(model.forward(Var(x)), y);
        loss.backward();
        opt.step();
        opt.zero_grad();
        loss_sum += loss.item();
      }
      std::cout << "epoch " << e + 1 << ": train loss " << loss_sum / steps_per_epoch << ", val acc "
                << 100 * accuracy(model, data.val) << "%\n";
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double acc = accuracy(model, data.test);
    std::cout << "test accuracy " << 100 * acc << "% (" << model.num_parameters() << " parameters, " << secs << " s)\n";
    return acc >= min_acc ? 0 : 1;
  } catch (const std::exception& ex) {
    std::cerr << "demo_mnist: error: " << ex.what() << "\n";
    return 1;
  }
}
