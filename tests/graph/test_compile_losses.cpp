// ember::compile of a training step that uses the composite losses and reductions
// (runtime/functional_losses*.cpp, functional_reductions.cpp) and an Embedding with padding_idx:
// captured whole (fullgraph: binary_cross_entropy's range check reads nothing under capture),
// fused, and equal to eager training step by step.
#include <doctest/doctest.h>

#include <memory>

#include "graph/compile.h"
#include "fusion_test_util.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/sgd.h"

namespace test_compile_losses {

using namespace ember;

namespace {

struct Tagger {
  nn::Embedding table{nullptr};
  nn::Linear head{nullptr};
  std::unique_ptr<optim::SGD> optimizer;
  Tensor class_weight = from_vector<float>({0.5f, 2.0f, 1.0f, 1.5f});
  Tensor pos_weight = from_vector<float>({1.0f, 3.0f, 0.5f, 2.0f});

  Tagger() {
    manual_seed(71);
    table = nn::Embedding(10, 6, {.padding_idx = 0});
    head = nn::Linear(6, 4);
    std::vector<Tensor> parameters = table->parameters();
    for (const Tensor& parameter : head->parameters()) parameters.push_back(parameter);
    optimizer = std::make_unique<optim::SGD>(parameters, optim::SGDOptions{.lr = 0.05});
  }

  Tensor step(const Tensor& tokens, const Tensor& labels, const Tensor& classes) {
    optimizer->zero_grad();
    const Tensor logits = head->forward(mean(table(tokens), {1}));
    const Tensor probabilities = sigmoid(logits);
    std::vector<Tensor> terms{
        binary_cross_entropy_with_logits(logits, labels, {}, Reduction::Mean, pos_weight),
        binary_cross_entropy(probabilities, labels, class_weight, Reduction::Sum),
        l1_loss(probabilities, labels),
        smooth_l1_loss(logits, labels, Reduction::Mean, 0.5),
        huber_loss(logits, labels, Reduction::Sum, 0.75),
        cross_entropy(logits, classes, {.label_smoothing = 0.1, .weight = class_weight}),
        nll_loss(log_softmax(logits, 1), classes, class_weight, Reduction::Mean, 2),
        kl_div(log_softmax(logits, 1), softmax(labels, 1), Reduction::BatchMean),
        mul(norm(head->weight), 0.01),
        ember::std(logits),
        mean(logsumexp(logits, {1})),
        mul(sum(std::get<0>(max(logits, 1))), 0.1),
    };
    Tensor loss = terms[0];
    for (size_t i = 1; i < terms.size(); ++i) loss = add(loss, terms[i]);
    loss.backward();
    optimizer->step();
    return loss.detach();
  }
};

std::vector<Tensor> batch(int step) {
  manual_seed(700 + static_cast<uint64_t>(step));
  return {randint(0, 10, {8, 3}), rand({8, 4}), randint(0, 4, {8})};
}

}  // namespace

TEST_CASE("compile: a training step with the composite losses, captured whole, equals eager") {
  Tagger eager, compiled;
  auto train_step = ember::compile(
      [&](const Tensor& tokens, const Tensor& labels, const Tensor& classes) {
        return compiled.step(tokens, labels, classes);
      },
      {.fullgraph = true});
  for (int step = 0; step < 12; ++step) {
    INFO("step ", step);
    const std::vector<Tensor> inputs = batch(step);
    const Tensor compiled_loss = train_step(inputs[0], inputs[1], inputs[2]);
    const Tensor eager_loss = eager.step(inputs[0], inputs[1], inputs[2]);
    CHECK(std::isfinite(eager_loss.item()));
    CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-5);
  }
  CHECK(train_step.state().replays() == 10);
  graph_test::check_same_values(compiled.optimizer->param_groups()[0].params,
                                eager.optimizer->param_groups()[0].params);
  // The padding row never moved from zero in either.
  CHECK(compiled.table->weight.select(0, 0).abs().sum().item() == 0.0);
  CHECK(eager.table->weight.select(0, 0).abs().sum().item() == 0.0);
}

}  // namespace test_compile_losses
