// A whole compiled training run on real data (scikit-learn's digits), written as a user would:
// dropout in the model, gradients clipped inside the step, a learning-rate schedule stepped
// inside it, a smaller last batch per epoch, and evaluation in between. The compiled run keeps
// one variant per batch shape, never falls back to eager, follows the eager run's losses and
// reaches the same >= 95% held-out accuracy.
#include <doctest/doctest.h>

#include <cmath>

#include "../digits_data.h"
#include "graph/compile.h"
#include "runtime/ember.h"

namespace test_compile_convergence {

using namespace ember;

namespace {

struct Run {
  nn::Sequential model;
  std::unique_ptr<optim::AdamW> optimizer;
  std::unique_ptr<optim::CosineAnnealingLR> scheduler;

  explicit Run(int64_t total_steps) {
    manual_seed(7);
    model = nn::Sequential(nn::Linear(64, 128), nn::ReLU(), nn::Dropout(0.1), nn::Linear(128, 10));
    optimizer = std::make_unique<optim::AdamW>(model->parameters(), optim::AdamWOptions{.lr = 4e-3, .weight_decay = 1e-4});
    scheduler = std::make_unique<optim::CosineAnnealingLR>(*optimizer, total_steps, 1e-4);
  }

  Tensor step(const Tensor& x, const Tensor& y) {
    optimizer->zero_grad();
    Tensor loss = nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    std::vector<Tensor> grads;
    for (const Tensor& parameter : model->parameters()) grads.push_back(parameter.grad());
    nn::utils::clip_grads_with_norm_(model->parameters(), 1.0, nn::utils::get_total_norm(grads));
    optimizer->step();
    scheduler->step();
    return loss;
  }
};

}  // namespace

TEST_CASE("compile: a digits training run with dropout, clipping and a schedule inside the step matches eager") {
  const testing::DigitsSplit digits = testing::load_digits(99);
  constexpr int kEpochs = 12;
  const int64_t batches_per_epoch = (digits.x_train.size(0) + 31) / 32;  // the last one holds 29 images
  Run eager(kEpochs * batches_per_epoch), compiled(kEpochs * batches_per_epoch);
  auto train_step = ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.step(x, y); });
  data::DataLoader loader(data::TensorDataset(digits.x_train, digits.y_train),
                          {.batch_size = 32, .shuffle = true, .seed = 3});
  double worst_relative = 0.0, first_epoch_loss = 0.0, last_epoch_loss = 0.0;
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    double total = 0.0;
    for (auto& [x, y] : loader) {
      // Dropout draws from the default generator: both runs start each step from the same state.
      const GeneratorState start = default_generator().get_state();
      const double expected = eager.step(x, y).item();
      default_generator().set_state(start);
      const double actual = train_step(x, y).item();
      worst_relative = std::max(worst_relative, std::abs(actual - expected) / std::abs(expected));
      total += actual;
    }
    (epoch == 0 ? first_epoch_loss : last_epoch_loss) = total / static_cast<double>(batches_per_epoch);
    if (epoch == kEpochs / 2) {  // evaluation mid-run must not disturb the compiled step
      CHECK(testing::test_accuracy(compiled.model, digits) > 0.8);
      testing::test_accuracy(eager.model, digits);
    }
  }
  MESSAGE("worst relative loss difference, compiled vs eager: " << worst_relative);
  CHECK(worst_relative <= 1e-4);
  CHECK_FALSE(train_step.state().fell_back_to_eager());
  CHECK(train_step.state().captures() == 2);  // batches of 32 and the last batch of 29
  CHECK(compiled.scheduler->last_epoch() == kEpochs * batches_per_epoch);
  CHECK(compiled.optimizer->get_lr(0) == eager.optimizer->get_lr(0));
  CHECK(last_epoch_loss < first_epoch_loss / 5);
  const double accuracy = testing::test_accuracy(compiled.model, digits);
  MESSAGE("compiled digits test accuracy: " << accuracy);
  CHECK(accuracy >= 0.95);
  CHECK(std::abs(accuracy - testing::test_accuracy(eager.model, digits)) <= 0.01);
}

}  // namespace test_compile_convergence
