// Convergence on real data: an MLP trained on scikit-learn's digits (installed by the test
// command's set-up with python3-sklearn) must reach >= 95% accuracy on held-out images.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "runtime/ember.h"

using namespace ember;

namespace {
// Debian's python3-sklearn location; EMBER_DIGITS_PATH overrides it where scikit-learn comes from
// pip instead (the GPU machine's tools/gpu_check.sh sets it).
std::string digits_path() {
  const char* override_path = std::getenv("EMBER_DIGITS_PATH");
  if (override_path != nullptr && override_path[0] != '\0') return override_path;
  return "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
}
}  // namespace

TEST_CASE("an MLP reaches at least 95% test accuracy on the digits data set") {
  const std::string path = digits_path();
  REQUIRE_MESSAGE(std::filesystem::exists(path), "scikit-learn's digits.csv.gz is missing: " << path);
  manual_seed(7);
  Tensor table = data::read_csv(path);
  REQUIRE(table.sizes() == Dims{1797, 65});
  Tensor order = from_vector(data::random_permutation(table.size(0), 99, 0));
  Tensor shuffled = index_select(table, 0, order);
  Tensor pixels = div(shuffled.slice(1, 0, 64), 16.0).contiguous();
  Tensor labels = shuffled.select(1, 64).to(kInt64);
  const int64_t train_rows = 1437;  // 80% train, 360 images held out
  Tensor x_test = pixels.slice(0, train_rows, 1797);
  Tensor y_test = labels.slice(0, train_rows, 1797);

  auto model = nn::Sequential(nn::Linear(64, 128), nn::ReLU(), nn::Linear(128, 10));
  optim::Adam optimizer(model->parameters(), {.lr = 3e-3});
  data::DataLoader loader(data::TensorDataset(pixels.slice(0, 0, train_rows), labels.slice(0, 0, train_rows)),
                          {.batch_size = 32, .shuffle = true, .num_workers = 1, .seed = 3});
  double first_epoch_loss = 0.0, last_epoch_loss = 0.0;
  for (int epoch = 0; epoch < 25; ++epoch) {
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
    (epoch == 0 ? first_epoch_loss : last_epoch_loss) = total / batches;
  }
  CHECK(last_epoch_loss < first_epoch_loss / 10);

  NoGradGuard no_grad;
  model->eval();
  Tensor predicted = argmax(model->forward(x_test), 1);
  const double accuracy = mean(eq(predicted, y_test).to(kFloat32)).item();
  MESSAGE("digits test accuracy: " << accuracy);
  CHECK(accuracy >= 0.95);
}
