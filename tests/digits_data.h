// scikit-learn's 8x8 digits as the convergence tests use them (installed by the test command's
// set-up with python3-sklearn): a fixed shuffled split, 1,437 training and 360 held-out images,
// pixels scaled to 0..1.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "runtime/ember.h"

namespace ember::testing {

// Debian's python3-sklearn location; EMBER_DIGITS_PATH overrides it where scikit-learn comes from
// pip instead (the GPU machine's tools/gpu_check.sh sets it).
inline std::string digits_path() {
  const char* override_path = std::getenv("EMBER_DIGITS_PATH");
  if (override_path != nullptr && override_path[0] != '\0') return override_path;
  return "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
}

struct DigitsSplit {
  Tensor x_train, y_train, x_test, y_test;
};

// The split shuffled by `permutation_seed`.
inline DigitsSplit load_digits(uint64_t permutation_seed) {
  const std::string path = digits_path();
  REQUIRE_MESSAGE(std::filesystem::exists(path), "scikit-learn's digits.csv.gz is missing: " << path);
  Tensor table = data::read_csv(path);
  REQUIRE(table.sizes() == Dims{1797, 65});
  Tensor order = from_vector(data::random_permutation(table.size(0), permutation_seed, 0));
  Tensor shuffled = index_select(table, 0, order);
  Tensor pixels = div(shuffled.slice(1, 0, 64), 16.0).contiguous();  // pixels are 0..16
  Tensor labels = shuffled.select(1, 64).to(kInt64);
  constexpr int64_t kTrainRows = 1437;  // 80%
  return {pixels.slice(0, 0, kTrainRows), labels.slice(0, 0, kTrainRows), pixels.slice(0, kTrainRows, 1797),
          labels.slice(0, kTrainRows, 1797)};
}

// Trains `model` for `epochs` passes over `loader` (zero_grad, cross_entropy, backward, step) and
// returns the first and the last pass's mean loss, for the convergence tests' "the loss fell" check.
struct EpochLosses {
  double first = 0.0;
  double last = 0.0;
};
inline EpochLosses train_epochs(nn::Sequential& model, optim::Optimizer& optimizer, data::DataLoader& loader,
                                int epochs) {
  EpochLosses losses;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    double total = 0.0;
    int batches = 0;
    for (auto& [x, y] : loader) {
      optimizer.zero_grad();
      Tensor loss = cross_entropy(model->forward(x), y);
      loss.backward();
      optimizer.step();
      total += loss.item();
      ++batches;
    }
    (epoch == 0 ? losses.first : losses.last) = total / batches;
  }
  return losses;
}

// The share of `model`'s predictions on the held-out images that are right (eval mode, no grad).
inline double test_accuracy(nn::Sequential& model, const DigitsSplit& digits) {
  NoGradGuard no_grad;
  model->eval();
  Tensor predicted = argmax(model->forward(digits.x_test), 1);
  const double accuracy = mean(eq(predicted, digits.y_test).to(kFloat32)).item();
  model->train();
  return accuracy;
}

}  // namespace ember::testing
