// DCE and CSE: what they remove, what they must keep (in-place updates, mutated or returned
// buffers, different attributes), the verifier after each pass, and replay of the result.
#include <doctest/doctest.h>

#include <functional>
#include <limits>

#include "graph/capture.h"
#include "graph/executor.h"
#include "graph/passes.h"
#include "graph_test_util.h"

namespace test_passes {

using namespace ember;
using namespace ember::graph;

namespace {

Graph capture(const std::function<Tensor(const Tensor&)>& fn, const Tensor& input) {
  Graph graph;
  CaptureMode mode(graph, /*fullgraph=*/true);
  mode.add_input(input);
  Tensor result;
  {
    DispatchModeGuard installed(mode);
    result = fn(input);
  }
  mode.finish(std::span<const Tensor>(&result, 1));
  verify(graph);
  return graph;
}

std::vector<float> replay(Graph graph, const Tensor& input) {
  Executor executor(std::move(graph));
  return executor.run(std::span<const Tensor>(&input, 1)).at(0).to_vector<float>();
}

// On the CPU by name: made before main(), they would otherwise fix the default device (tests/main.cpp).
const Tensor weight = from_vector<float>({0.5f, -1.25f, 2.0f}, {3}, {.device = kCPU});
const Tensor x = from_vector<float>({1.0f, 2.0f, -3.0f}, {3}, {.device = kCPU});

}  // namespace

TEST_CASE("dce: removes a value nobody reads and keeps what reaches the output") {
  Graph graph = capture([](const Tensor& in) {
    Tensor product = in * weight;
    Tensor unused = product.exp();
    return product.neg();
  }, x);
  CHECK(graph.count_op("exp") == 1);
  CHECK(eliminate_dead_code(graph) == 1);
  verify(graph);
  CHECK(graph.count_op("exp") == 0);
  CHECK(graph.count_op("mul") == 1);
  CHECK(graph.count_op("neg") == 1);
  CHECK(replay(graph, x) == std::vector<float>{-0.5f, 2.5f, 6.0f});
  CHECK(to_text(graph).find("exp") == std::string::npos);
}

TEST_CASE("dce: keeps an in-place update whose result is unused (a view may read its effect)") {
  Graph graph = capture([](const Tensor& in) {
    Tensor product = in * weight;
    Tensor row = product.view({1, 3});
    product.add_(in);
    return row.sum();
  }, x);
  CHECK(eliminate_dead_code(graph) == 0);
  verify(graph);
  CHECK(graph.count_op("add_") == 1);
  // (0.5 + 1) + (-2.5 + 2) + (-6 - 3) = -8
  CHECK(replay(graph, x) == std::vector<float>{-8.0f});
}

TEST_CASE("cse: merges the same op on the same values with equal attributes") {
  Graph graph = capture([](const Tensor& in) {
    Tensor a = in * weight;
    Tensor b = in * weight;
    Tensor rows = in.view({3, 1}).sum(Dims{1});
    Tensor columns = in.view({3, 1}).sum(Dims{0});
    return (a + b) * rows + columns;
  }, x);
  CHECK(graph.count_op("mul") == 3);
  CHECK(graph.count_op("view") == 2);
  CHECK(graph.count_op("sum") == 2);
  CHECK(eliminate_common_subexpressions(graph) == 2);  // one mul, one view; sums differ in dims
  verify(graph);
  CHECK(graph.count_op("mul") == 2);
  CHECK(graph.count_op("view") == 1);
  CHECK(graph.count_op("sum") == 2);
  // (2 * x * w) * x + sum(x) = [1, -10, 36] + 0
  CHECK(replay(graph, x) == std::vector<float>{1.0f, -10.0f, 36.0f});
}

TEST_CASE("cse: keeps ops whose attributes differ only in the sign of a zero apart") {
  // 0.0 == -0.0, but x / 0.0 and x / -0.0 are infinities of opposite signs.
  Graph graph = capture([](const Tensor& in) { return sub(div(in, 0.0), div(in, -0.0)); }, x);
  CHECK(eliminate_common_subexpressions(graph) == 0);
  verify(graph);
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(replay(graph, x) == std::vector<float>{inf, inf, -inf});
}

TEST_CASE("cse: leaves a value that is later mutated in place, so buffers stay distinct") {
  Graph graph = capture([](const Tensor& in) {
    Tensor a = in * weight;
    Tensor b = in * weight;
    b.add_(in);
    return a + b;
  }, x);
  CHECK(eliminate_common_subexpressions(graph) == 0);
  verify(graph);
  // 2 * x * w + x = [2, -3, -15]
  CHECK(replay(graph, x) == std::vector<float>{2.0f, -3.0f, -15.0f});
}

TEST_CASE("passes: DCE then CSE on the seed-MLP step keep it verified and equal to eager") {
  graph_test::SeedMlp eager(11), captured(11);
  auto [x0, y0] = graph_test::batch(0);
  eager.step(x0, y0);
  captured.step(x0, y0);
  auto [x1, y1] = graph_test::batch(1);
  Graph graph;
  CaptureMode mode(graph, /*fullgraph=*/true);
  mode.add_input(x1);
  mode.add_input(y1);
  Tensor loss;
  {
    DispatchModeGuard installed(mode);
    loss = captured.step(x1, y1);
  }
  mode.finish(std::span<const Tensor>(&loss, 1));
  CHECK(graph_test::bit_equal(loss, eager.step(x1, y1)));
  const size_t before = graph.nodes.size();
  eliminate_dead_code(graph);
  verify(graph);
  eliminate_common_subexpressions(graph);
  verify(graph);
  CHECK(graph.nodes.size() <= before);
  CHECK(graph.count_op("adam_step_") == 4);
  Executor executor(std::move(graph));
  auto [x2, y2] = graph_test::batch(2);
  const Tensor inputs[] = {x2, y2};
  CHECK(graph_test::bit_equal(executor.run(inputs).at(0), eager.step(x2, y2)));
  const std::vector<Tensor> expected = eager.model->parameters(), actual = captured.model->parameters();
  for (size_t i = 0; i < expected.size(); ++i) CHECK(graph_test::bit_equal(expected[i], actual[i]));
}

}  // namespace test_passes
