// Constant folding: factory subgraphs run once at compile time and leave one constant; random
// ops, mutated factories and per-call scalars are never folded; the text dump and verifier know
// constants.
#include <doctest/doctest.h>

#include "capture_util.h"
#include "graph/compile.h"
#include "graph/passes.h"
#include "graph_test_util.h"

namespace test_constant_folding {

using namespace ember;
using namespace ember::graph;
using graph_test::capture_one;
using graph_test::replay_one;

namespace {

// On the CPU by name: made before main(), it would otherwise fix the default device (tests/main.cpp).
const Tensor input = from_vector<float>({1.0f, -2.0f, 0.5f}, {3}, {.device = kCPU});

Tensor with_factory_subgraph(const Tensor& in) {
  const Tensor table = (arange(0.0, 3.0, 1.0, TensorOptions{.dtype = kFloat32}) * 2.0 + ones({3})).exp();
  return in * table;
}

// A graph whose node `op` (attrs `attrs`, reading `inputs`) feeds a neg that is returned.
Graph random_graph(const char* op, const Attrs& attrs, std::vector<ValueId> inputs, Graph graph = {}) {
  const OpDef& def = lookup_op(op);
  const TensorMeta meta{{3}, kFloat32, kCPU};
  const TensorMeta metas[] = {meta, {{3}, kBool, kCPU}};
  const int node = graph.add_node(def, attrs, std::move(inputs), std::span(metas, def.num_outputs));
  const int result = graph.add_node(lookup_op("neg"), {}, {graph.nodes[node].outputs[0]}, std::span(&meta, 1));
  graph.outputs.push_back(graph.nodes[result].outputs[0]);
  verify(graph);
  return graph;
}

}  // namespace

TEST_CASE("constant folding: a factory subgraph runs once and becomes one constant") {
  Graph graph = capture_one(with_factory_subgraph, input);
  // arange, mul_scalar, full (ones), add, exp: five nodes replay would run on every call.
  CHECK(graph.nodes.size() == 6);
  CHECK(fold_constants(graph) == 5);
  verify(graph);
  REQUIRE(graph.nodes.size() == 1);
  CHECK(graph.nodes[0].op->name == "mul");
  REQUIRE(graph.constants.size() == 1);
  // exp(2i + 1) for i = 0, 1, 2, bit for bit what eager computes.
  const Tensor expected_table = (arange(0.0, 3.0, 1.0, TensorOptions{.dtype = kFloat32}) * 2.0 + ones({3})).exp();
  CHECK(graph_test::bit_equal(graph.constant_tensors[0], expected_table));
  CHECK(std::abs(graph.constant_tensors[0].to_vector<float>()[2] - std::exp(5.0f)) < 1e-3f);
  CHECK(to_text(graph).find("%c0 = constant()  # [3] float32") != std::string::npos);
  CHECK(to_dot(graph).find("%c0") != std::string::npos);
  for (int call = 0; call < 2; ++call)  // the constant is read, never written
    CHECK(graph_test::bit_equal(replay_one(graph, input), with_factory_subgraph(input)));
}

TEST_CASE("constant folding: compile() folds, and replays equal eager") {
  auto compiled = ember::compile(with_factory_subgraph, {.warmup_calls = 0});
  for (int call = 0; call < 3; ++call) CHECK(graph_test::bit_equal(compiled(input), with_factory_subgraph(input)));
  REQUIRE(compiled.state().graph() != nullptr);
  CHECK(compiled.state().graph()->nodes.size() == 1);
  CHECK(compiled.state().replays() == 2);
}

TEST_CASE("constant folding: rand, randn and dropout are never folded") {
  const Attrs random_attrs{{"sizes", Dims{3}}, {"seed", int64_t{7}}, {"offset", int64_t{0}},
                           {"dtype", kFloat32}, {"device", kCPU}};
  for (const char* op : {"rand", "randn"}) {
    INFO(std::string(op));
    Graph graph = random_graph(op, random_attrs, {});
    CHECK(fold_constants(graph) == 0);
    CHECK(graph.count_op(op) == 1);
    CHECK(graph.constants.empty());
  }
  // dropout of a folded constant: the full folds, the dropout stays and reads the constant.
  Graph graph;
  const TensorMeta meta{{3}, kFloat32, kCPU};
  const int fill = graph.add_node(lookup_op("full"), Attrs{{"sizes", Dims{3}}, {"value", 2.0}, {"dtype", kFloat32},
                                                           {"device", kCPU}},
                                  {}, std::span(&meta, 1));
  const ValueId twos = graph.nodes[fill].outputs[0];
  graph = random_graph("dropout", Attrs{{"p", 0.5}, {"seed", int64_t{7}}, {"offset", int64_t{0}}}, {twos},
                       std::move(graph));
  CHECK(fold_constants(graph) == 1);
  verify(graph);
  CHECK(graph.count_op("full") == 0);
  CHECK(graph.count_op("dropout") == 1);
  CHECK(graph.constants.size() == 1);
}

TEST_CASE("constant folding: a factory written in place, or with a per-call scalar, stays") {
  Graph mutated = capture_one([](const Tensor& in) {
    Tensor accumulator = zeros({3});
    accumulator.add_(in);
    return accumulator * 2.0;
  }, input);
  CHECK(fold_constants(mutated) == 0);
  CHECK(mutated.count_op("full") == 1);
  CHECK(replay_one(mutated, input).to_vector<float>() == std::vector<float>{2.0f, -4.0f, 1.0f});

  double value = 2.0;
  Graph refreshed = capture_one([](const Tensor& in) { return in * full({3}, 2.0); }, input);
  REQUIRE(refreshed.nodes[0].op->name == "full");
  refreshed.nodes[0].refresh = [&value](Attrs& attrs) { attrs.set("value", value); };
  CHECK(fold_constants(refreshed) == 0);
  value = -1.0;
  CHECK(replay_one(refreshed, input).to_vector<float>() == std::vector<float>{-1.0f, 2.0f, -0.5f});
}

TEST_CASE("constant folding: the verifier rejects a constant of the wrong type") {
  Graph graph = capture_one(with_factory_subgraph, input);
  fold_constants(graph);
  graph.constant_tensors[0] = zeros({4});
  CHECK_THROWS_WITH_AS(verify(graph), doctest::Contains("verify: constant %c0 holds no tensor of type [3] float32"),
                       Error);
}

}  // namespace test_constant_folding
