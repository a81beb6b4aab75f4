// ember::compile of a training step through the composites of runtime/functional_arrange.h and
// runtime/functional_math_extra.h (cov, corrcoef, renorm, xlogy, sinc, logit, diff, trapezoid,
// matrix_power, addmv, baddbmm, multi_dot, rot90, block_diag, hstack, tensor_split): captured whole
// (fullgraph: none reads values on the host), and the loss and trained parameters equal eager's
// step by step.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/optim/sgd.h"

namespace test_compile_ops_composites {

using namespace ember;

namespace {

struct CompositeModel {
  Tensor weight, vector, batch_bias;
  std::unique_ptr<optim::SGD> optimizer;

  CompositeModel() {
    manual_seed(91);
    weight = mul(randn({4, 4}), 0.5).requires_grad_();
    vector = randn({4}).requires_grad_();
    batch_bias = randn({1, 4, 4}).requires_grad_();
    optimizer =
        std::make_unique<optim::SGD>(std::vector<Tensor>{weight, vector, batch_bias}, optim::SGDOptions{.lr = 0.01});
  }

  Tensor step(const Tensor& x) {
    optimizer->zero_grad();
    const Tensor mixed = mm(weight, x);                                     // [4, 6]
    const Tensor chain = linalg_multi_dot({weight, x, x.t(), weight.t()});  // [4, 4]
    const Tensor powered = matrix_power(mul(chain, 0.05), 3);
    const Tensor statistics = mul(cov(mixed), corrcoef(x));
    const Tensor scaled = renorm(weight, 2.0, 0, 1.0);
    const Tensor moved = addmv(vector, scaled, vector, 0.5, 2.0);  // [4]
    const Tensor entropy = xlogy(sigmoid(moved), sigmoid(vector));
    const Tensor waves = sinc(diff(moved, 1, 0, vector.slice(0, 0, 1)));  // [4]
    const Tensor odds = logit(sigmoid(vector), 1e-3);
    const Tensor areas = trapezoid(rot90(block_diag({weight, scaled}), 1), 0.5);  // [8]
    const std::vector<Tensor> parts = tensor_split(hstack({moved, odds}), 3);     // 3, 3, 2
    const Tensor batched =
        baddbmm(batch_bias, expand(unsqueeze(weight, 0), {2, 4, 4}), expand(unsqueeze(chain, 0), {2, 4, 4}), 0.5, 0.1);
    Tensor loss = add(sum(powered), sum(statistics));
    loss = add(loss, add(sum(entropy), sum(waves)));
    loss = add(loss, add(sum(areas), mul(sum(parts[1]), 0.3)));
    loss = add(loss, mul(sum(tanh(batched)), 0.2));
    loss.backward();
    optimizer->step();
    return loss.detach();
  }
};

}  // namespace

TEST_CASE("compile: a training step through the new composites, captured whole, equals eager") {
  for (const bool fuse : {true, false}) {
    INFO((std::string("fuse ") + (fuse ? "true" : "false")));
    CompositeModel eager, compiled;
    auto train_step =
        ember::compile([&](const Tensor& x) { return compiled.step(x); }, {.fullgraph = true, .fuse = fuse});
    for (int step = 0; step < 5; ++step) {
      INFO((std::string("step ") + std::to_string(step)));
      manual_seed(900 + static_cast<uint64_t>(step));
      const Tensor x = randn({4, 6});
      const Tensor compiled_loss = train_step(x);
      const Tensor eager_loss = eager.step(x);
      CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-5);
    }
    CHECK(train_step.state().replays() >= 3);
    CHECK(train_step.state().graph_breaks().empty());
    graph_test::check_same_values({compiled.weight, compiled.vector, compiled.batch_bias},
                                  {eager.weight, eager.vector, eager.batch_bias});
    CHECK(train_step.state().graph()->count_op("bmm") >= 1);  // baddbmm's product is in the graph
  }
}

}  // namespace test_compile_ops_composites
