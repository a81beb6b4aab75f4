// ember::compile of functions that use diagonal (a registry view op): reads of the view, in-place
// writes through it and of its base, and a training step whose backward writes the gradient on a
// diagonal of zeros. Each is captured whole (fullgraph) and equals eager bit for bit; a returned
// diagonal of an argument stays a view of it.
#include <doctest/doctest.h>

#include <vector>

#include "capture_util.h"
#include "fusion_test_util.h"
#include "graph/compile.h"
#include "graph_test_util.h"

namespace test_compile_diagonal {

using namespace ember;

namespace {

// Reads of diagonals of a matrix and of a 3-D view of it with dims not adjacent.
Tensor read_diagonals(const Tensor& x) {
  const Tensor above = exp(x.diagonal(1));
  const Tensor below = mul(x.diagonal(-2), 3.0);
  const Tensor plane = x.reshape({2, 3, 4}).diagonal(-1, 2, 0);  // [3, 2]
  return add(sum(mul(above, below.sum())), sum(tanh(plane)));
}

// Writes through diagonals (fill_, mul_, add_ through a transposed view); the base shows them.
Tensor write_through_diagonals(const Tensor& x) {
  Tensor t = mul(x, 1.5);
  t.diagonal(1).fill_(0.5);
  t.diagonal(-1).mul_(2.0);
  t.t().diagonal(-2).add_(exp(x.diagonal(2)));
  return mul(t, t);
}

// An update of the base after the view was taken; the view shows it.
Tensor update_base_read_diagonal(const Tensor& x) {
  Tensor t = exp(x);
  const Tensor view = t.diagonal(-1);
  const Tensor before = sum(view);
  t.mul_(3.0);
  return add(exp(view), before);
}

// Each function compiled (fused and not) against eager bit for bit over three calls on [4, 6]
// inputs, replayed after the first capture.
void check_against_eager(std::initializer_list<Tensor (*)(const Tensor&)> functions) {
  NoGradGuard no_grad;
  for (auto fn : functions) {
    for (const bool fuse : {true, false}) {
      INFO("fuse ", fuse);
      auto compiled = ember::compile(fn, {.fullgraph = true, .fuse = fuse});
      for (int call = 0; call < 3; ++call) {
        INFO("call ", call);
        const Tensor x = graph_test::seeded_randn({4, 6}, 70 + static_cast<uint64_t>(call));
        CHECK(graph_test::bit_equal(compiled(x), fn(x)));
      }
      CHECK(compiled.state().replays() == 1);
    }
  }
}

}  // namespace

TEST_CASE("compile: diagonal is captured as a view node") {
  NoGradGuard no_grad;
  const Tensor x = graph_test::seeded_randn({4, 6}, 69);
  const graph::Graph graph = graph_test::capture_one(write_through_diagonals, x);
  CHECK(graph.count_op("diagonal") == 4);  // three written through, one read
  CHECK(graph_test::bit_equal(graph_test::replay_one(graph, x), write_through_diagonals(x)));
}

TEST_CASE("compile: reads of and writes through diagonal views equal eager bit for bit") {
  check_against_eager({read_diagonals, write_through_diagonals, update_base_read_diagonal});
}

TEST_CASE("compile: a training step through diagonal views equals eager bit for bit") {
  // t = x * p; t's diagonal 1 *= p's diagonal 2 (CopySlices while recording); the loss also reads
  // p's main diagonal, whose backward writes its gradient on a diagonal of zeros; then an SGD step
  // updates p in place under the views.
  struct Step {
    Tensor p;
    std::unique_ptr<optim::SGD> optimizer;
    Step() {
      p = graph_test::seeded_randn({4, 6}, 71).requires_grad_();
      optimizer = std::make_unique<optim::SGD>(std::vector<Tensor>{p}, optim::SGDOptions{.lr = 0.01});
    }
    Tensor operator()(const Tensor& x) {
      optimizer->zero_grad();
      Tensor t = mul(x, p);
      t.diagonal(1).mul_(p.diagonal(2));
      Tensor loss = add(sum(mul(t, t)), sum(exp(p.diagonal())));
      loss.backward();
      optimizer->step();
      return loss.detach();
    }
  };
  for (const bool fuse : {true, false}) {
    INFO("fuse ", fuse);
    Step eager, captured;
    auto compiled = ember::compile([&](const Tensor& x) { return captured(x); }, {.fullgraph = true, .fuse = fuse});
    for (int call = 0; call < 4; ++call) {
      INFO("call ", call);
      const Tensor x = graph_test::seeded_randn({4, 6}, 80 + static_cast<uint64_t>(call));
      CHECK(graph_test::bit_equal(compiled(x), eager(x)));
      CHECK(graph_test::bit_equal(captured.p.grad(), eager.p.grad()));
      CHECK(graph_test::bit_equal(captured.p.detach(), eager.p.detach()));
    }
    CHECK(compiled.state().replays() == 2);
  }
}

TEST_CASE("compile: a function returning a diagonal of its argument returns a view of it, as eager") {
  // As torch.compile keeps an output that aliases an input a view: writes through the result reach
  // the argument, replayed calls included.
  NoGradGuard no_grad;
  auto compiled = ember::compile([](const Tensor& x) { return x.diagonal(1); }, {.fullgraph = true});
  for (int call = 0; call < 3; ++call) {
    INFO("call ", call);
    Tensor x = graph_test::seeded_randn({4, 6}, 90 + static_cast<uint64_t>(call));
    Tensor result = compiled(x);
    CHECK(result.impl()->storage == x.impl()->storage);
    CHECK(result.sizes() == Dims{4});
    CHECK(result.strides() == Dims{7});
    CHECK(result.storage_offset() == 1);
    result.fill_(2.5);
    CHECK(graph_test::bit_equal(x.diagonal(1), full({4}, 2.5)));
  }
  CHECK(compiled.state().replays() >= 1);
}

}  // namespace test_compile_diagonal
