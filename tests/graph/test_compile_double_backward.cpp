// autograd::grad and create_graph inside ember::compile. Both run their backward through the
// dispatcher, so the capture records it like any backward (with create_graph, the first backward's
// ops and the second backward's ops land in one graph); every case runs compiled and eager from
// the same seed and compares at each call. A create_graph backward through a compiled function's
// results is refused on every call: a replay's backward graph reads saved values without history,
// and the eager calls before it (warm-up, capture) refuse as the replays do.
#include <doctest/doctest.h>

#include <optional>

#include "compile_autograd_util.h"
#include "tests/error_of.h"
#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/autograd/node.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/sgd.h"

namespace test_compile_double_backward {

using namespace ember;
using namespace ember::compile_autograd_test;
using ember::testing::error_of;

namespace {

// A step that takes its gradients with autograd::grad and updates the parameters by hand.
Tensor manual_sgd_step(nn::Sequential& model, const Tensor& x, const Tensor& target) {
  const Tensor loss = mse_loss(model->forward(x), target);
  std::vector<Tensor> parameters = model->parameters();
  const std::vector<Tensor> grads = autograd::grad({loss}, parameters);
  NoGradGuard no_grad;
  for (size_t i = 0; i < parameters.size(); ++i) add_(parameters[i], grads[i], -0.1);
  return loss.detach();
}

// A WGAN-GP style step: the loss plus 10 (|d out / dx|_2 - 1)^2 per row, backward, SGD.
Tensor penalty_step(nn::Sequential& model, optim::SGD& optimizer, const Tensor& x, const Tensor& target) {
  optimizer.zero_grad();
  const Tensor out = model->forward(x);
  const Tensor input_gradient = autograd::grad({out.sum()}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  const Tensor penalty = ember::pow(sub(norm(input_gradient, 2.0, {1}), 1.0), 2.0).mean();
  const Tensor loss = add(mse_loss(out, target), mul(penalty, 10.0));
  loss.backward();
  optimizer.step();
  return loss.detach();
}

}  // namespace

TEST_CASE("compile: a step taking its gradients with autograd::grad trains as eager and sets no .grad") {
  nn::Sequential compiled_model = mlp(), eager_model = mlp();
  auto compiled = ember::compile(
      [&](const Tensor& x, const Tensor& target) { return manual_sgd_step(compiled_model, x, target); },
      {.fullgraph = true});
  for (int call = 0; call < 5; ++call) {
    INFO("call ", call);
    const Tensor x = batch(call), target = batch(500 + call, {5, 4});
    const Tensor compiled_loss = compiled(x, target);
    const Tensor eager_loss = manual_sgd_step(eager_model, x, target);
    CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-5);
    check_grads(compiled_model, eager_model);  // parameters equal, no .grad on either side
    for (const Tensor& parameter : compiled_model->parameters()) CHECK_FALSE(parameter.grad().defined());
  }
  CHECK(compiled.state().captures() == 1);
  CHECK(compiled.state().replays() == 3);
}

TEST_CASE("compile: a gradient-penalty step (create_graph inside) trains as eager") {
  nn::Sequential compiled_model = mlp(), eager_model = mlp();
  optim::SGD compiled_optimizer(compiled_model->parameters(), {.lr = 0.05});
  optim::SGD eager_optimizer(eager_model->parameters(), {.lr = 0.05});
  auto compiled = ember::compile(
      [&](const Tensor& x, const Tensor& target) {
        return penalty_step(compiled_model, compiled_optimizer, x, target);
      },
      {.fullgraph = true});
  for (int call = 0; call < 5; ++call) {
    INFO("call ", call);
    const Tensor target = batch(500 + call, {5, 4});
    const Tensor compiled_x = batch(call).requires_grad_(), eager_x = batch(call).requires_grad_();
    const Tensor compiled_loss = compiled(compiled_x, target);
    const Tensor eager_loss = penalty_step(eager_model, eager_optimizer, eager_x, target);
    CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-5);
    check_grads(compiled_model, eager_model);
    REQUIRE(compiled_x.grad().defined());
    CHECK(graph_test::max_relative_error(compiled_x.grad(), eager_x.grad()) <= 1e-5);
  }
  CHECK(compiled.state().captures() == 1);
  CHECK(compiled.state().replays() == 3);
}

TEST_CASE("compile: a create_graph gradient returned by a compiled function is differentiated by the caller") {
  // f(x) = d sum(tanh(x)^3) / dx with history; the caller's backward of sum(f(x)) is the second derivative.
  const auto body = [](const Tensor& x) {
    return autograd::grad({ember::pow(tanh(x), 3.0).sum()}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  };
  auto compiled = ember::compile(body, {.fullgraph = true});
  for (int call = 0; call < 4; ++call) {
    INFO("call ", call);
    const Tensor compiled_x = batch(call).to(kFloat64).requires_grad_();
    const Tensor eager_x = compiled_x.detach().requires_grad_();
    const Tensor compiled_first = compiled(compiled_x), eager_first = body(eager_x);
    CHECK(graph_test::max_relative_error(compiled_first, eager_first) <= 1e-12);
    compiled_first.sum().backward();
    eager_first.sum().backward();
    CHECK(graph_test::max_relative_error(compiled_x.grad(), eager_x.grad()) <= 1e-12);
  }
  CHECK(compiled.state().captures() == 1);
  CHECK(compiled.state().replays() == 2);
  // A third derivative would need the second backward recorded: a replay's backward graph reads
  // saved forward values without history, so create_graph through it is refused, not wrong.
  const Tensor x = batch(9).to(kFloat64).requires_grad_();
  const Tensor first = compiled(x);
  CHECK(error_of([&] { first.sum().backward({}, std::nullopt, /*create_graph=*/true); })
            .find("CompiledBackward's backward is not differentiable (create_graph=true)") != std::string::npos);
}

TEST_CASE("compile: a create_graph backward through the results is refused on every call, warm-up included") {
  const auto body = [](const Tensor& x) { return mul(tanh(x), x); };
  auto compiled = ember::compile(body, {.fullgraph = true});
  for (int call = 0; call < 4; ++call) {
    INFO("call ", call);
    const Tensor compiled_x = batch(call).to(kFloat64).requires_grad_();
    const Tensor eager_x = compiled_x.detach().requires_grad_();
    const Tensor result = compiled(compiled_x);
    REQUIRE(result.grad_fn());
    CHECK(result.grad_fn()->name() == "CompiledBackward");
    const std::string message = error_of(
        [&] { autograd::grad({result.sum()}, {compiled_x}, {}, std::nullopt, /*create_graph=*/true); });
    CHECK(message.find("autograd: CompiledBackward's backward is not differentiable (create_graph=true); compute this "
                       "gradient with create_graph=false") != std::string::npos);
    // A plain gradient flows on every call, into fn's eager history or through the backward graph.
    const Tensor compiled_gradient = autograd::grad({result.sum()}, {compiled_x})[0];
    const Tensor eager_gradient = autograd::grad({body(eager_x).sum()}, {eager_x})[0];
    CHECK(graph_test::max_relative_error(compiled_gradient, eager_gradient) <= 1e-12);
  }
  CHECK(compiled.state().captures() == 1);
  CHECK(compiled.state().replays() == 2);
}

TEST_CASE("compile: an argument returned as itself keeps its history on every call") {
  // fn's result is its argument: no node of fn's stands between, on a replay or before it.
  auto compiled = ember::compile([](const Tensor& x, const Tensor& y) { return std::make_tuple(x, mul(x, y)); },
                                 {.fullgraph = true});
  for (int call = 0; call < 3; ++call) {
    INFO("call ", call);
    const Tensor leaf = batch(call).to(kFloat64).requires_grad_();
    const Tensor x = mul(leaf, leaf);
    const auto [same, product] = compiled(x, batch(call + 5).to(kFloat64));
    CHECK(same.impl() == x.impl());
    // d/dleaf sum(x) with create_graph: 2 leaf, with history; its gradient again: 2.
    const Tensor first = autograd::grad({same.sum()}, {leaf}, {}, std::nullopt, /*create_graph=*/true)[0];
    CHECK(graph_test::max_relative_error(autograd::grad({first.sum()}, {leaf})[0], full_like(leaf, 2.0)) == 0);
  }
}

}  // namespace test_compile_double_backward
