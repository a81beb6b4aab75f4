// Shared by the digits examples: scikit-learn's 8x8 digits (1,797 images) split 80/20 in a fixed
// shuffled order, and the test accuracy of a model. The data ships with Debian's python3-sklearn
// as digits.csv.gz: 64 pixel columns (0..16), then the label.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "runtime/ember.h"

namespace digits {

// Debian's python3-sklearn location, unless EMBER_DIGITS_PATH names another copy (scikit-learn
// from pip keeps it inside its own package).
inline const char* default_path() {
  const char* given = std::getenv("EMBER_DIGITS_PATH");
  if (given != nullptr && given[0] != '\0') return given;
  return "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
}

struct Split {
  ember::Tensor x_train, y_train, x_test, y_test;
};

inline Split load(const char* path) {
  ember::Tensor table = ember::data::read_csv(path);  // [1797, 65] float32
  // Another CSV would fail deep in the slicing below, or (more columns) train on the wrong ones.
  ember::check(table.dim() == 2 && table.size(1) == 65 && table.size(0) >= 5,
               "digits: {} holds a table of shape {}; expected scikit-learn's digits.csv: 64 pixels and "
               "the label per row, 5 rows or more",
               path, table.sizes());
  const int64_t rows = table.size(0);
  // The split stays on the CPU, where the loader batches it; the training loop moves each batch.
  ember::Tensor order =
      ember::from_vector(ember::data::random_permutation(rows, 1234, 0), {rows}, {.device = ember::kCPU});
  ember::Tensor shuffled = ember::index_select(table, 0, order);
  ember::Tensor pixels = ember::div(shuffled.slice(1, 0, 64), 16.0).contiguous();  // pixels are 0..16
  ember::Tensor labels = shuffled.select(1, 64).to(ember::kInt64);
  const int64_t train_rows = rows * 4 / 5;
  return {pixels.slice(0, 0, train_rows), labels.slice(0, 0, train_rows), pixels.slice(0, train_rows, rows),
          labels.slice(0, train_rows, rows)};
}

// The examples' model, 64 pixels -> 128 (ReLU) -> 10 classes, with Adam and its training step.
struct Mlp {
  ember::nn::Sequential model;
  ember::optim::Adam opt;

  Mlp()
      : model(ember::nn::Linear(64, 128), ember::nn::ReLU(), ember::nn::Linear(128, 10)),
        opt(model->parameters(), ember::optim::AdamOptions{.lr = 3e-3}) {}

  ember::Tensor step(const ember::Tensor& x, const ember::Tensor& y) {
    opt.zero_grad();
    ember::Tensor loss = ember::nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    opt.step();
    return loss;
  }
};

// 30 epochs of shuffled batches of 32 through `step(x, y)`, which returns the batch's loss; prints
// the mean training loss every 5 epochs.
template <typename Step>
void train(const Split& split, Step&& step) {
  const ember::Device device = ember::default_device();  // where the model's parameters are
  ember::data::DataLoader loader(ember::data::TensorDataset(split.x_train, split.y_train),
                                 {.batch_size = 32, .shuffle = true});
  for (int epoch = 0; epoch < 30; ++epoch) {
    double total = 0.0;
    int batches = 0;
    for (auto& [x, y] : loader) {
      total += step(x.to(device), y.to(device)).item();
      ++batches;
    }
    if (epoch % 5 == 4) std::printf("epoch %2d  train loss %.4f\n", epoch + 1, total / batches);
  }
}

// The share of test images the model classifies right, in eval mode and without gradients.
inline double test_accuracy(ember::nn::Sequential& model, const Split& split) {
  ember::NoGradGuard no_grad;
  model->eval();
  const ember::Device device = ember::default_device();
  ember::Tensor predicted = ember::argmax(model->forward(split.x_test.to(device)), 1);
  return ember::mean(ember::eq(predicted, split.y_test.to(device)).to(ember::kFloat32)).item();
}

}  // namespace digits
