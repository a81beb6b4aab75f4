// ember::compile of a training step built on the composites of runtime/functional_index_more.h
// (take_along_dim, index_fill, masked_scatter, put, slice_scatter, diagonal_scatter,
// broadcast_to): captured whole (fullgraph: none reads index values on the host under capture)
// and equal to eager, loss by loss, in the parameters and their gradients.
#include <doctest/doctest.h>

#include <memory>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/functional_index_more.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/sgd.h"

namespace test_compile_index_more {

using namespace ember;

namespace {

Tensor longs(const std::vector<int64_t>& values, const Dims& sizes) {
  return from_vector<int64_t>(values, sizes, {.dtype = kInt64});
}

struct Model {
  nn::Linear layer{nullptr};
  Tensor table;
  std::unique_ptr<optim::SGD> optimizer;

  Model() {
    manual_seed(91);
    layer = nn::Linear(4, 4);
    table = randn({4, 4}).requires_grad_();
    std::vector<Tensor> parameters = layer->parameters();
    parameters.push_back(table);
    optimizer = std::make_unique<optim::SGD>(parameters, optim::SGDOptions{.lr = 0.05});
  }

  std::vector<Tensor> parameters() const { return optimizer->param_groups()[0].params; }

  // x [3, 4], target [3, 4].
  Tensor step(const Tensor& x, const Tensor& target) {
    optimizer->zero_grad();
    const Tensor hidden = tanh(layer->forward(x));
    const Tensor picked = take_along_dim(hidden, longs({3, 0, 1, 2, 2, 1}, {3, 2}), 1);  // [3, 2]
    const Tensor masked = index_fill(hidden, 1, longs({0}, {1}), 0.0);
    const Tensor mask = gt(x, zeros({}));
    const Tensor scattered = masked_scatter(masked, mask, broadcast_to(table.reshape({-1}).unsqueeze(0), {1, 16}));
    const Tensor with_picked = slice_scatter(scattered, picked, 1, 2);
    const Tensor diag =
        diagonal_scatter(with_picked, take_along_dim(table.narrow(0, 0, 3), longs({0, 1, 2}, {3, 1}), 1).reshape({3}));
    const Tensor out = put(diag, longs({-1, 0}, {2}), hidden.narrow(0, 0, 1).narrow(1, 0, 2).reshape({2}), true);
    const Tensor loss = mse_loss(out, target);
    loss.backward();
    optimizer->step();
    return loss.detach();
  }
};

std::vector<Tensor> batch(int step) {
  manual_seed(800 + static_cast<uint64_t>(step));
  return {randn({3, 4}), randn({3, 4})};
}

}  // namespace

TEST_CASE("compile: a step with take_along_dim, index_fill, masked_scatter, put and the scatters equals eager") {
  Model eager, compiled;
  auto train_step = ember::compile([&](const Tensor& x, const Tensor& target) { return compiled.step(x, target); },
                                   {.fullgraph = true});
  for (int step = 0; step < 6; ++step) {
    INFO("step ", step);
    const std::vector<Tensor> inputs = batch(step);
    const Tensor compiled_loss = train_step(inputs[0], inputs[1]);
    const Tensor eager_loss = eager.step(inputs[0], inputs[1]);
    CHECK(std::isfinite(eager_loss.item()));
    CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-5);
    const std::vector<Tensor> eager_parameters = eager.parameters(), compiled_parameters = compiled.parameters();
    for (size_t i = 0; i < eager_parameters.size(); ++i) {
      INFO("parameter ", i);
      REQUIRE(compiled_parameters[i].grad().defined());
      CHECK(graph_test::max_relative_error(compiled_parameters[i].grad(), eager_parameters[i].grad()) <= 1e-5);
      CHECK(graph_test::max_relative_error(compiled_parameters[i], eager_parameters[i]) <= 1e-5);
    }
  }
}

}  // namespace test_compile_index_more
