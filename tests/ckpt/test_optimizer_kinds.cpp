// Checkpoints of runs trained with RMSprop and Adagrad: the optimizer's state is saved under
// PyTorch's names ("optimizer.tensors.state.0.square_avg") and a fresh run restored from it
// trains on bit for bit as the saved one does.
#include <doctest/doctest.h>

#include <memory>

#include "ckpt/reader.h"
#include "ckpt/training_state.h"
#include "runtime/ember.h"
#include "tests/ckpt/helpers.h"

namespace ember::ckpt::test_optimizer_kinds {
namespace {

template <typename Optimizer>
struct Run {
  nn::Sequential model{nullptr};
  std::unique_ptr<Optimizer> optimizer;
  TrainingState state;

  Run(uint64_t seed, const typename Optimizer::Options& options) {
    manual_seed(seed);
    model = nn::Sequential(nn::Linear(4, 3), nn::Tanh(), nn::Linear(3, 2));
    optimizer = std::make_unique<Optimizer>(model->parameters(), options);
    state = {.model = model.ptr().get(), .optimizer = optimizer.get()};
  }
  std::vector<float> train(int steps) {
    std::vector<float> losses;
    for (int step = 0; step < steps; ++step) {
      manual_seed(700 + static_cast<uint64_t>(state.step));
      optimizer->zero_grad();
      const Tensor loss = model->forward(randn({5, 4})).pow(2).mean();
      loss.backward();
      optimizer->step();
      losses.push_back(loss.item<float>());
      ++state.step;
    }
    return losses;
  }
};

template <typename Optimizer>
void check_resumes(const typename Optimizer::Options& options, const char* buffer) {
  testing::TempDir root;
  SingleRank single;
  Run<Optimizer> saved(3, options);
  saved.train(3);
  save_training_state(single, saved.state, {.root = root.path(), .name = step_name(3)});
  const CheckpointReader reader(root / step_name(3));
  CHECK(reader.entry(std::string("optimizer.tensors.state.0.") + buffer).is_tensor());
  CHECK(std::get<double>(reader.value("optimizer.scalars.state.0.step")) == 3.0);

  Run<Optimizer> fresh(4, options);  // other initial values
  load_training_state(single, root / step_name(3), fresh.state);
  CHECK(fresh.state.step == 3);
  CHECK(fresh.train(3) == saved.train(3));
  const std::vector<Tensor> expected = saved.model->parameters(), actual = fresh.model->parameters();
  for (size_t i = 0; i < expected.size(); ++i) CHECK(testing::same_bytes(actual[i], expected[i]));
  for (const auto& [key, tensor] : saved.optimizer->state_dict().tensors) {
    INFO(key);
    CHECK(testing::same_bytes(fresh.optimizer->state_dict().tensors[key], tensor));
  }
}

}  // namespace

TEST_CASE("checkpoint: an RMSprop run with momentum and centering restores and trains on alike") {
  check_resumes<optim::RMSprop>({.lr = 0.01, .weight_decay = 0.01, .momentum = 0.9, .centered = true}, "grad_avg");
}

TEST_CASE("checkpoint: an Adagrad run restores and trains on alike, its decayed lr included") {
  check_resumes<optim::Adagrad>({.lr = 0.1, .lr_decay = 0.2, .initial_accumulator_value = 0.1}, "sum");
}

}  // namespace ember::ckpt::test_optimizer_kinds
