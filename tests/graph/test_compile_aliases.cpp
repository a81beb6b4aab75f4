// ember::compile with tensors that share storage: views and detach()ed aliases updated in place,
// a parameter first reached through detach(), and the backward of a GEMM whose operand is a
// transposed view of an intermediate (autograd saves it as an alias made outside the dispatcher),
// and fill_ / zero_ through expanded views. Each compiled result must equal eager's, without a
// graph break under fullgraph.
#include <doctest/doctest.h>

#include <vector>

#include "fusion_test_util.h"
#include "graph/capture.h"
#include "graph/compile.h"

namespace test_compile_aliases {

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

// The same expression of t before and after an update through t's view: two different sums.
Tensor read_base_before_and_after(const Tensor& x) {
  Tensor t = mul(x, 1.5);
  const Tensor before = sum(t);
  t.t().mul_(2.0);
  return add(before, mul(sum(t), 10.0));
}

// The same expression of a view before and after its base's update.
Tensor read_view_before_and_after(const Tensor& x) {
  Tensor t = exp(x);
  const Tensor row = t.select(0, 1);
  const Tensor before = sum(row);
  t.mul_(3.0);
  return add(before, mul(sum(row), 10.0));
}

// A copy made before the update must not become the updated buffer (x*1 is x only while x holds).
Tensor copy_before_update(const Tensor& x) {
  Tensor t = exp(x);
  const Tensor copy = mul(t, 1.0);
  t.slice(0, 0, 2).mul_(2.0);
  return add(copy, mul(t, 10.0));
}

// Each function compiled (fused and not) against eager over three calls, replayed once each.
void check_against_eager(std::initializer_list<Tensor (*)(const Tensor&)> functions, double tolerance) {
  NoGradGuard no_grad;
  for (auto fn : functions) {
    for (const bool fuse : {true, false}) {
      INFO("fuse ", fuse);
      auto compiled = ember::compile(fn, {.fullgraph = true, .fuse = fuse});
      for (int call = 0; call < 3; ++call) {
        manual_seed(40 + static_cast<uint64_t>(call));
        const Tensor x = randn({4, 6});
        CHECK(graph_test::max_relative_error(compiled(x), fn(x)) <= tolerance);
      }
      CHECK(compiled.state().replays() == 1);
    }
  }
}

}  // namespace

TEST_CASE("compile: in-place updates through a view or a detach()ed alias are seen by the other tensor") {
  check_against_eager({update_base_read_view, update_view_read_base, update_detached_read_tensor}, 0.0);
}

TEST_CASE("compile: reads of one buffer before and after an in-place write are not merged") {
  // The IR keeps views and in-place results as aliases of one buffer, so these reads share a
  // value id; CSE once merged each pair (a silently wrong result under fullgraph).
  check_against_eager({read_base_before_and_after, read_view_before_and_after, copy_before_update}, 1e-6);
}

TEST_CASE("compile: a state tensor and a view of it made before compile are one buffer") {
  NoGradGuard no_grad;
  manual_seed(3);
  const Tensor init = randn({4, 6});
  Tensor w_eager = init.clone(), w_compiled = init.clone();
  const Tensor wt_eager = w_eager.t(), wt_compiled = w_compiled.t();
  auto step = [](Tensor& w, const Tensor& w_t, const Tensor& x) {
    const Tensor before = sum(exp(w_t));
    w.add_(x);
    return add(before, mul(sum(exp(w_t)), 10.0));
  };
  auto compiled = ember::compile([&](const Tensor& x) { return step(w_compiled, wt_compiled, x); }, {.fullgraph = true});
  for (int call = 0; call < 4; ++call) {
    manual_seed(40 + static_cast<uint64_t>(call));
    const Tensor x = mul(randn({4, 6}), 0.1);
    INFO("call ", call);
    CHECK(graph_test::max_relative_error(compiled(x), step(w_eager, wt_eager, x)) <= 1e-6);
    CHECK(graph_test::max_relative_error(w_compiled, w_eager) <= 1e-6);
  }
  REQUIRE(compiled.state().graph() != nullptr);
  CHECK(compiled.state().graph()->shared_buffers.size() == 1);
}

TEST_CASE("compile: arguments that share a buffer are a variant of their own") {
  NoGradGuard no_grad;
  auto fn = [](const Tensor& a, const Tensor& b) {
    const Tensor before = sum(exp(b));
    Tensor(a).mul_(0.5);  // a handle of the same tensor
    return add(before, mul(sum(exp(b)), 10.0));
  };
  auto compiled = ember::compile(fn, {.fullgraph = true});
  for (int call = 0; call < 5; ++call) {
    manual_seed(70 + static_cast<uint64_t>(call));
    const Tensor a = randn({4, 6}), b = randn({4, 6});
    const bool shared = call >= 2;  // calls 0-1: warm-up and capture apart; 2-4: one buffer
    INFO("call ", call);
    // A detach()ed alias: another tensor on the same buffer (the same tensor twice is one value).
    Tensor expected_a = a.clone(), expected_b = shared ? expected_a.detach() : b.clone();
    const Tensor expected = fn(expected_a, expected_b);
    const Tensor actual = compiled(a, shared ? a.detach() : b);
    CHECK(graph_test::max_relative_error(actual, expected) <= 1e-6);
    CHECK(graph_test::max_relative_error(a, expected_a) == 0);
  }
  CHECK(compiled.state().captures() == 2);
  CHECK(compiled.state().replays() == 2);
  REQUIRE(compiled.state().recompile_reasons().size() == 1);
  CHECK(compiled.state().recompile_reasons()[0] ==
        "input 1 shares memory with input 0 (another tensor over the same bytes), the graph was captured with no "
        "other input or state");
}

TEST_CASE("compile: arguments in disjoint parts of one buffer are separate, overlapping parts are a variant") {
  NoGradGuard no_grad;
  auto fn = [](const Tensor& a, const Tensor& b) {
    const Tensor before = sum(exp(b));
    Tensor(a).mul_(0.5);
    return add(before, mul(sum(exp(b)), 10.0));
  };
  auto compiled = ember::compile(fn, {.fullgraph = true});
  // Calls 0-1: separate tensors (warm-up, capture); 2-3: rows 0-3 and 4-7 of one [8, 6] tensor,
  // which the same graph serves; 4-5: rows 0-3 and 2-5, which share rows 2-3: a new variant.
  for (int call = 0; call < 6; ++call) {
    INFO("call ", call);
    manual_seed(90 + static_cast<uint64_t>(call));
    const Tensor base = randn({8, 6});
    const int64_t b_row = call < 4 ? 4 : 2;
    const Tensor a = call < 2 ? base.narrow(0, 0, 4).clone() : base.narrow(0, 0, 4);
    const Tensor b = call < 2 ? base.narrow(0, 4, 4).clone() : base.narrow(0, b_row, 4);
    const Tensor expected_base = base.clone();
    const Tensor expected_a = call < 2 ? a.clone() : expected_base.narrow(0, 0, 4);
    const Tensor expected_b = call < 2 ? b.clone() : expected_base.narrow(0, b_row, 4);
    const Tensor expected = fn(expected_a, expected_b);
    CHECK(graph_test::max_relative_error(compiled(a, b), expected) <= 1e-6);
    CHECK(graph_test::max_relative_error(a, expected_a) == 0);
    CHECK(graph_test::max_relative_error(b, expected_b) == 0);
  }
  CHECK(compiled.state().captures() == 2);
  CHECK(compiled.state().replays() == 3);
  REQUIRE(compiled.state().recompile_reasons().size() == 1);
  CHECK(compiled.state().recompile_reasons()[0] ==
        "input 1 shares memory with input 0, the graph was captured with no other input or state");
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

TEST_CASE("compile: an update through a view while recording is captured whole and equals eager") {
  // Autograd carries t[1:3] *= p[0:2] to t (CopySlices) and saves aliases of t made outside the
  // dispatcher after the write; they are bound to t's value, which holds the write when read.
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
  for (const bool fuse : {true, false}) {
    INFO("fuse ", fuse);
    Step eager, captured;
    auto compiled = ember::compile([&](const Tensor& x) { return captured(x); }, {.fullgraph = true, .fuse = fuse});
    for (int call = 0; call < 4; ++call) {
      manual_seed(60 + static_cast<uint64_t>(call));
      const Tensor x = randn({4, 6});
      INFO("call ", call);
      CHECK(graph_test::max_relative_error(compiled(x), eager(x)) <= 1e-6);
      CHECK(graph_test::max_relative_error(captured.p.grad(), eager.p.grad()) <= 1e-6);
    }
    CHECK(compiled.state().replays() == 2);
  }
}

TEST_CASE("compile: fill_ and zero_ of expanded views while recording are captured whole and equal eager") {
  // The kernels write each repeated element once; CopySlices gives the overwritten elements a
  // zero gradient through a view without the repeats.
  struct Step {
    Tensor p;
    Step() {
      manual_seed(11);
      p = randn({4, 6}).requires_grad_();
    }
    Tensor operator()(const Tensor& x) {
      p.set_grad(Tensor());
      Tensor t = mul(x, p);
      t.slice(0, 1, 2).expand({3, 6}).fill_(0.5);
      t.select(0, 3).unsqueeze(0).expand({2, 6}).zero_();
      Tensor loss = sum(mul(t, t));
      loss.backward();
      return loss.detach();
    }
  };
  for (const bool fuse : {true, false}) {
    INFO("fuse ", fuse);
    Step eager, captured;
    auto compiled = ember::compile([&](const Tensor& x) { return captured(x); }, {.fullgraph = true, .fuse = fuse});
    for (int call = 0; call < 4; ++call) {
      manual_seed(60 + static_cast<uint64_t>(call));
      const Tensor x = randn({4, 6});
      INFO("call ", call);
      // float64 reference: rows 1 and 3 are overwritten (0.5 and 0), rows 0 and 2 keep x * p.
      const std::vector<double> xs = x.to(kFloat64).to_vector<double>();
      const std::vector<double> ps = captured.p.detach().to(kFloat64).to_vector<double>();
      double expected_loss = 6 * 0.25;
      std::vector<double> expected_grad(24, 0.0);
      for (int i : {0, 2}) {
        for (int j = 0; j < 6; ++j) {
          const double value = xs[i * 6 + j] * ps[i * 6 + j];
          expected_loss += value * value;
          expected_grad[i * 6 + j] = 2 * value * xs[i * 6 + j];
        }
      }
      const Tensor loss = compiled(x);
      CHECK(loss.item() == doctest::Approx(expected_loss).epsilon(1e-5));
      const std::vector<double> grad = captured.p.grad().to(kFloat64).to_vector<double>();
      for (int k = 0; k < 24; ++k) CHECK(grad[k] == doctest::Approx(expected_grad[k]).epsilon(1e-5));
      CHECK(graph_test::max_relative_error(loss, eager(x)) <= 1e-6);
      CHECK(graph_test::max_relative_error(captured.p.grad(), eager.p.grad()) <= 1e-6);
    }
    CHECK(compiled.state().replays() == 2);
  }
}

}  // namespace test_compile_aliases
