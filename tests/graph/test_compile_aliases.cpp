// ember::compile with tensors that share storage: views and detach()ed aliases updated in place,
// a parameter first reached through detach(), and the backward of a GEMM whose operand is a
// transposed view of an intermediate (autograd saves it as an alias made outside the dispatcher).
// Each compiled result must equal eager's, without a graph break under fullgraph.
#include <doctest/doctest.h>

#include "fusion_test_util.h"
#include "graph/capture.h"
#include "graph/compile.h"

using namespace ember;

namespace {

// base.add_ after a view was taken: the view shows the update.
Tensor update_base_read_view(const Tensor& x) {
  Tensor t = mul(x, 1.5);
  const Tensor view = t.t();
  t.add_(ones({4, 6}));
  return sum(mul(view, 2.0));
}

// view.mul_: the base shows the update.
Tensor update_view_read_base(const Tensor& x) {
  Tensor t = mul(x, 1.5);
  Tensor view = t.t();
  view.mul_(2.0);
  return sum(t);
}

// An update through a detach()ed alias, which autograd does not see; the tensor shows it.
Tensor update_detached_read_tensor(const Tensor& x) {
  Tensor t = mul(x, 1.5);
  t.detach().mul_(2.0);
  return sum(exp(t));
}

}  // namespace

TEST_CASE("compile: in-place updates through a view or a detach()ed alias are seen by the other tensor") {
  NoGradGuard no_grad;
  for (auto fn : {update_base_read_view, update_view_read_base, update_detached_read_tensor}) {
    for (const bool fuse : {true, false}) {
      INFO("fuse ", fuse);
      auto compiled = ember::compile(fn, {.fullgraph = true, .fuse = fuse});
      for (int call = 0; call < 3; ++call) {
        manual_seed(40 + static_cast<uint64_t>(call));
        const Tensor x = randn({4, 6});
        CHECK(graph_test::max_relative_error(compiled(x), fn(x)) == 0);
      }
      CHECK(compiled.state().replays() == 1);
    }
  }
}

TEST_CASE("compile: a parameter reached through detach() before its own first use is still the parameter") {
  struct Model {
    Tensor p;
    std::unique_ptr<optim::SGD> optimizer;
    Model() {
      manual_seed(5);
      p = randn({4, 6}).requires_grad_();
      optimizer = std::make_unique<optim::SGD>(std::vector<Tensor>{p}, optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
    }
    Tensor step(const Tensor& x) {
      optimizer->zero_grad();
      const Tensor scale = tanh(p.detach());  // read without history, before p itself
      Tensor loss = sum(mul(mul(p, x), scale));
      loss.backward();
      optimizer->step();
      return loss;
    }
  };
  Model eager, compiled;
  auto step = ember::compile([&](const Tensor& x) { return compiled.step(x); }, {.fullgraph = true});
  for (int call = 0; call < 4; ++call) {
    manual_seed(60 + static_cast<uint64_t>(call));
    const Tensor x = randn({4, 6});
    INFO("call ", call);
    CHECK(graph_test::max_relative_error(step(x), eager.step(x)) <= 1e-6);
    CHECK(graph_test::max_relative_error(compiled.p, eager.p) <= 1e-6);
    CHECK(graph_test::max_relative_error(compiled.p.grad(), eager.p.grad()) <= 1e-6);
  }
  // One capture: the alias was not lifted as a state of its own (a temporary, gone by the next call).
  CHECK(step.state().captures() == 1);
  CHECK(step.state().replays() == 2);
}

TEST_CASE("compile: the backward of a GEMM with a transposed intermediate operand is captured whole") {
  Tensor w = mul(randn({6, 6}), 0.3).detach().requires_grad_();
  auto step_fn = [&](const Tensor& x) {
    w.set_grad({});
    const Tensor h = tanh(mm(x, w));
    Tensor loss = sum(mm(h, h.t()));  // mm saves h and the view h^T, which share storage
    loss.backward();
    return loss;
  };
  auto compiled = ember::compile(step_fn, {.fullgraph = true});
  for (int call = 0; call < 3; ++call) {
    manual_seed(80 + static_cast<uint64_t>(call));
    const Tensor x = randn({4, 6});
    const Tensor loss = compiled(x);
    const Tensor compiled_grad = w.grad();
    const Tensor expected = step_fn(x);
    CHECK(graph_test::max_relative_error(loss, expected) <= 1e-6);
    CHECK(graph_test::max_relative_error(compiled_grad, w.grad()) <= 1e-6);
  }
  CHECK(compiled.state().replays() == 1);
}

TEST_CASE("compile: an update through a view while recording falls back to eager; fullgraph names the break") {
  // Autograd carries t[1:3] *= p[0:2] to t (CopySlices), but the capture cannot yet bind the
  // aliases autograd saves of t after a write through its view: a graph break, not a wrong graph.
  struct Step {
    Tensor p;
    Step() {
      manual_seed(9);
      p = randn({4, 6}).requires_grad_();
    }
    Tensor operator()(const Tensor& x) {
      p.set_grad(Tensor());
      Tensor t = mul(x, p);
      t.slice(0, 1, 3).mul_(p.slice(0, 0, 2));
      Tensor loss = sum(mul(t, t));
      loss.backward();
      return loss.detach();
    }
  };
  Step eager, fallback, strict;
  auto compiled = ember::compile([&](const Tensor& x) { return fallback(x); });
  for (int call = 0; call < 3; ++call) {
    manual_seed(60 + static_cast<uint64_t>(call));
    const Tensor x = randn({4, 6});
    CHECK(graph_test::max_relative_error(compiled(x), eager(x)) == 0);
    CHECK(graph_test::max_relative_error(fallback.p.grad(), eager.p.grad()) == 0);
  }
  CHECK(compiled.state().fell_back_to_eager());
  auto fullgraph = ember::compile([&](const Tensor& x) { return strict(x); }, {.fullgraph = true});
  (void)fullgraph(randn({4, 6}));  // the first call runs eagerly, the second captures
  CHECK_THROWS_WITH_AS(fullgraph(randn({4, 6})), doctest::Contains("graph break"), graph::GraphBreak);
}
