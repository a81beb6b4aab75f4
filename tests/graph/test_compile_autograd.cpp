// ember::compile of a forward whose results require grad (graph/compiled_autograd.h): the
// caller's own backward() must produce the gradients eager execution produces, through the
// parameters, the inputs and their earlier history, over several results and several calls,
// with eager's rules for retain_graph and in-place changes. Every case runs the same code twice,
// compiled and eager, from the same seed, and compares at each call.
#include <doctest/doctest.h>

#include <functional>

#include "compile_autograd_util.h"
#include "fusion_test_util.h"
#include "graph/capture.h"
#include "graph/compile.h"
#include "runtime/autograd/custom_function.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/sgd.h"

namespace test_compile_autograd {

using namespace ember;
using namespace ember::compile_autograd_test;

TEST_CASE("compile: backward through a compiled forward trains as eager does") {
  for (const bool dropout : {false, true}) {
    INFO("dropout ", dropout);
    nn::Sequential compiled_model = mlp(dropout), eager_model = mlp(dropout);
    optim::SGD compiled_optimizer(compiled_model->parameters(), {.lr = 0.05, .momentum = 0.9});
    optim::SGD eager_optimizer(eager_model->parameters(), {.lr = 0.05, .momentum = 0.9});
    auto compiled_forward =
        ember::compile([&](const Tensor& x) { return compiled_model->forward(x); }, {.fullgraph = true});
    auto eager_forward = [&](const Tensor& x) { return eager_model->forward(x); };
    for (int call = 0; call < 6; ++call) {
      INFO("call ", call);
      const Tensor x = batch(call), target = batch(500 + call, {5, 4});
      manual_seed(77 + static_cast<uint64_t>(call));  // the same dropout masks in both runs
      const Tensor compiled_loss = train(compiled_forward, compiled_model, compiled_optimizer, x, target);
      manual_seed(77 + static_cast<uint64_t>(call));
      const Tensor eager_loss = train(eager_forward, eager_model, eager_optimizer, x, target);
      CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-5);
      check_grads(compiled_model, eager_model);
    }
    CHECK(compiled_forward.state().captures() == 1);
    CHECK(compiled_forward.state().replays() == 4);
    CHECK_FALSE(compiled_forward.state().fell_back_to_eager());
  }
}

TEST_CASE("compile: gradients reach the inputs, their earlier history, and several results") {
  nn::Sequential compiled_model = mlp(), eager_model = mlp();
  // Two results (the hidden layer and the output); the second input is multiplied in.
  auto body = [](nn::Sequential& model, const Tensor& x, const Tensor& scale) {
    const Tensor hidden = relu(model->at<nn::LinearImpl>(0)->forward(mul(x, scale)));
    return std::pair<Tensor, Tensor>{hidden, model->at<nn::LinearImpl>(2)->forward(hidden)};
  };
  auto compiled = ember::compile([&](const Tensor& x, const Tensor& scale) { return body(compiled_model, x, scale); });
  for (int call = 0; call < 5; ++call) {
    INFO("call ", call);
    compiled_model->zero_grad();
    eager_model->zero_grad();
    // x is a leaf; scale has history made before the call (from a leaf `base`).
    Tensor x = batch(call).requires_grad_(), base = batch(40 + call, {1, 6}).requires_grad_();
    Tensor x2 = x.detach().requires_grad_(), base2 = base.detach().requires_grad_();
    const auto [hidden, out] = compiled(x, mul(base, 2.0));
    const auto [hidden2, out2] = body(eager_model, x2, mul(base2, 2.0));
    REQUIRE(out.requires_grad());
    CHECK(graph_test::max_relative_error(out, out2) <= 1e-6);
    // Only the output's sum at odd calls: the hidden result then receives no gradient at all.
    Tensor loss = call % 2 == 0 ? add(sum(mul(out, out)), sum(hidden)) : sum(mul(out, out));
    Tensor loss2 = call % 2 == 0 ? add(sum(mul(out2, out2)), sum(hidden2)) : sum(mul(out2, out2));
    loss.backward();
    loss2.backward();
    CHECK(graph_test::max_relative_error(x.grad(), x2.grad()) <= 1e-5);
    CHECK(graph_test::max_relative_error(base.grad(), base2.grad()) <= 1e-5);
    check_grads(compiled_model, eager_model);
  }
  CHECK(compiled.state().replays() == 3);
}

TEST_CASE("compile: two compiled forwards before one backward, and retain_graph, as eager") {
  nn::Sequential compiled_model = mlp(), eager_model = mlp();
  auto forward = ember::compile([&](const Tensor& x) { return compiled_model->forward(x); });
  for (int call = 0; call < 4; ++call) {
    INFO("call ", call);
    compiled_model->zero_grad();
    eager_model->zero_grad();
    Tensor loss = add(sum(forward(batch(call))), sum(mul(forward(batch(call + 10)), 3.0)));
    Tensor loss2 = add(sum(eager_model->forward(batch(call))), sum(mul(eager_model->forward(batch(call + 10)), 3.0)));
    loss.backward({}, /*retain_graph=*/true);
    loss2.backward({}, /*retain_graph=*/true);
    loss.backward();  // twice: the gradients add up
    loss2.backward();
    check_grads(compiled_model, eager_model);
    // A third time, the saved tensors are gone in both.
    CHECK_THROWS_WITH_AS(loss2.backward(), doctest::Contains("a second time"), Error);
    CHECK_THROWS_WITH_AS(loss.backward(), doctest::Contains("a second time"), Error);
  }
  CHECK(forward.state().replays() == 6);  // two calls per round, less the warm-up and the capture
}

TEST_CASE("compile: a weight changed in place between forward and backward is an error, as in eager") {
  nn::Sequential model = mlp();
  auto forward = ember::compile([&](const Tensor& x) { return model->forward(x); });
  for (int call = 0; call < 3; ++call) {
    Tensor loss = sum(forward(batch(call)));
    {
      NoGradGuard no_grad;
      model->at<nn::LinearImpl>(2)->weight.mul_(0.5);
    }
    INFO("call ", call);
    CHECK_THROWS_WITH_AS(loss.backward(), doctest::Contains("modified by an in-place operation"), Error);
  }
  CHECK(forward.state().replays() == 1);
}

TEST_CASE("compile: freezing a parameter after the capture recompiles, it gets no gradient") {
  nn::Sequential compiled_model = mlp(), eager_model = mlp();
  auto forward = ember::compile([&](const Tensor& x) { return compiled_model->forward(x); });
  for (int call = 0; call < 5; ++call) {
    INFO("call ", call);
    if (call == 3) {
      compiled_model->at<nn::LinearImpl>(0)->weight.requires_grad_(false);
      eager_model->at<nn::LinearImpl>(0)->weight.requires_grad_(false);
    }
    compiled_model->zero_grad();
    eager_model->zero_grad();
    sum(forward(batch(call))).backward();
    sum(eager_model->forward(batch(call))).backward();
    check_grads(compiled_model, eager_model);
  }
  CHECK(forward.state().captures() == 2);
  REQUIRE(forward.state().recompile_reasons().size() == 1);
  CHECK(forward.state().recompile_reasons()[0].find("does not require grad now") != std::string::npos);
}

TEST_CASE("compile: a training step that returns its loss undetached replays without capturing a backward") {
  nn::Sequential compiled_model = mlp(), eager_model = mlp();
  optim::SGD compiled_optimizer(compiled_model->parameters(), {.lr = 0.1});
  optim::SGD eager_optimizer(eager_model->parameters(), {.lr = 0.1});
  auto step_of = [](nn::Sequential& model, optim::SGD& optimizer, const Tensor& x) {
    optimizer.zero_grad();
    Tensor loss = sum(mul(model->forward(x), model->forward(x)));
    loss.backward();
    optimizer.step();
    return loss;  // its history was freed by backward()
  };
  auto step = ember::compile([&](const Tensor& x) { return step_of(compiled_model, compiled_optimizer, x); },
                             {.fullgraph = true});
  for (int call = 0; call < 4; ++call) {
    INFO("call ", call);
    CHECK(graph_test::max_relative_error(step(batch(call)), step_of(eager_model, eager_optimizer, batch(call))) <= 1e-5);
    check_grads(compiled_model, eager_model);
  }
  CHECK(step.state().replays() == 2);
}

namespace {
// With fullgraph, the capture (call 1, after call 0's warm-up) of `body` breaks on a gradient hook.
void check_hook_breaks_fullgraph(const std::function<Tensor(const Tensor&)>& body) {
  auto full = ember::compile(body, {.fullgraph = true});
  full(batch(0));
  CHECK_THROWS_WITH_AS(full(batch(1)), doctest::Contains("gradient hook"), graph::GraphBreak);
}
}  // namespace

TEST_CASE("compile: a gradient hook inside a compiled forward is a graph break") {
  nn::Sequential model = mlp();
  const auto body = [&](const Tensor& x) {
    Tensor hidden = model->at<nn::LinearImpl>(0)->forward(x);
    hidden.register_hook([](const Tensor& grad) { return mul(grad, 2.0); });
    return model->at<nn::LinearImpl>(2)->forward(relu(hidden));
  };
  check_hook_breaks_fullgraph(body);

  // Without fullgraph the forward runs as a compiled segment, and the hook with eager's backward.
  nn::Sequential reference = mlp();
  auto relaxed = ember::compile(body);
  for (int call = 0; call < 3; ++call) {
    model->zero_grad();
    reference->zero_grad();
    sum(relaxed(batch(call))).backward();
    Tensor hidden = reference->at<nn::LinearImpl>(0)->forward(batch(call));
    hidden.register_hook([](const Tensor& grad) { return mul(grad, 2.0); });
    sum(reference->at<nn::LinearImpl>(2)->forward(relu(hidden))).backward();
    check_grads(model, reference);
  }
  CHECK_FALSE(relaxed.state().fell_back_to_eager());
  CHECK(relaxed.state().segmented_calls() == 1);  // call 0 warmed up, call 1 was the capture that broke
}

TEST_CASE("compile: an in-place update of an argument with history is a graph break that says so") {
  // Eager moves x's history onto the update; a replay would not, so the capture breaks, and the
  // reason names the argument rather than "a tensor the function neither receives nor reads".
  auto full = ember::compile([](const Tensor& x) {
    Tensor(x).mul_(3.0);
    return sum(mul(x, x));
  }, {.fullgraph = true});
  for (int call = 0; call < 2; ++call) {
    manual_seed(40 + static_cast<uint64_t>(call));
    const Tensor parameter = randn({4}).requires_grad_();
    const Tensor x = mul(parameter, 2.0);
    if (call == 0) {
      const std::vector<float> p = parameter.to_vector<float>();
      const Tensor result = full(x);  // the eager warm-up: sum((3 * 2p)^2) = 36 sum(p^2)
      double expected = 0;
      for (float value : p) expected += 36.0 * value * value;
      CHECK(result.item() == doctest::Approx(expected).epsilon(1e-5));
      continue;
    }
    CHECK_THROWS_WITH_AS(full(x), doctest::Contains("the history input 0 had before the function updated it in "
                                                    "place"),
                         graph::GraphBreak);
  }
}

TEST_CASE("compile: a compiled forward called inside a compiled step is captured inline") {
  nn::Sequential compiled_model = mlp(), eager_model = mlp();
  optim::SGD compiled_optimizer(compiled_model->parameters(), {.lr = 0.1});
  optim::SGD eager_optimizer(eager_model->parameters(), {.lr = 0.1});
  auto forward = ember::compile([&](const Tensor& x) { return compiled_model->forward(x); });
  auto step = ember::compile(
      [&](const Tensor& x, const Tensor& target) { return train(forward, compiled_model, compiled_optimizer, x, target); },
      {.fullgraph = true});
  auto eager_forward = [&](const Tensor& x) { return eager_model->forward(x); };
  for (int call = 0; call < 4; ++call) {
    INFO("call ", call);
    const Tensor x = batch(call), target = batch(500 + call, {5, 4});
    CHECK(graph_test::max_relative_error(step(x, target), train(eager_forward, eager_model, eager_optimizer, x, target)) <= 1e-5);
    check_grads(compiled_model, eager_model);
  }
  CHECK(step.state().replays() == 2);
  CHECK(forward.state().captures() == 0);  // every call it saw was inside the step's capture or warm-up
}

TEST_CASE("compile: a result the backward needs, changed in place before backward, is an error as in eager") {
  nn::Sequential model = mlp();
  const auto body = [&](const Tensor& x) {
    const Tensor hidden = relu(model->at<nn::LinearImpl>(0)->forward(x));  // saved by the next layer
    return std::pair<Tensor, Tensor>{hidden, model->at<nn::LinearImpl>(2)->forward(hidden)};
  };
  auto forward = ember::compile(body);
  for (int call = 0; call < 4; ++call) {
    INFO("call ", call);
    auto [hidden, out] = forward(batch(call));
    hidden.mul_(2.0);
    CHECK_THROWS_WITH_AS(sum(out).backward(), doctest::Contains("modified by an in-place operation"), Error);
    auto [clean_hidden, clean_out] = forward(batch(call));  // untouched results: backward works
    sum(clean_out).backward();
    CHECK(model->parameters()[0].grad().defined());
  }
  CHECK(forward.state().replays() == 6);
}

TEST_CASE("compile: results that are views, a view of an input, or the same tensor twice carry gradients") {
  nn::Sequential compiled_model = mlp(), eager_model = mlp();
  const auto body = [](nn::Sequential& model, const Tensor& x) {
    const Tensor out = model->forward(x);
    return std::vector<Tensor>{out.t(), out, out, x.t(), sum(out, {1})};
  };
  auto compiled = ember::compile([&](const Tensor& x) { return body(compiled_model, x); });
  for (int call = 0; call < 4; ++call) {
    INFO("call ", call);
    compiled_model->zero_grad();
    eager_model->zero_grad();
    Tensor x = batch(call).requires_grad_(), x2 = batch(call).requires_grad_();
    const std::vector<Tensor> r = compiled(x), e = body(eager_model, x2);
    const auto loss_of = [](const std::vector<Tensor>& v) {
      return add(add(sum(mul(v[0], v[0])), sum(mul(v[1], 2.0))),
                 add(sum(mul(v[2], v[2])), add(sum(mul(v[3], v[3])), sum(exp(mul(v[4], 0.1))))));
    };
    loss_of(r).backward();
    loss_of(e).backward();
    CHECK(graph_test::max_relative_error(x.grad(), x2.grad()) <= 1e-5);
    check_grads(compiled_model, eager_model);
  }
  CHECK(compiled.state().replays() == 2);
}

TEST_CASE("compile: retain_grad inside a compiled forward is a graph break, and eager's .grad is kept") {
  nn::Sequential model = mlp();
  Tensor hidden;
  const auto body = [&](const Tensor& x) {
    hidden = model->at<nn::LinearImpl>(0)->forward(x);
    hidden.retain_grad();
    return model->at<nn::LinearImpl>(2)->forward(relu(hidden));
  };
  check_hook_breaks_fullgraph(body);

  nn::Sequential reference = mlp();
  auto relaxed = ember::compile(body);
  for (int call = 0; call < 3; ++call) {
    INFO("call ", call);
    sum(relaxed(batch(call))).backward();
    const Tensor compiled_grad = hidden.grad();
    Tensor expected = reference->at<nn::LinearImpl>(0)->forward(batch(call));
    expected.retain_grad();
    sum(reference->at<nn::LinearImpl>(2)->forward(relu(expected))).backward();
    REQUIRE(compiled_grad.defined());
    CHECK(graph_test::max_relative_error(compiled_grad, expected.grad()) <= 1e-6);
  }
}

namespace {
// Multiplies a float32 tensor by `scale`: through an ember op, or (not traceable) a loop over its
// memory, as a hand-written kernel would, which no dispatch mode sees.
template <bool Traceable>
Tensor scaled(const Tensor& tensor, double scale) {
  if constexpr (Traceable) return mul(tensor, scale);
  Tensor result = tensor.clone();
  float* data = result.data_ptr<float>();
  for (int64_t i = 0; i < result.numel(); ++i) data[i] = static_cast<float>(data[i] * scale);
  return result;
}

// scale (x W^T + b) as a custom autograd function, marked is_traceable when it computes only
// through ember ops.
template <bool Traceable>
struct HalfLinear : autograd::Function<HalfLinear<Traceable>> {
  static constexpr bool is_traceable = Traceable;
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x, const Tensor& weight, const Tensor& bias,
                        double scale) {
    ctx->save_for_backward({x, weight});
    ctx->saved_data["scale"] = scale;
    return scaled<Traceable>(add(matmul(x, weight.t()), bias), scale);
  }
  static autograd::tensor_list backward(autograd::AutogradContext* ctx, autograd::tensor_list grad_outputs) {
    const autograd::tensor_list saved = ctx->get_saved_variables();
    const Tensor grad = scaled<Traceable>(grad_outputs[0], ctx->saved_data["scale"].toDouble());
    return {matmul(grad, saved[1]), matmul(grad.t(), saved[0]), sum(grad, {0}), Tensor()};
  }
};

template <bool Traceable>
Tensor half_linear_model(nn::Sequential& model, const Tensor& x) {
  auto& first = *model->at<nn::LinearImpl>(0);
  return model->at<nn::LinearImpl>(2)->forward(relu(HalfLinear<Traceable>::apply(x, first.weight, first.bias, 0.5)));
}
}  // namespace

TEST_CASE("compile: a custom autograd function's forward and backward are captured and replay as eager") {
  // Its forward and backward call registry ops, which the capture records like fn's own: the
  // backward inside a compiled training step, and the backward of a compiled forward's results.
  const auto forward = [](nn::Sequential& model, const Tensor& x) { return half_linear_model<true>(model, x); };
  for (const bool whole_step : {true, false}) {
    INFO("whole step ", whole_step);
    nn::Sequential compiled_model = mlp(), eager_model = mlp();
    optim::SGD compiled_optimizer(compiled_model->parameters(), {.lr = 0.05, .momentum = 0.9});
    optim::SGD eager_optimizer(eager_model->parameters(), {.lr = 0.05, .momentum = 0.9});
    const auto step = [&](nn::Sequential& model, optim::SGD& optimizer, const Tensor& x, const Tensor& target) {
      optimizer.zero_grad();
      Tensor loss = mse_loss(forward(model, x), target);
      loss.backward();
      optimizer.step();
      return loss.detach();
    };
    auto compiled_step = ember::compile(
        [&](const Tensor& x, const Tensor& target) { return step(compiled_model, compiled_optimizer, x, target); },
        {.fullgraph = true});
    auto compiled_forward =
        ember::compile([&](const Tensor& x) { return forward(compiled_model, x); }, {.fullgraph = true});
    auto eager_forward = [&](const Tensor& x) { return forward(eager_model, x); };
    for (int call = 0; call < 5; ++call) {
      INFO("call ", call);
      const Tensor x = batch(call), target = batch(500 + call, {5, 4});
      const Tensor compiled_loss = whole_step ? compiled_step(x, target)
                                              : train(compiled_forward, compiled_model, compiled_optimizer, x, target);
      const Tensor eager_loss = whole_step ? step(eager_model, eager_optimizer, x, target)
                                           : train(eager_forward, eager_model, eager_optimizer, x, target);
      CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-5);
      check_grads(compiled_model, eager_model);
    }
    const graph::CompiledFunction& state = whole_step ? compiled_step.state() : compiled_forward.state();
    CHECK(state.captures() == 1);
    CHECK(state.replays() == 3);
    CHECK(state.graph_breaks().empty());
  }
  // Not marked is_traceable, its C++ could read tensor memory directly: the capture breaks there,
  // naming it, and without fullgraph the step runs as compiled segments, as eager.
  const auto opaque_step = [](nn::Sequential& model, optim::SGD& optimizer, const Tensor& x, const Tensor& target) {
    optimizer.zero_grad();
    Tensor loss = mse_loss(half_linear_model<false>(model, x), target);
    loss.backward();
    optimizer.step();
    return loss.detach();
  };
  nn::Sequential strict_model = mlp(), compiled_model = mlp(), eager_model = mlp();
  optim::SGD strict_optimizer(strict_model->parameters(), {.lr = 0.05});
  optim::SGD compiled_optimizer(compiled_model->parameters(), {.lr = 0.05});
  optim::SGD eager_optimizer(eager_model->parameters(), {.lr = 0.05});
  auto strict = ember::compile(
      [&](const Tensor& x, const Tensor& target) { return opaque_step(strict_model, strict_optimizer, x, target); },
      {.fullgraph = true});
  strict(batch(0), batch(500, {5, 4}));  // the warm-up call runs eagerly
  CHECK_THROWS_WITH_AS(strict(batch(1), batch(501, {5, 4})),
                       doctest::Contains("HalfLinear<false>::forward (a custom autograd function not marked is_traceable)"),
                       graph::GraphBreak);
  auto segmented = ember::compile(
      [&](const Tensor& x, const Tensor& target) { return opaque_step(compiled_model, compiled_optimizer, x, target); },
      {.compile_every_segment = true});
  for (int call = 0; call < 4; ++call) {
    INFO("opaque call ", call);
    const Tensor x = batch(call), target = batch(500 + call, {5, 4});
    const Tensor compiled_loss = segmented(x, target);
    CHECK(graph_test::max_relative_error(compiled_loss, opaque_step(eager_model, eager_optimizer, x, target)) <= 1e-5);
    check_grads(compiled_model, eager_model);
  }
  CHECK_FALSE(segmented.state().graph_breaks().empty());
}

}  // namespace test_compile_autograd
