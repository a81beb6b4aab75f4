// ember::compile of a training step whose model is built from the nn containers (ModuleList,
// ModuleDict) and the layers added with them (Identity, Flatten, Unflatten, Embedding with
// max_norm): captured whole, and equal to eager training step by step, the in-place renorm of
// the looked-up rows included.
#include <doctest/doctest.h>

#include <memory>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/sgd.h"

namespace test_compile_containers {

using namespace ember;

namespace {

struct TaggerImpl : nn::Module {
  nn::Embedding table{nullptr};
  nn::ModuleList blocks{nullptr};
  nn::ModuleDict heads{nullptr};
  nn::Flatten flatten{nullptr};
  nn::Unflatten unflatten{nullptr};

  TaggerImpl() : Module("Tagger") {
    // A small max_norm against N(0, 1) rows of 4 values: most rows looked up get renormed.
    table = register_module("table", nn::Embedding(12, 4, {.max_norm = 1.5}));
    blocks = register_module("blocks", nn::ModuleList());
    for (int i = 0; i < 2; ++i) {
      blocks->push_back(nn::Linear(12, 12));
      blocks->push_back(nn::Tanh());
    }
    blocks->push_back(nn::Identity());
    heads = register_module("heads", nn::ModuleDict({{"tag", nn::Linear(12, 6)}, {"score", nn::Linear(12, 1)}}));
    flatten = register_module("flatten", nn::Flatten());
    unflatten = register_module("unflatten", nn::Unflatten(1, {2, 3}));
  }

  // tokens [N, 3] -> (tag logits [N, 2, 3], scores [N, 1])
  std::pair<Tensor, Tensor> forward(const Tensor& tokens) {
    Tensor x = flatten(table(tokens));  // [N, 3 * 4]
    for (const auto& block : *blocks) {
      if (auto* linear = block->as<nn::Linear>()) x = linear->forward(x);
      else if (auto* activation = block->as<nn::Tanh>()) x = activation->forward(x);
      else x = block->as<nn::Identity>()->forward(x);
    }
    return {unflatten(heads->at<nn::LinearImpl>("tag")->forward(x)), heads->at<nn::LinearImpl>("score")->forward(x)};
  }
};

struct Trainer {
  std::shared_ptr<TaggerImpl> model;
  std::unique_ptr<optim::SGD> optimizer;

  Trainer() {
    manual_seed(91);
    model = std::make_shared<TaggerImpl>();
    optimizer = std::make_unique<optim::SGD>(model->parameters(), optim::SGDOptions{.lr = 0.1, .momentum = 0.5});
  }

  Tensor step(const Tensor& tokens, const Tensor& tags, const Tensor& targets) {
    optimizer->zero_grad();
    const auto [tag_logits, scores] = model->forward(tokens);
    const Tensor loss = add(cross_entropy(tag_logits.reshape({-1, 3}), tags), mse_loss(scores, targets));
    loss.backward();
    optimizer->step();
    return loss.detach();
  }
};

// How many distinct rows `tokens` looks up whose 2-norm exceeds max_norm (what the renorm scales).
int64_t rows_over(const nn::EmbeddingImpl& table, const Tensor& tokens, double max_norm) {
  const std::vector<float> norms = norm(table.weight, 2.0, {1}).to_vector<float>();
  std::vector<bool> counted(norms.size(), false);
  int64_t count = 0;
  for (const int64_t token : tokens.to_vector<int64_t>()) {
    const auto row = static_cast<size_t>(token);
    if (!counted[row] && norms[row] > max_norm) ++count;
    counted[row] = true;
  }
  return count;
}

std::vector<Tensor> batch(int step) {
  manual_seed(900 + static_cast<uint64_t>(step));
  return {randint(0, 12, {8, 3}), randint(0, 3, {16}), randn({8, 1})};
}

}  // namespace

TEST_CASE("compile: a model of ModuleList, ModuleDict and Embedding(max_norm) trains as eager does") {
  Trainer eager, compiled;
  auto train_step = ember::compile(
      [&](const Tensor& tokens, const Tensor& tags, const Tensor& targets) {
        return compiled.step(tokens, tags, targets);
      },
      {.fullgraph = true});
  int64_t renormed_in_replays = 0;
  for (int step = 0; step < 8; ++step) {
    INFO("step ", step);
    const std::vector<Tensor> inputs = batch(step);
    if (step >= 2) renormed_in_replays += rows_over(*eager.model->table, inputs[0], 1.5);
    const Tensor compiled_loss = train_step(inputs[0], inputs[1], inputs[2]);
    const Tensor eager_loss = eager.step(inputs[0], inputs[1], inputs[2]);
    CHECK(std::isfinite(eager_loss.item()));
    CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-5);
  }
  CHECK(train_step.state().replays() == 6);
  // The replayed steps had rows to renorm, so the tables agreeing below means the renorm replayed.
  CHECK(renormed_in_replays > 0);
  const nn::StateDict eager_state = eager.model->state_dict();
  const nn::StateDict compiled_state = compiled.model->state_dict();
  for (const auto& [key, tensor] : eager_state) {
    INFO(key);
    CHECK(graph_test::max_relative_error(compiled_state[key], tensor) <= 1e-5);
  }
}

}  // namespace test_compile_containers
