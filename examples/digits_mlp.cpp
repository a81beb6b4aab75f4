// Trains an MLP on scikit-learn's 8x8 digits (1,797 images) and prints the test accuracy
// (data, model and loop: digits.h).
#include <cstdio>

#include "examples/digits.h"
#include "runtime/ember.h"

namespace F = ember::nn::functional;

int main(int argc, char** argv) {
  ember::manual_seed(0);
  const digits::Split data = digits::load(argc > 1 ? argv[1] : digits::kPath);
  ember::nn::Sequential model = digits::mlp();
  ember::optim::Adam opt(model->parameters(), {.lr = 3e-3});
  digits::train(data, [&](const ember::Tensor& x, const ember::Tensor& y) {
    opt.zero_grad();
    auto loss = F::cross_entropy(model->forward(x), y);
    loss.backward();
    opt.step();
    return loss;
  });
  std::printf("test accuracy %.2f%% (%lld test images)\n", digits::test_accuracy(model, data) * 100.0,
              static_cast<long long>(data.x_test.size(0)));
  return 0;
}
