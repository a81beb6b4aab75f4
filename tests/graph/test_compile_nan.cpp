// NaN and inf through relu's gradient and dropout, compiled and fused as in eager and PyTorch:
// relu_backward passes the gradient where the output is NaN (threshold_backward: output <= 0 ? 0
// : grad), and dropout is input * mask * scale, so a dropped NaN or inf is NaN. The generated
// kernels call the same functors (kernels/unary_functors.h, kernels/dropout.h) as the eager ones.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "graph/fusion.h"
#include "runtime/zero_grad.h"

namespace test_compile_nan {

using namespace ember;
using graph_test::GraphBuilder;

namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// [4, 3]: NaN, inf and -inf in every column, next to ordinary values of both signs.
const std::vector<double> kInputs{kNan, 1.0, -2.0, kInf, kNan, 0.5, -1.0, -kInf, kNan, 3.0, kInf, -0.25};

}  // namespace

TEST_CASE("fusion: a fused relu_backward passes the gradient at NaN outputs, as eager and PyTorch do") {
  GraphBuilder builder;
  const graph::ValueId grad = builder.input(from_vector<double>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {4, 3}));
  const graph::ValueId output = builder.input(relu(from_vector<double>(kInputs, {4, 3})));
  const graph::ValueId scale = builder.input(from_vector<double>({0.5, 2.0, -1.0}, {3}));
  const graph::ValueId masked = builder.node("relu_backward", {grad, output});
  const graph::ValueId scaled = builder.node("mul", {masked, scale});
  builder.graph.outputs = {scaled};
  graph::Graph fused = builder.graph;
  REQUIRE(graph::fuse_pointwise(fused) == 1);
  REQUIRE(fused.count_op("relu_backward") == 0);
  // torch: threshold_backward(grad, relu(x), 0) * scale.
  const std::vector<double> expected{0.5, 4.0, -0.0, 2.0, 10.0, -6.0, 0.0, 0.0, -9.0, 5.0, 22.0, -0.0};
  for (const Tensor& result : {builder.eager[scaled], builder.run(fused).at(0)}) {
    const std::vector<double> values = result.to_vector<double>();
    CHECK(values == expected);
  }
}

TEST_CASE("compile: relu's gradient at NaN inputs equals eager's and PyTorch's, fused and unfused") {
  for (const bool fuse : {true, false}) {
    INFO("fuse ", fuse);
    Tensor bias = from_vector<double>({0.5, -1.0, 0.25}, {3}).requires_grad_();
    const Tensor weight = from_vector<double>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {4, 3});
    auto step = [&](const Tensor& x) {
      zero_grads({bias}, true);
      const Tensor out = relu(add(x, bias));
      sum(mul(out, weight)).backward();
      return out.detach();
    };
    auto compiled = ember::compile(step, {.fullgraph = true, .fuse = fuse});
    const Tensor x = from_vector<double>(kInputs, {4, 3});
    for (int call = 0; call < 4; ++call) {  // warm-up, capture, two replays
      INFO("call ", call);
      const Tensor expected_out = step(x);
      const Tensor expected_grad = bias.grad().clone();
      const Tensor out = compiled(x);
      CHECK(graph_test::max_relative_error(out, expected_out) == 0.0);
      CHECK(graph_test::max_relative_error(bias.grad(), expected_grad) == 0.0);
      // x + bias = [[nan, 0, -1.75], [inf, nan, 0.75], [-0.5, -inf, nan], [3.5, inf, 0]]: bias.grad[c]
      // sums weight[r, c] over the rows where relu's output is not <= 0 (NaN included).
      CHECK(bias.grad().to_vector<double>() == std::vector<double>{1 + 4 + 10, 5 + 11, 6 + 9});
    }
    CHECK(compiled.state().replays() == 2);
    if (fuse) CHECK(compiled.state().graph()->count_op("relu_backward") == 0);  // inside a fused kernel
  }
}

TEST_CASE("compile: dropout keeps NaN and inf as NaN where it drops them, fused and unfused, as eager") {
  for (const bool fuse : {true, false}) {
    INFO("fuse ", fuse);
    // add and mul after the dropout form a fused group.
    auto step = [](const Tensor& x) { return mul(add(dropout(relu(x), 0.5, true), 1.0), 3.0); };
    auto compiled = ember::compile(step, {.fullgraph = true, .fuse = fuse});
    const Tensor x = from_vector<double>(kInputs, {4, 3});
    for (int call = 0; call < 4; ++call) {
      INFO("call ", call);
      manual_seed(40 + static_cast<uint64_t>(call));
      const Tensor actual = compiled(x);
      manual_seed(40 + static_cast<uint64_t>(call));
      const Tensor expected = step(x);
      CHECK(graph_test::max_relative_error(actual, expected) == 0.0);
      // relu(nan) and relu(inf) are NaN and inf; kept or dropped, x * mask * scale is NaN or inf.
      const std::vector<double> values = actual.to_vector<double>();
      for (size_t i = 0; i < kInputs.size(); ++i) {
        CAPTURE(i);
        if (std::isnan(kInputs[i])) CHECK(std::isnan(values[i]));
        if (kInputs[i] == kInf) CHECK((std::isnan(values[i]) || values[i] == kInf));
        if (std::isfinite(kInputs[i])) CHECK(std::isfinite(values[i]));
      }
    }
    CHECK(compiled.state().replays() == 2);
  }
}

}  // namespace test_compile_nan
