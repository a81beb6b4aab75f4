// ember::compile of a training step built on split, chunk, masked_fill and tril (the composites of
// runtime/functional_shape_ops.h): a small causal attention, captured whole and equal to eager,
// loss by loss, in the parameters and in their gradients.
#include <doctest/doctest.h>

#include <memory>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/sgd.h"

namespace test_compile_split_mask {

using namespace ember;

namespace {

struct CausalAttention {
  nn::Linear qkv{nullptr};
  nn::Linear head{nullptr};
  std::unique_ptr<optim::SGD> optimizer;

  CausalAttention() {
    manual_seed(83);
    qkv = nn::Linear(6, 12);
    head = nn::Linear(4, 3);
    std::vector<Tensor> parameters = qkv->parameters();
    for (const Tensor& parameter : head->parameters()) parameters.push_back(parameter);
    optimizer = std::make_unique<optim::SGD>(parameters, optim::SGDOptions{.lr = 0.1});
  }

  std::vector<Tensor> parameters() const { return optimizer->param_groups()[0].params; }

  // x [B, T, 6], target [B, T, 3].
  Tensor step(const Tensor& x, const Tensor& target) {
    optimizer->zero_grad();
    const std::vector<Tensor> qkv_parts = split(qkv->forward(x), 4, -1);  // query, key, value
    const Tensor scores = matmul(qkv_parts[0], qkv_parts[1].transpose(1, 2)).mul(0.5);
    const int64_t steps = x.size(1);
    const Tensor future = triu(ones({steps, steps}, {.dtype = kBool}), 1);
    const Tensor attention = softmax(masked_fill(scores, future, -1e9), -1);
    const Tensor mixed = matmul(attention, qkv_parts[2]);
    // The first time steps are fitted to the target, the last ones kept small.
    const std::vector<Tensor> early_late = chunk(head->forward(mixed), 2, 1);
    const std::vector<Tensor> target_parts = split(target, {early_late[0].size(1), early_late[1].size(1)}, 1);
    Tensor loss = mse_loss(early_late[0], target_parts[0]);
    loss = add(loss, mul(mean(early_late[1].mul(early_late[1])), 0.5));
    loss = add(loss, mul(mean(tril(scores, -1).mul(tril(scores, -1))), 0.01));  // keep past scores small
    loss.backward();
    optimizer->step();
    return loss.detach();
  }
};

std::vector<Tensor> batch(int step) {
  manual_seed(600 + static_cast<uint64_t>(step));
  return {randn({2, 5, 6}), randn({2, 5, 3})};
}

}  // namespace

TEST_CASE("compile: a step with split, chunk, masked_fill and tril, captured whole, equals eager with its gradients") {
  CausalAttention eager, compiled;
  auto train_step = ember::compile(
      [&](const Tensor& x, const Tensor& target) { return compiled.step(x, target); }, {.fullgraph = true});
  for (int step = 0; step < 8; ++step) {
    INFO("step ", step);
    const std::vector<Tensor> inputs = batch(step);
    const Tensor compiled_loss = train_step(inputs[0], inputs[1]);
    const Tensor eager_loss = eager.step(inputs[0], inputs[1]);
    CHECK(std::isfinite(eager_loss.item()));
    CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-5);
    const std::vector<Tensor> eager_parameters = eager.parameters();
    const std::vector<Tensor> compiled_parameters = compiled.parameters();
    for (size_t i = 0; i < eager_parameters.size(); ++i) {
      INFO("parameter ", i);
      REQUIRE(compiled_parameters[i].grad().defined());
      CHECK(graph_test::max_relative_error(compiled_parameters[i].grad(), eager_parameters[i].grad()) <= 1e-5);
      CHECK(graph_test::max_relative_error(compiled_parameters[i], eager_parameters[i]) <= 1e-5);
    }
  }
  CHECK(train_step.state().replays() == 6);
}

}  // namespace test_compile_split_mask
