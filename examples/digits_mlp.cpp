// Trains an MLP on scikit-learn's 8x8 digits (1,797 images) and prints the test accuracy
// (data, model, step and loop: digits.h).
//   digits_mlp [digits.csv[.gz]]
#include <cstdio>

#include "examples/digits.h"
#include "runtime/ember.h"

int main(int argc, char** argv) try {
  ember::manual_seed(0);
  const digits::Split data = digits::load(argc > 1 ? argv[1] : digits::default_path());
  digits::Mlp mlp;
  digits::train(data, [&](const ember::Tensor& x, const ember::Tensor& y) { return mlp.step(x, y); });
  std::printf("test accuracy %.2f%% (%lld test images)\n", digits::test_accuracy(mlp.model, data) * 100.0,
              static_cast<long long>(data.x_test.size(0)));
  return 0;
} catch (const std::exception& error) {
  // A missing or malformed data file is the user's to fix: the message, not an abort.
  std::fprintf(stderr, "digits_mlp: %s\n", error.what());
  return 1;
}
