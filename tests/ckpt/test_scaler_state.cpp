// The loss scaler's slot of a training state: saved as "scaler.<key>" float64 values, restored
// exactly, and rolled back with the rest when a restore fails.
#include <doctest/doctest.h>

#include "ckpt/reader.h"
#include "ckpt/training_state.h"
#include "runtime/ember.h"
#include "tests/ckpt/helpers.h"

namespace ember::ckpt::test_scaler_state {

TEST_CASE("training state: the loss scaler round-trips as scaler.<key> values") {
  testing::TempDir root;
  SingleRank single;
  amp::GradScaler scaler({.init_scale = 1024.0, .growth_interval = 7});
  Tensor param = from_vector<float>({1.5f, -2.0f}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 0.1});
  for (int step = 0; step < 3; ++step) {  // three clean steps: growth tracker 3
    optimizer.zero_grad();
    scaler.scale(sum(mul(param, param))).backward();
    scaler.step(optimizer);
    scaler.update();
  }
  scaler.update(512.0);
  TrainingState saved{.scaler = &scaler, .step = 3};
  save_training_state(single, saved, {.root = root.path(), .name = "step_000000003"});

  const CheckpointReader reader(root / "step_000000003");
  CHECK(std::get<double>(reader.value("scaler.scale")) == 512.0);
  CHECK(std::get<double>(reader.value("scaler._growth_tracker")) == 3.0);
  CHECK(std::get<double>(reader.value("scaler.growth_interval")) == 7.0);

  amp::GradScaler restored;
  TrainingState target{.scaler = &restored};
  load_training_state(single, root / "step_000000003", target);
  CHECK(restored.get_scale() == 512.0);
  CHECK(restored.get_growth_tracker() == 3);
  CHECK(restored.get_growth_interval() == 7);
  CHECK(restored.get_growth_factor() == 2.0);

  // A checkpoint without scaler entries is refused for a run that has a scaler, and nothing changes.
  TrainingState plain{.step = 1};
  save_training_state(single, plain, {.root = root.path(), .name = "step_000000001"});
  amp::GradScaler untouched({.init_scale = 64.0});
  TrainingState refusing{.scaler = &untouched, .step = 9};
  CHECK_THROWS_WITH_AS(load_training_state(single, root / "step_000000001", refusing),
                       doctest::Contains("GradScaler::load_state_dict: the state is empty"), Error);
  CHECK(untouched.get_scale() == 64.0);
  CHECK(refusing.step == 9);
}

}  // namespace ember::ckpt::test_scaler_state
