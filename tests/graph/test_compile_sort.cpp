// ember::compile of a training step that ranks scores with sort, argsort, topk, kthvalue and
// max/min along a dim: the two-output ops run as library calls in the captured graph (each node
// keeps both outputs), their backward scatters are captured too, and values, indices and the
// trained parameters equal eager's step by step.
#include <doctest/doctest.h>

#include <memory>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/sgd.h"

namespace test_compile_sort {

using namespace ember;

namespace {

struct Ranker {
  nn::Linear head{nullptr};
  std::unique_ptr<optim::SGD> optimizer;
  Tensor rank_weight = from_vector<float>({1.0f, 0.5f, 0.25f, -0.5f, 0.75f, -1.0f}, {1, 6});

  Ranker() {
    manual_seed(81);
    head = nn::Linear(5, 6);
    optimizer = std::make_unique<optim::SGD>(head->parameters(), optim::SGDOptions{.lr = 0.05});
  }

  // The loss and every index the step computed, flattened into one int64 tensor.
  std::tuple<Tensor, Tensor> step(const Tensor& x) {
    optimizer->zero_grad();
    const Tensor scores = head->forward(x);
    const auto [top, top_index] = topk(scores, 3, 1);
    const auto [ordered, order] = sort(scores, 1, true);
    const auto [median, median_index] = kthvalue(scores, 3, 0);
    const auto [best, best_index] = scores.max(1);
    const auto [worst, worst_index] = scores.min(0, true);
    const Tensor loss = add(add(mul(sum(top), 0.5), sum(mul(ordered, rank_weight))),
                            add(sum(median), sub(sum(best), mul(sum(worst), 0.25))));
    loss.backward();
    optimizer->step();
    const Tensor indices = cat({top_index.flatten(), order.flatten(), median_index, best_index,
                                worst_index.flatten(), argsort(scores, 0).flatten()});
    return {loss.detach(), indices};
  }
};

}  // namespace

TEST_CASE("compile: a step with sort, topk, kthvalue and max along a dim, captured whole, equals eager") {
  Ranker eager, compiled;
  auto train_step = ember::compile([&](const Tensor& x) { return compiled.step(x); }, {.fullgraph = true});
  for (int step = 0; step < 6; ++step) {
    INFO("step " << step);
    manual_seed(900 + static_cast<uint64_t>(step));
    const Tensor x = randn({8, 5});
    const auto [compiled_loss, compiled_indices] = train_step(x);
    const auto [eager_loss, eager_indices] = eager.step(x);
    CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-5);
    CHECK(compiled_indices.dtype() == kInt64);
    CHECK(compiled_indices.to_vector<int64_t>() == eager_indices.to_vector<int64_t>());
  }
  CHECK(train_step.state().replays() == 4);
  CHECK(train_step.state().graph()->count_op("topk") == 1);
  CHECK(train_step.state().graph()->count_op("sort") >= 2);  // sort and kthvalue's (argsort's may be shared)
  CHECK(train_step.state().graph()->count_op("scatter_add") >= 2);
  graph_test::check_same_values(compiled.optimizer->param_groups()[0].params,
                                eager.optimizer->param_groups()[0].params);
}

}  // namespace test_compile_sort
