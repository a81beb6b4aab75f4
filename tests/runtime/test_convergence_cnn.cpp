// Convergence on real data with the convolutional layers: a small CNN (Conv2d, BatchNorm2d,
// MaxPool2d, AdaptiveAvgPool2d) trained on scikit-learn's 8x8 digits must reach >= 95% accuracy on
// held-out images, as the MLP of test_convergence.cpp does.
#include <doctest/doctest.h>

#include "../digits_data.h"
#include "runtime/ember.h"

namespace test_convergence_cnn {

using namespace ember;

namespace {

// set_num_threads for one scope. ctest runs two tests at once on this machine's two cores, and a
// parallel kernel's closing barrier spins while its partner thread waits for a core: this test's
// hundreds of small parallel kernels took 28 s that way against 1.5 s on one thread.
class ThreadCountScope {
 public:
  explicit ThreadCountScope(int threads) : before_(get_num_threads()) { set_num_threads(threads); }
  ~ThreadCountScope() { set_num_threads(before_); }
  ThreadCountScope(const ThreadCountScope&) = delete;
  ThreadCountScope& operator=(const ThreadCountScope&) = delete;

 private:
  int before_;
};

}  // namespace

TEST_CASE("a CNN (Conv2d, BatchNorm2d, MaxPool2d, AdaptiveAvgPool2d) reaches 95% test accuracy on the digits") {
  const ThreadCountScope one_thread(1);
  manual_seed(11);
  testing::DigitsSplit digits = testing::load_digits(99);
  // Each row of 64 pixels as a one-channel 8x8 image.
  digits.x_train = digits.x_train.reshape({-1, 1, 8, 8});
  digits.x_test = digits.x_test.reshape({-1, 1, 8, 8});

  auto model = nn::Sequential(nn::Conv2d(1, 16, 3, {.padding = 1}), nn::BatchNorm2d(16), nn::ReLU(),
                              nn::MaxPool2d(2),                                   // [N, 16, 4, 4]
                              nn::Conv2d(16, 32, 3, {.padding = 1}), nn::ReLU(),  // [N, 32, 4, 4]
                              nn::AdaptiveAvgPool2d(1), nn::Flatten(), nn::Linear(32, 10));
  optim::Adam optimizer(model->parameters(), {.lr = 3e-3});
  data::DataLoader loader(data::TensorDataset(digits.x_train, digits.y_train),
                          {.batch_size = 32, .shuffle = true, .num_workers = 1, .seed = 5});
  const testing::EpochLosses losses = testing::train_epochs(model, optimizer, loader, 25);
  CHECK(losses.last < losses.first / 5);

  const double accuracy = testing::test_accuracy(model, digits);  // eval mode: BatchNorm2d's estimates
  MESSAGE("digits test accuracy (CNN): " << accuracy);
  CHECK(accuracy >= 0.95);
}

}  // namespace test_convergence_cnn
