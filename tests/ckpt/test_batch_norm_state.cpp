// Checkpoints of a model holding nn::BatchNorm1d: its buffers (the running estimates and the 0-d
// int64 num_batches_tracked) are saved with the parameters, by one rank or split over two, and a
// fresh model restores them bit for bit and normalises as the saved one does in eval mode.
#include <doctest/doctest.h>

#include "ckpt/reader.h"
#include "ckpt/training_state.h"
#include "runtime/ember.h"
#include "tests/ckpt/helpers.h"

namespace ember::ckpt::test_batch_norm_state {
namespace {

nn::Sequential batch_norm_model(uint64_t seed) {
  manual_seed(seed);
  return nn::Sequential(nn::Linear(4, 5), nn::BatchNorm1d(5), nn::ReLU(), nn::Linear(5, 2));
}

// Three training forwards: the estimates move away from 0 and 1, the count reaches 3.
nn::Sequential trained_model() {
  nn::Sequential model = batch_norm_model(3);
  for (int step = 0; step < 3; ++step) model->forward(add(randn({6, 4}), 0.5));
  return model;
}

void check_restored(nn::Sequential& restored, nn::Sequential& saved) {
  const nn::StateDict expected = saved->state_dict();
  for (const auto& [key, tensor] : restored->state_dict()) {
    INFO(key);
    CHECK(testing::same_bytes(tensor, expected[key]));
  }
  CHECK(restored->at<nn::BatchNorm1dImpl>(1)->num_batches_tracked.to_vector<int64_t>() == std::vector<int64_t>{3});
  saved->eval();
  restored->eval();
  const Tensor x = randn({3, 4});
  CHECK(testing::same_bytes(restored->forward(x), saved->forward(x)));
}

TEST_CASE("checkpoint: BatchNorm1d's running estimates and num_batches_tracked restore bit for bit") {
  testing::TempDir root;
  SingleRank single;
  nn::Sequential saved = trained_model();
  save_training_state(single, {.model = saved.ptr().get()}, {.root = root.path(), .name = step_name(3)});
  const CheckpointReader reader(root / step_name(3));
  CHECK(reader.entry("model.1.running_var").tensor().shape == Dims{5});
  CHECK(reader.entry("model.1.num_batches_tracked").tensor().shape == Dims{});
  CHECK(reader.entry("model.1.num_batches_tracked").tensor().dtype == kInt64);

  nn::Sequential restored = batch_norm_model(4);
  TrainingState state{.model = restored.ptr().get()};
  load_training_state(single, root / step_name(3), state);
  check_restored(restored, saved);
}

TEST_CASE("checkpoint: BatchNorm1d's buffers saved by two ranks load on one") {
  testing::TempDir root;
  nn::Sequential saved = trained_model();
  run_ranks(2, [&](Coordinator& coordinator) {
    save_training_state(coordinator, {.model = saved.ptr().get()},
                        {.root = root.path(), .name = step_name(3), .durable = false});
  });
  SingleRank single;
  nn::Sequential restored = batch_norm_model(4);
  TrainingState state{.model = restored.ptr().get()};
  load_training_state(single, root / step_name(3), state);
  check_restored(restored, saved);
}

}  // namespace
}  // namespace ember::ckpt::test_batch_norm_state
