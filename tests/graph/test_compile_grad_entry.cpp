// ember::compile and the .grad a call finds on entry: backward adds to a gradient that is there
// and installs a new one where there is none, so a graph captured one way must not serve a call
// that finds the other. And gradients a compiled replay installed (slices of one arena) read by
// another compiled function: no needless recompile, and no graph break under fullgraph.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "compile_autograd_util.h"
#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/adam.h"

namespace test_compile_grad_entry {

using namespace ember;

namespace {

Tensor squared_sum_backward(const Tensor& w, const Tensor& x) {
  const Tensor y = mm(x, w);
  Tensor loss = sum(mul(y, y));
  loss.backward();
  return loss.detach();
}

struct Model {
  nn::Sequential layers;
  std::unique_ptr<optim::Adam> optimizer;
  Model() {
    manual_seed(5);
    layers = nn::Sequential(nn::Linear(8, 16), nn::Tanh(), nn::Linear(16, 4));
    optimizer = std::make_unique<optim::Adam>(layers->parameters(), optim::AdamOptions{.lr = 0.01});
  }
  Tensor forward_backward(const Tensor& x) {
    Tensor loss = sum(mul(layers->forward(x), layers->forward(x)));
    loss.backward();
    return loss.detach();
  }
  void update() {
    optimizer->step();
    optimizer->zero_grad();
  }
};

Tensor batch(int call) {
  manual_seed(100 + static_cast<uint64_t>(call));
  return randn({6, 8});
}

void check_grads(Model& actual, Model& expected) { compile_autograd_test::check_grads(actual.layers, expected.layers); }

}  // namespace

TEST_CASE("compile: backward into a .grad that is there adds to it, whichever state the capture saw") {
  // Each pattern: per call, whether the caller clears .grad before it ('z') or keeps it ('.').
  // With no warm-up the first capture sees no .grad; with one, the capture sees the warm-up's.
  for (const std::string pattern : {".z.z.z.z", "z..z..z..", "zz.zz.zz."}) {
    for (const int warmup : {0, 1}) {
      INFO(pattern, ", warmup_calls ", warmup);
      manual_seed(5);
      Tensor w_eager = randn({4, 3}).requires_grad_();
      Tensor w_compiled = w_eager.detach().clone().requires_grad_();
      auto accumulate = ember::compile([&](const Tensor& x) { return squared_sum_backward(w_compiled, x); },
                                       {.fullgraph = true, .warmup_calls = warmup});
      for (size_t call = 0; call < pattern.size(); ++call) {
        INFO("call ", call);
        if (pattern[call] == 'z') {
          w_eager.set_grad({});
          w_compiled.set_grad({});
        }
        manual_seed(300 + call);
        const Tensor x = randn({2, 4});
        CHECK(graph_test::max_relative_error(accumulate(x), squared_sum_backward(w_eager, x)) <= 1e-5);
        REQUIRE(w_compiled.grad().defined());
        CHECK(graph_test::max_relative_error(w_compiled.grad(), w_eager.grad()) <= 1e-5);
      }
      // One graph for each of the two cases (a .grad there, none), each replayed after.
      CHECK(accumulate.state().captures_made() == 2);
      CHECK(accumulate.state().replays() == static_cast<int>(pattern.size()) - 2 - warmup);
    }
  }
}

TEST_CASE("compile: a zero_grad inside the function makes the .grad found on entry irrelevant") {
  manual_seed(5);
  Tensor w_eager = randn({4, 3}).requires_grad_();
  Tensor w_compiled = w_eager.detach().clone().requires_grad_();
  auto fresh = [](Tensor& w, const Tensor& x) {
    w.set_grad({});
    return squared_sum_backward(w, x);
  };
  auto step = ember::compile([&](const Tensor& x) { return fresh(w_compiled, x); },
                             {.fullgraph = true, .warmup_calls = 0});
  for (int call = 0; call < 5; ++call) {
    manual_seed(400 + static_cast<uint64_t>(call));
    const Tensor x = randn({2, 4});
    CHECK(graph_test::max_relative_error(step(x), fresh(w_eager, x)) <= 1e-5);
    CHECK(graph_test::max_relative_error(w_compiled.grad(), w_eager.grad()) <= 1e-5);
  }
  CHECK(step.state().captures_made() == 1);
}

TEST_CASE("compile: gradients one compiled function installed are read by another without recompiling") {
  // The forward and backward compiled apart from the update (which reads and clears the
  // gradients), and two functions over the same parameters: one starts an accumulation, the
  // other adds to it. A replay installs all its gradients as slices of one buffer.
  SUBCASE("the update compiled apart") {
    Model eager, compiled;
    auto forward_backward = ember::compile([&](const Tensor& x) { return compiled.forward_backward(x); },
                                           {.fullgraph = true});
    auto update = ember::compile([&] { compiled.update(); }, {.fullgraph = true});
    for (int call = 0; call < 8; ++call) {
      INFO("call ", call);
      const Tensor x = batch(call);
      CHECK(graph_test::max_relative_error(forward_backward(x), eager.forward_backward(x)) <= 1e-5);
      check_grads(compiled, eager);
      update();
      eager.update();
      check_grads(compiled, eager);
    }
    CHECK(forward_backward.state().captures_made() == 1);
    CHECK(update.state().captures_made() == 1);
    CHECK(update.state().recompile_reasons().empty());
  }
  SUBCASE("a first micro-batch and the next ones") {
    Model eager, compiled;
    auto first = ember::compile([&](const Tensor& x) { return compiled.forward_backward(x); }, {.fullgraph = true});
    auto more = ember::compile([&](const Tensor& x) { return compiled.forward_backward(x); }, {.fullgraph = true});
    for (int call = 0; call < 12; ++call) {
      INFO("call ", call);
      const Tensor x = batch(call);
      if (call % 2 == 0) {
        eager.layers->zero_grad();
        compiled.layers->zero_grad();
        CHECK(graph_test::max_relative_error(first(x), eager.forward_backward(x)) <= 1e-5);
      } else {
        CHECK(graph_test::max_relative_error(more(x), eager.forward_backward(x)) <= 1e-5);
      }
      check_grads(compiled, eager);
    }
    CHECK(first.state().captures_made() == 1);
    CHECK(more.state().captures_made() == 1);
    CHECK(more.state().graph_breaks().empty());
  }
}

}  // namespace test_compile_grad_entry
