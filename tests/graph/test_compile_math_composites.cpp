// ember::compile of a training step built from the composites of runtime/functional_math_composites.h
// and linalg::vecdot (fmax, fmin, float_power, deg2rad, rad2deg, floor_divide, signbit, addr, inner,
// dist): captured whole (fullgraph), the loss and the trained parameters equal eager's step by step.
// matrix_exp is left out: its scaling reads a norm on the host, which a full graph cannot hold.
#include <doctest/doctest.h>

#include <memory>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/functional_math_composites.h"
#include "runtime/linalg_composites.h"
#include "runtime/optim/sgd.h"

namespace test_compile_math_composites {

using namespace ember;

namespace {

struct Model {
  Tensor weight;  // [4, 3]
  Tensor u, v;    // [4], [3]
  std::unique_ptr<optim::SGD> optimizer;

  Model() {
    manual_seed(23);
    weight = randn({4, 3}, {.dtype = kFloat64}).requires_grad_();
    u = randn({4}, {.dtype = kFloat64}).requires_grad_();
    v = randn({3}, {.dtype = kFloat64}).requires_grad_();
    optimizer = std::make_unique<optim::SGD>(std::vector<Tensor>{weight, u, v}, optim::SGDOptions{.lr = 0.05});
  }

  Tensor step(const Tensor& x) {  // x [8, 3]
    optimizer->zero_grad();
    const Tensor shifted = addr(weight, u, v, 0.5, 0.25);  // [4, 3]
    const Tensor scores = inner(x, shifted);               // [8, 4]
    const Tensor clipped = fmin(fmax(scores, zeros_like(scores)), full_like(scores, 2.0));
    const Tensor powered = float_power(abs(clipped), 1.5);
    const Tensor angles = rad2deg(deg2rad(sum(powered, {1})));
    const Tensor rows = floor_divide(x, full_like(x, 0.3));  // no gradient, a constant of the step
    const Tensor negatives = to_dtype(signbit(x), kFloat64);
    const Tensor extra = mul(linalg::vecdot(add(rows, negatives), x), 1e-3);
    const Tensor loss = add(add(mean(angles), dist(shifted, weight.detach(), 3.0)), mean(extra));
    loss.backward();
    optimizer->step();
    return loss.detach();
  }
};

}  // namespace

TEST_CASE("compile: a step through fmax, fmin, float_power, addr, inner, dist and vecdot equals eager") {
  Model eager, compiled;
  auto train_step = ember::compile([&](const Tensor& x) { return compiled.step(x); }, {.fullgraph = true});
  for (int step = 0; step < 5; ++step) {
    INFO("step " << step);
    manual_seed(900 + static_cast<uint64_t>(step));
    const Tensor x = randn({8, 3}, {.dtype = kFloat64});
    const Tensor compiled_loss = train_step(x);
    const Tensor eager_loss = eager.step(x);
    CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-12);
  }
  CHECK(train_step.state().replays() >= 3);
  graph_test::check_same_values({compiled.weight, compiled.u, compiled.v}, {eager.weight, eager.u, eager.v});
}

}  // namespace test_compile_math_composites
