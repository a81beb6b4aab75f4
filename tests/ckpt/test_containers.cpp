// Checkpoints of a model built from the nn containers: ModuleList and ModuleDict entries are saved
// under their dotted names ("model.blocks.2.weight"), and a fresh model of the same structure
// restores them bit for bit and trains on exactly as the saved one does.
#include <doctest/doctest.h>

#include <memory>

#include "ckpt/reader.h"
#include "ckpt/training_state.h"
#include "runtime/ember.h"
#include "tests/ckpt/helpers.h"

namespace ember::ckpt::test_containers {
namespace {

struct NetImpl : nn::Module {
  nn::Embedding embed{nullptr};
  nn::ModuleList blocks{nullptr};
  nn::ModuleDict heads{nullptr};

  NetImpl() : Module("Net") {
    embed = register_module("embed", nn::Embedding(6, 4, {.max_norm = 1.0}));
    blocks = register_module("blocks", nn::ModuleList(nn::Linear(4, 4), nn::ReLU(), nn::Linear(4, 4)));
    heads = register_module("heads", nn::ModuleDict({{"a", nn::Linear(4, 2)}, {"b", nn::Linear(4, 1)}}));
  }
  Tensor loss(const Tensor& tokens) {
    Tensor x = embed(tokens).mean({1});
    x = blocks->at<nn::LinearImpl>(2)->forward(relu(blocks->at<nn::LinearImpl>(0)->forward(x)));
    return add(heads->at<nn::LinearImpl>("a")->forward(x).pow(2).mean(),
               heads->at<nn::LinearImpl>("b")->forward(x).abs().mean());
  }
};

struct Run {
  std::shared_ptr<NetImpl> model;
  std::unique_ptr<optim::Adam> optimizer;
  TrainingState state;

  explicit Run(uint64_t seed) {
    manual_seed(seed);
    model = std::make_shared<NetImpl>();
    optimizer = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions{.lr = 0.05});
    state = {.model = model.get(), .optimizer = optimizer.get()};
  }
  std::vector<float> train(int steps) {
    std::vector<float> losses;
    for (int step = 0; step < steps; ++step) {
      manual_seed(500 + static_cast<uint64_t>(state.step));
      optimizer->zero_grad();
      const Tensor loss = model->loss(randint(0, 6, {5, 3}));
      loss.backward();
      optimizer->step();
      losses.push_back(loss.item<float>());
      ++state.step;
    }
    return losses;
  }
};

TEST_CASE("checkpoint: a model of ModuleList and ModuleDict restores into a fresh one and trains on alike") {
  testing::TempDir root;
  SingleRank single;
  Run saved(3);
  saved.train(3);
  save_training_state(single, saved.state, {.root = root.path(), .name = step_name(3)});
  const CheckpointReader reader(root / step_name(3));
  CHECK(reader.entry("model.blocks.2.weight").is_tensor());
  CHECK(reader.entry("model.heads.b.bias").is_tensor());
  CHECK(reader.entry("model.embed.weight").tensor().shape == Dims{6, 4});

  Run fresh(4);  // other initial values
  REQUIRE_FALSE(testing::same_bytes(fresh.model->blocks->at<nn::LinearImpl>(0)->weight,
                                    saved.model->blocks->at<nn::LinearImpl>(0)->weight));
  load_training_state(single, root / step_name(3), fresh.state);
  CHECK(fresh.state.step == 3);
  const nn::StateDict expected = saved.model->state_dict();
  for (const auto& [key, tensor] : fresh.model->state_dict()) {
    INFO(key);
    CHECK(testing::same_bytes(tensor, expected[key]));
  }
  CHECK(fresh.train(3) == saved.train(3));
}

}  // namespace
}  // namespace ember::ckpt::test_containers
