// Trains an MLP on scikit-learn's 8x8 digits (1,797 images) and prints the test accuracy.
// The data ships with Debian's python3-sklearn as digits.csv.gz: 64 pixel columns, then the label.
#include <cstdio>

#include "runtime/ember.h"

namespace F = ember::nn::functional;

namespace {
const char* kDigitsPath = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
}

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : kDigitsPath;
  ember::manual_seed(0);
  ember::Tensor table = ember::data::read_csv(path);  // [1797, 65] float32
  const int64_t rows = table.size(0);

  // A fixed shuffled split: 80% train, 20% test.
  ember::Tensor order = ember::from_vector(ember::data::random_permutation(rows, 1234, 0));
  ember::Tensor shuffled = ember::index_select(table, 0, order);
  ember::Tensor pixels = ember::div(shuffled.slice(1, 0, 64), 16.0).contiguous();  // pixels are 0..16
  ember::Tensor labels = shuffled.select(1, 64).to(ember::kInt64);
  const int64_t train_rows = rows * 4 / 5;
  ember::Tensor x_train = pixels.slice(0, 0, train_rows), y_train = labels.slice(0, 0, train_rows);
  ember::Tensor x_test = pixels.slice(0, train_rows, rows), y_test = labels.slice(0, train_rows, rows);

  auto model = ember::nn::Sequential(ember::nn::Linear(64, 128), ember::nn::ReLU(), ember::nn::Linear(128, 10));
  ember::optim::Adam opt(model->parameters(), {.lr = 3e-3});
  ember::data::DataLoader loader(ember::data::TensorDataset(x_train, y_train), {.batch_size = 32, .shuffle = true});
  for (int epoch = 0; epoch < 30; ++epoch) {
    double total = 0.0;
    int batches = 0;
    for (auto& [x, y] : loader) {
      opt.zero_grad();
      auto loss = F::cross_entropy(model->forward(x), y);
      loss.backward();
      opt.step();
      total += loss.item();
      ++batches;
    }
    if (epoch % 5 == 4) std::printf("epoch %2d  train loss %.4f\n", epoch + 1, total / batches);
  }

  ember::NoGradGuard no_grad;
  model->eval();
  ember::Tensor predicted = ember::argmax(model->forward(x_test), 1);
  const double accuracy = ember::mean(ember::eq(predicted, y_test).to(ember::kFloat32)).item();
  std::printf("test accuracy %.2f%% (%lld test images)\n", accuracy * 100.0, static_cast<long long>(rows - train_rows));
  return 0;
}
