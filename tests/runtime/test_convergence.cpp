// Convergence on real data: an MLP trained on scikit-learn's digits must reach >= 95% accuracy
// on held-out images.
#include <doctest/doctest.h>

#include "../digits_data.h"
#include "runtime/ember.h"

using namespace ember;

TEST_CASE("an MLP reaches at least 95% test accuracy on the digits data set") {
  manual_seed(7);
  const testing::DigitsSplit digits = testing::load_digits(99);

  auto model = nn::Sequential(nn::Linear(64, 128), nn::ReLU(), nn::Linear(128, 10));
  optim::Adam optimizer(model->parameters(), {.lr = 3e-3});
  data::DataLoader loader(data::TensorDataset(digits.x_train, digits.y_train),
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

  const double accuracy = testing::test_accuracy(model, digits);
  MESSAGE("digits test accuracy: " << accuracy);
  CHECK(accuracy >= 0.95);
}
