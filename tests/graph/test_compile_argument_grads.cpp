// ember::compile and the .grad of fn's arguments: a backward() inside fn fills an argument's .grad
// as in eager mode (the gradient of an input for a saliency map, an input that an optimizer over
// it updates between calls, a weight passed in and stepped by fn), whether the argument is a new
// tensor each call, one that accumulates, or one whose .grad the caller clears or replaces.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "graph/compile.h"
#include "graph/ir.h"
#include "graph_test_util.h"
#include "runtime/optim/sgd.h"

namespace test_compile_argument_grads {

using namespace ember;
using graph_test::bit_equal;

namespace {

// loss = sum(tanh(x w)), with backward() inside: fills x.grad and w.grad where they require grad.
Tensor loss_backward(const Tensor& x, const Tensor& w) {
  Tensor loss = sum(tanh(mm(x, w)));
  loss.backward();
  return loss.detach();
}

Tensor batch(int call) {
  manual_seed(200 + static_cast<uint64_t>(call));
  return randn({2, 4});
}

// Both .grad unset, or both set with the same bits.
void check_same_grad(const Tensor& actual, const Tensor& expected) {
  REQUIRE(actual.grad().defined() == expected.grad().defined());
  if (expected.grad().defined()) CHECK(bit_equal(actual.grad(), expected.grad()));
}

}  // namespace

TEST_CASE("compile: backward() inside fn sets the .grad of a new argument requiring grad at every call") {
  manual_seed(1);
  Tensor w_eager = randn({4, 3}).requires_grad_();
  Tensor w_compiled = w_eager.detach().clone().requires_grad_();
  auto saliency = ember::compile([&](const Tensor& x) { return loss_backward(x, w_compiled); }, {.fullgraph = true});
  for (int call = 0; call < 5; ++call) {
    INFO("call ", call);
    const Tensor x = batch(call);
    const Tensor x_eager = x.clone().requires_grad_();
    const Tensor x_compiled = x.clone().requires_grad_();
    CHECK(bit_equal(saliency(x_compiled), loss_backward(x_eager, w_eager)));
    check_same_grad(x_compiled, x_eager);
    check_same_grad(w_compiled, w_eager);  // accumulates over the calls in both
  }
  CHECK(saliency.state().captures_made() == 1);
  CHECK(saliency.state().replays() == 3);
  REQUIRE(saliency.state().graph() != nullptr);
  CHECK(graph::to_text(*saliency.state().graph()).find("set_grad(%x0, ") != std::string::npos);
}

TEST_CASE("compile: an argument whose .grad accumulates over calls, cleared or replaced by the caller") {
  // Per call, what the caller does to x.grad first: keep it ('.'), clear it ('z': an optimizer
  // over x with set_to_none), or replace it by zeros while still holding the old tensor ('r').
  for (const std::string pattern : {"....", "z.z.z.", "zzzz", "..r.r.", "r..z.r"}) {
    for (const int warmup : {0, 1}) {
      INFO(pattern, ", warmup_calls ", warmup);
      manual_seed(2);
      const Tensor w = randn({4, 3});
      Tensor x_eager = randn({2, 4}).requires_grad_();
      Tensor x_compiled = x_eager.detach().clone().requires_grad_();
      auto step = ember::compile([&](const Tensor& x) { return loss_backward(x, w); },
                                 {.fullgraph = true, .warmup_calls = warmup});
      std::vector<Tensor> replaced;  // the caller still holds them: a replay must not write into them
      for (size_t call = 0; call < pattern.size(); ++call) {
        INFO("call ", call);
        if (pattern[call] == 'z') {
          x_eager.set_grad({});
          x_compiled.set_grad({});
        }
        if (pattern[call] == 'r' && x_compiled.grad().defined()) {
          replaced.push_back(x_compiled.grad());
          x_eager.set_grad(zeros({2, 4}));
          x_compiled.set_grad(zeros({2, 4}));
        }
        const std::vector<float> held_before =
            replaced.empty() ? std::vector<float>{} : replaced.back().to_vector<float>();
        CHECK(bit_equal(step(x_compiled), loss_backward(x_eager, w)));
        check_same_grad(x_compiled, x_eager);
        if (!replaced.empty()) CHECK(replaced.back().to_vector<float>() == held_before);
      }
      CHECK(step.state().captures_made() <= 2);  // one graph finding no .grad, one adding to it
    }
  }
}

TEST_CASE("compile: a graph installing an argument's whole .grad recompiles when the argument has one") {
  manual_seed(3);
  const Tensor w = randn({4, 3});
  const Tensor x = randn({2, 4}).requires_grad_();
  auto step = ember::compile([&](const Tensor& input) { return loss_backward(input, w); },
                             {.fullgraph = true, .warmup_calls = 0});
  step(x);
  step(x);
  REQUIRE(step.state().recompile_reasons().size() == 1);
  CHECK(step.state().recompile_reasons()[0].find("input 0 has a .grad, the graph was captured with none") !=
        std::string::npos);
}

TEST_CASE("compile: a weight passed as an argument and stepped by zero_grad, backward and SGD inside fn") {
  const auto train = [](optim::SGD& optimizer, const Tensor& x, const Tensor& w) {
    optimizer.zero_grad();
    Tensor loss = loss_backward(x, w);
    optimizer.step();
    return loss;
  };
  // Without a warm-up the capture finds no .grad on the weight, which fn clears first anyway.
  for (const int warmup : {0, 1}) {
    INFO("warmup_calls ", warmup);
    manual_seed(4);
    Tensor w_eager = randn({4, 3}).requires_grad_();
    Tensor w_compiled = w_eager.detach().clone().requires_grad_();
    optim::SGD eager_optimizer({w_eager}, {.lr = 0.1, .momentum = 0.9});
    optim::SGD compiled_optimizer({w_compiled}, {.lr = 0.1, .momentum = 0.9});
    auto step = ember::compile([&](const Tensor& x, const Tensor& w) { return train(compiled_optimizer, x, w); },
                               {.fullgraph = true, .warmup_calls = warmup});
    for (int call = 0; call < 6; ++call) {
      INFO("call ", call);
      const Tensor x = batch(call);
      CHECK(bit_equal(step(x, w_compiled), train(eager_optimizer, x, w_eager)));
      CHECK(bit_equal(w_compiled, w_eager));
      // What a logger or a second optimizer outside fn reads: this call's gradient.
      check_same_grad(w_compiled, w_eager);
    }
    CHECK(step.state().captures_made() == 1);
    CHECK(step.state().replays() == 5 - warmup);
  }
}

}  // namespace test_compile_argument_grads
