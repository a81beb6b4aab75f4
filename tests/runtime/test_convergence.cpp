// Convergence on real data: an MLP trained on scikit-learn's digits must reach >= 95% accuracy
// on held-out images.
#include <doctest/doctest.h>

#include "../digits_data.h"
#include "runtime/ember.h"

namespace test_convergence {

using namespace ember;

TEST_CASE("an MLP reaches at least 95% test accuracy on the digits data set") {
  manual_seed(7);
  const testing::DigitsSplit digits = testing::load_digits(99);

  auto model = nn::Sequential(nn::Linear(64, 128), nn::ReLU(), nn::Linear(128, 10));
  optim::Adam optimizer(model->parameters(), {.lr = 3e-3});
  data::DataLoader loader(data::TensorDataset(digits.x_train, digits.y_train),
                          {.batch_size = 32, .shuffle = true, .num_workers = 1, .seed = 3});
  const testing::EpochLosses losses = testing::train_epochs(model, optimizer, loader, 25);
  CHECK(losses.last < losses.first / 10);

  const double accuracy = testing::test_accuracy(model, digits);
  MESSAGE("digits test accuracy: " << accuracy);
  CHECK(accuracy >= 0.95);
}

}  // namespace test_convergence
