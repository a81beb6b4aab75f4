// ember::compile of a forward whose results require grad, in other precisions and on CUDA: a
// float64 function against central finite differences, bf16 autocast and an fp16 forward under a
// GradScaler against eager, and the default and reduce_overhead modes against eager on a GPU.
// The rest of the compiled-autograd cases are test_compile_autograd.cpp.
#include <doctest/doctest.h>

#include "compile_autograd_util.h"
#include "fusion_test_util.h"
#include "skip_case.h"
#include "graph/compile.h"
#include "runtime/amp/grad_scaler.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/sgd.h"

namespace test_compile_autograd_precision {

using namespace ember;
using namespace ember::compile_autograd_test;

TEST_CASE("compile: gradients through a compiled float64 function match central finite differences") {
  manual_seed(7);
  Tensor w = randn({4, 3}, {.dtype = kFloat64}).requires_grad_();
  const auto f = [&](const Tensor& x) { return sum(mul(tanh(matmul(x, w)), exp(mul(x.sum({1}, true), 0.3)))); };
  auto compiled = ember::compile(f, {.fullgraph = true});
  const Tensor x0 = randn({5, 4}, {.dtype = kFloat64});
  Tensor x = x0.clone().requires_grad_();
  for (int call = 0; call < 3; ++call) {  // the third call replays
    x.set_grad({});
    w.set_grad({});
    compiled(x).backward();
  }
  REQUIRE(compiled.state().replays() == 1);
  // Central differences of the eager function, one element at a time (f is smooth; h = 1e-6).
  const auto numeric = [&](Tensor target, int64_t flat) {
    NoGradGuard no_grad;
    Tensor element = target.view({-1}).select(0, flat);
    const double saved = element.item(), h = 1e-6;
    element.fill_(saved + h);
    const double up = f(x0.clone()).item();  // x0 stands for x (same values)
    element.fill_(saved - h);
    const double down = f(x0.clone()).item();
    element.fill_(saved);
    return (up - down) / (2 * h);
  };
  const Tensor x_grad = x.grad().clone(), w_grad = w.grad().clone();
  for (int64_t i = 0; i < x0.numel(); ++i) {
    INFO("x element ", i);
    CHECK(x_grad.view({-1}).select(0, i).item() == doctest::Approx(numeric(x0, i)).epsilon(1e-7));
  }
  for (int64_t i = 0; i < w.numel(); ++i) {
    INFO("w element ", i);
    CHECK(w_grad.view({-1}).select(0, i).item() == doctest::Approx(numeric(w, i)).epsilon(1e-7));
  }
}

TEST_CASE("compile: a compiled forward under bf16 autocast gives eager's gradients") {
  nn::Sequential compiled_model = mlp(), eager_model = mlp();
  const auto body = [](nn::Sequential& model, const Tensor& x) {
    const AutocastGuard autocast(kBFloat16, true);  // GEMMs in bf16, the rest as autocast decides
    return mse_loss(model->forward(x), zeros({5, 4}));
  };
  auto forward = ember::compile([&](const Tensor& x) { return body(compiled_model, x); }, {.fullgraph = true});
  for (int call = 0; call < 4; ++call) {
    INFO("call ", call);
    compiled_model->zero_grad();
    eager_model->zero_grad();
    const Tensor loss = forward(batch(call)), expected = body(eager_model, batch(call));
    CHECK(graph_test::max_relative_error(loss, expected) <= 1e-6);
    loss.backward();
    expected.backward();
    check_grads(compiled_model, eager_model);
  }
  CHECK(forward.state().replays() == 2);
}

TEST_CASE("compile: a compiled fp16 forward with GradScaler outside trains as eager (no graph break)") {
  // GradScaler::step reads found_inf on the host, a break inside a compiled step; with only the
  // forward compiled, scaling, the skip and the update stay eager around it.
  nn::Sequential compiled_model = mlp(), eager_model = mlp();
  optim::SGD compiled_optimizer(compiled_model->parameters(), {.lr = 0.05});
  optim::SGD eager_optimizer(eager_model->parameters(), {.lr = 0.05});
  // Far too high at first: the fp16 backward overflows, steps are skipped and the scale backs off.
  amp::GradScaler compiled_scaler({.init_scale = 268435456.0, .growth_interval = 2});
  amp::GradScaler eager_scaler({.init_scale = 268435456.0, .growth_interval = 2});
  const auto loss_of = [](nn::Sequential& model, const Tensor& x, const Tensor& target) {
    const AutocastGuard autocast(kFloat16, true);
    return mse_loss(model->forward(x), target);
  };
  auto forward = ember::compile(
      [&](const Tensor& x, const Tensor& target) { return loss_of(compiled_model, x, target); }, {.fullgraph = true});
  const auto train = [](auto& loss_fn, optim::SGD& optimizer, amp::GradScaler& scaler, const Tensor& x,
                        const Tensor& target) {
    optimizer.zero_grad();
    Tensor loss = loss_fn(x, target);
    scaler.scale(loss).backward();
    scaler.step(optimizer);
    scaler.update();
    return loss.detach();
  };
  auto eager_loss = [&](const Tensor& x, const Tensor& target) { return loss_of(eager_model, x, target); };
  for (int call = 0; call < 6; ++call) {
    INFO("call ", call);
    const Tensor x = batch(call), target = batch(600 + call, {5, 4});
    const Tensor a = train(forward, compiled_optimizer, compiled_scaler, x, target);
    const Tensor e = train(eager_loss, eager_optimizer, eager_scaler, x, target);
    CHECK(graph_test::max_relative_error(a, e) <= 1e-6);
    CHECK(compiled_scaler.get_scale() == eager_scaler.get_scale());
    check_grads(compiled_model, eager_model);
  }
  CHECK(forward.state().replays() == 4);
  CHECK_FALSE(forward.state().fell_back_to_eager());
  CHECK(compiled_scaler.get_scale() < 268435456.0);  // it did back off
}

TEST_CASE("cuda compile: backward through a compiled forward, default and reduce_overhead, equals eager on cuda") {
  if (!ember::testing::cuda_or_skip()) return;
  const Device cuda = Device::parse("cuda");
  for (const char* mode : {"default", "reduce_overhead"}) {
    INFO("mode ", mode);
    nn::Sequential compiled_model = mlp(), eager_model = mlp();
    compiled_model->to(cuda);
    eager_model->to(cuda);
    auto forward = ember::compile([&](const Tensor& x) { return compiled_model->forward(x); },
                                  {.fullgraph = true, .mode = mode});
    for (int call = 0; call < 5; ++call) {
      INFO("call ", call);
      compiled_model->zero_grad();
      eager_model->zero_grad();
      const Tensor x = batch(call).to(cuda);
      sum(mul(forward(x), forward(x))).backward();
      sum(mul(eager_model->forward(x), eager_model->forward(x))).backward();
      const std::vector<Tensor> a = compiled_model->parameters(), e = eager_model->parameters();
      for (size_t i = 0; i < a.size(); ++i)
        CHECK(graph_test::max_relative_error(a[i].grad().to(kCPU), e[i].grad().to(kCPU)) <= 1e-5);
    }
    CHECK(forward.state().replays() == 8);  // two calls per round, less the warm-up and the capture
  }
}

}  // namespace test_compile_autograd_precision
