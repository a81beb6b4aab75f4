// The processes of the resume test. A small MLP trained with Adam, StepLR, a shuffling loader and a
// per-rank generator that scales each step's loss (so a wrong RNG restore changes the losses), on
// WORLD lockstep replicas. Prints rank 0's loss after each step as a hex float.
//   ckpt_resume_helper straight ROOT WORLD STEPS   train STEPS steps
//   ckpt_resume_helper save ROOT WORLD STEPS       train STEPS steps, save asynchronously
//   ckpt_resume_helper resume ROOT WORLD STEPS     restore the latest checkpoint, train STEPS more
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "ckpt/retention.h"
#include "ckpt/training_state.h"
#include "runtime/ember.h"

namespace {

using namespace ember;

// One replica: everything a rank trains with.
struct Replica {
  nn::Sequential model{nullptr};
  std::unique_ptr<optim::Adam> optimizer;
  std::unique_ptr<optim::StepLR> scheduler;
  std::unique_ptr<data::DataLoader> loader;
  Generator generator{0};
  ckpt::TrainingState state;

  Replica(const data::TensorDataset& dataset, uint64_t init_seed) : generator(1000) {
    manual_seed(init_seed);  // same seed on every rank: identical replicas
    model = nn::Sequential(nn::Linear(20, 32), nn::ReLU(), nn::Linear(32, 16), nn::ReLU(), nn::Linear(16, 4));
    optimizer = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions{.lr = 1e-2});
    scheduler = std::make_unique<optim::StepLR>(*optimizer, 3, 0.5);
    loader = std::make_unique<data::DataLoader>(dataset, data::LoaderOptions{.batch_size = 32, .shuffle = true, .seed = 7});
    state = {.model = model.ptr().get(), .optimizer = optimizer.get(), .scheduler = scheduler.get(),
             .loader = loader.get(), .generators = {{"cpu", &generator}}, .config = "{\"model\": \"mlp20\"}"};
  }

  double train_step() {
    // Each begin() delivers the next batch, starting the next epoch after the last one.
    const data::Batch& batch = *loader->begin();
    optimizer->zero_grad();
    const double jitter = 1.0 + 0.01 * generator.next_uniform();
    Tensor loss = cross_entropy(model(batch.data), batch.target) * jitter;
    loss.backward();
    optimizer->step();
    scheduler->step();
    ++state.step;
    return loss.item();
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: ckpt_resume_helper straight|save|resume ROOT WORLD STEPS\n");
    return 2;
  }
  const std::string mode = argv[1];
  const std::filesystem::path root = argv[2];
  const int world = std::atoi(argv[3]);
  const int steps = std::atoi(argv[4]);
  try {
    manual_seed(42);
    const data::TensorDataset dataset(randn({200, 20}), randint(0, 4, {200}));
    std::vector<std::unique_ptr<Replica>> replicas;
    // A resumed run starts from other weights: only the restore can make its losses match.
    for (int rank = 0; rank < world; ++rank)
      replicas.push_back(std::make_unique<Replica>(dataset, mode == "resume" ? 999 : 5));
    if (mode == "resume") {
      const auto latest = ckpt::latest_checkpoint(root);
      ember::check(latest.has_value(), "resume: no checkpoint in {}", root.string());
      ckpt::run_ranks(world, [&](ckpt::Coordinator& coordinator) {
        ckpt::load_training_state(coordinator, *latest, replicas[coordinator.rank()]->state);
      });
    }
    for (int step = 0; step < steps; ++step) {
      double loss = 0;
      for (int rank = world - 1; rank >= 0; --rank) loss = replicas[rank]->train_step();
      std::printf("%a\n", loss);
    }
    if (mode == "save") {
      ckpt::ThreadGroup saving(world);
      ckpt::run_ranks(world, [&](ckpt::Coordinator& coordinator) {
        ckpt::AsyncCheckpointer checkpointer(saving.rank(coordinator.rank()));
        const Replica& replica = *replicas[coordinator.rank()];
        ckpt::save_training_state_async(checkpointer, coordinator.rank(), world, replica.state,
                                        {.root = root, .name = ckpt::step_name(replica.state.step)})
            .wait();
      });
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ckpt_resume_helper: %s\n", error.what());
    return 1;
  }
  return 0;
}
