// ember::compile of a training step through the running reductions cumprod, cummax, cummin and
// logcumsumexp: they run as library calls in the captured graph, their backward rules (reversed
// cumsum and logcumsumexp, masked running products, scatter_add) are captured too, and the loss,
// the indices and the trained parameters equal eager's step by step.
#include <doctest/doctest.h>

#include <memory>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/sgd.h"

namespace test_compile_scans {

using namespace ember;

namespace {

struct RunningModel {
  nn::Linear head{nullptr};
  std::unique_ptr<optim::SGD> optimizer;

  RunningModel() {
    manual_seed(83);
    head = nn::Linear(5, 6);
    optimizer = std::make_unique<optim::SGD>(head->parameters(), optim::SGDOptions{.lr = 0.05});
  }

  // The loss and the indices of the running extrema, flattened into one int64 tensor.
  std::tuple<Tensor, Tensor> step(const Tensor& x) {
    optimizer->zero_grad();
    const Tensor scores = head->forward(x);
    // Factors in [0, 1.3): bounded products, and exact zeros (relu) for the zero-safe gradient.
    const Tensor factors = relu(add(tanh(scores), 0.3));
    const auto [highest, highest_index] = cummax(scores, 1);
    const auto [lowest, lowest_index] = scores.cummin(0);
    const Tensor loss = add(add(sum(cumprod(factors, 1)), mul(sum(logcumsumexp(scores, -1)), 0.25)),
                            sub(mul(sum(highest), 0.5), mul(sum(lowest), 0.125)));
    loss.backward();
    optimizer->step();
    return {loss.detach(), cat({highest_index.flatten(), lowest_index.flatten()})};
  }
};

}  // namespace

TEST_CASE("compile: a step through cumprod, cummax, cummin and logcumsumexp, captured whole, equals eager") {
  RunningModel eager, compiled;
  auto train_step = ember::compile([&](const Tensor& x) { return compiled.step(x); }, {.fullgraph = true});
  for (int step = 0; step < 6; ++step) {
    INFO("step " << step);
    manual_seed(700 + static_cast<uint64_t>(step));
    const Tensor x = randn({8, 5});
    const auto [compiled_loss, compiled_indices] = train_step(x);
    const auto [eager_loss, eager_indices] = eager.step(x);
    CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-5);
    CHECK(compiled_indices.dtype() == kInt64);
    CHECK(compiled_indices.to_vector<int64_t>() == eager_indices.to_vector<int64_t>());
  }
  CHECK(train_step.state().replays() == 4);
  for (const char* op : {"cumprod", "cummax", "cummin", "logcumsumexp"}) {
    CAPTURE(op);
    CHECK(train_step.state().graph()->count_op(op) >= 1);
  }
  CHECK(train_step.state().graph()->count_op("scatter_add") >= 2);  // cummax's and cummin's gradients
  graph_test::check_same_values(compiled.optimizer->param_groups()[0].params,
                                eager.optimizer->param_groups()[0].params);
}

}  // namespace test_compile_scans
