// Resume: train K steps, save, restore in a NEW process, continue: the losses are bit-identical
// to an uninterrupted run at the same world size, and after resharding 2 -> 3 ranks. A restore
// that fails leaves the whole training state (model, optimizer, scheduler, loader, RNG) unchanged.
#include <doctest/doctest.h>

#include <cstdio>
#include <sstream>

#include "ckpt/reader.h"
#include "ckpt/training_state.h"
#include "runtime/ember.h"
#include "tests/ckpt/helpers.h"

namespace ember::ckpt::test_resume {
namespace {

std::vector<std::string> run_helper(const std::string& mode, const std::filesystem::path& root,
                                    int world, int steps) {
  const std::string command = fmt::format("{} {} {} {} {}", EMBER_CKPT_RESUME_HELPER, mode,
                                          root.string(), world, steps);
  std::FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::vector<std::string> losses;
  char line[128];
  while (std::fgets(line, sizeof line, pipe) != nullptr) losses.emplace_back(line);
  REQUIRE(::pclose(pipe) == 0);
  REQUIRE(losses.size() == static_cast<size_t>(steps));
  return losses;
}

TEST_CASE("resume in a new process: losses bit-identical to an uninterrupted run") {
  const std::vector<std::string> straight = run_helper("straight", "/nonexistent", 2, 14);
  for (const int resume_world : {2, 3}) {
    CAPTURE(resume_world);
    testing::TempDir root;
    const std::vector<std::string> first = run_helper("save", root.path(), 2, 9);
    const std::vector<std::string> second = run_helper("resume", root.path(), resume_world, 5);
    CHECK(std::equal(first.begin(), first.end(), straight.begin()));
    // Step 9 crosses an epoch boundary of the loader (200 samples, batch 32: 7 batches per epoch).
    CHECK(std::equal(second.begin(), second.end(), straight.begin() + 9));
    const CheckpointReader reader(root / step_name(9));
    CHECK(std::get<int64_t>(reader.value("train.step")) == 9);
    CHECK(reader.entry("optimizer.tensors.state.0.exp_avg").is_tensor());
    CHECK(reader.entry("rng.cpu").tensor().shape == Dims{2, 2});
  }
}

struct SmallRun {
  nn::Sequential model{nullptr};
  std::unique_ptr<optim::Adam> optimizer;
  std::unique_ptr<optim::StepLR> scheduler;
  Generator generator{5};
  TrainingState state;

  explicit SmallRun(int64_t hidden) {
    manual_seed(3);
    model = nn::Sequential(nn::Linear(4, hidden), nn::ReLU(), nn::Linear(hidden, 2));
    optimizer = std::make_unique<optim::Adam>(model->parameters());
    scheduler = std::make_unique<optim::StepLR>(*optimizer, 2, 0.5);
    state = {.model = model.ptr().get(), .optimizer = optimizer.get(), .scheduler = scheduler.get(),
             .generators = {{"cpu", &generator}}, .step = 0, .config = "small"};
    const Tensor x = randn({8, 4});
    for (int step = 0; step < 3; ++step) {
      optimizer->zero_grad();
      model(x).pow(2).mean().backward();
      optimizer->step();
      scheduler->step();
      generator.next_word();
      ++state.step;
    }
  }
};

TEST_CASE("a failed restore leaves the model, optimizer, scheduler and RNG untouched") {
  testing::TempDir root;
  SingleRank single;
  SmallRun saved(6);
  save_training_state(single, saved.state, {.root = root.path(), .name = "step_000000003"});

  // A model of another width: staging refuses it before anything changes.
  SmallRun wider(7);
  const Tensor before = testing::byte_clone(wider.model->parameters()[0]);
  const GeneratorState rng_before = wider.generator.get_state();
  CHECK_THROWS_WITH_AS(load_training_state(single, root / "step_000000003", wider.state),
                       doctest::Contains("model entry '0.weight' is float32 [6, 4], the model's is float32 [7, 4]"),
                       Error);
  CHECK(testing::same_bytes(wider.model->parameters()[0], before));
  CHECK(wider.generator.get_state() == rng_before);
  CHECK(wider.state.step == 3);

  // Same model, but an optimizer with another parameter-group layout: refused after the model was
  // already written, so the model must be rolled back.
  SmallRun regrouped(6);
  regrouped.optimizer->add_param_group({regrouped.model->parameters()[0].detach().clone().requires_grad_()});
  const Tensor model_before = testing::byte_clone(regrouped.model->parameters()[2]);
  const double lr_before = regrouped.optimizer->get_lr(0);
  CHECK_THROWS_AS(load_training_state(single, root / "step_000000003", regrouped.state), Error);
  CHECK(testing::same_bytes(regrouped.model->parameters()[2], model_before));
  CHECK(regrouped.optimizer->get_lr(0) == lr_before);
  CHECK(regrouped.state.step == 3);

  // And the matching run restores.
  SmallRun fresh(6);
  fresh.generator.set_state({1, 1});
  load_training_state(single, root / "step_000000003", fresh.state);
  CHECK(fresh.generator.get_state() == saved.generator.get_state());
  for (size_t i = 0; i < saved.model->parameters().size(); ++i)
    CHECK(testing::same_bytes(fresh.model->parameters()[i], saved.model->parameters()[i]));
  CHECK(fresh.scheduler->get_last_lr() == saved.scheduler->get_last_lr());
}

}  // namespace
}  // namespace ember::ckpt::test_resume
