// ember-ckpt synth: the wide MLP's full training state after a few steps, saved as N ranks would.
#include "ckpt/training_state.h"
#include "runtime/ember.h"
#include "tools/ember-ckpt/commands.h"

namespace ember::ckpt::cli {

int synth(const std::filesystem::path& out, int world_size, uint64_t seed, int steps) {
  const std::filesystem::path target = std::filesystem::absolute(out).lexically_normal();
  check(target.has_filename(), "synth: --out {} must name the new checkpoint directory", out.string());
  manual_seed(seed);
  // ember-bench's wide model: 784-1024-1024-1024-10, Adam, batch 256 (tools/reference/pytorch_mlp.py).
  // On the CPU on every machine: the same seed writes the same checkpoint with or without a GPU.
  const nn::LinearOptions on_cpu{.device = kCPU};
  nn::Sequential model(nn::Linear(784, 1024, on_cpu), nn::ReLU(), nn::Linear(1024, 1024, on_cpu), nn::ReLU(),
                       nn::Linear(1024, 1024, on_cpu), nn::ReLU(), nn::Linear(1024, 10, on_cpu));
  optim::Adam adam(model->parameters(), {.lr = 1e-3});
  optim::StepLR scheduler(adam, 100, 0.5);
  data::DataLoader loader(
      data::TensorDataset(randn({2048, 784}, {.device = kCPU}), randint(0, 10, {2048}, {.device = kCPU})),
      {.batch_size = 256, .shuffle = true});
  double loss_value = 0;
  for (int step = 0; step < steps; ++step) {
    const data::Batch& batch = *loader.begin();  // each begin() delivers the next batch
    adam.zero_grad();
    Tensor loss = cross_entropy(model(batch.data), batch.target);
    loss.backward();
    adam.step();
    scheduler.step();
    loss_value = loss.item();
  }
  TrainingState state{.model = model.ptr().get(), .optimizer = &adam, .scheduler = &scheduler,
                      .loader = &loader, .generators = {{"cpu", &default_generator(kCPU)}},
                      .step = steps,
                      .config = fmt::format("{{\"model\": \"wide\", \"seed\": {}, \"batch_size\": 256}}", seed),
                      // What a mixed-precision run's loss scaler would carry.
                      .extra = {{"scaler.scale", 65536.0}, {"scaler.growth_tracker", int64_t{0}}}};
  run_ranks(world_size, [&](Coordinator& coordinator) {
    save_training_state(coordinator, state,
                        {.root = target.parent_path(), .name = target.filename().string(), .update_latest = false});
  });
  fmt::print("wrote {} ({} ranks, step {}, loss {:.6f})\n", target.string(), world_size, steps, loss_value);
  return 0;
}

}  // namespace ember::ckpt::cli
