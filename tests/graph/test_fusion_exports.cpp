// Multi-output fused groups: a member value read outside its group becomes an extra output of the
// fused node (computed once); readers before the root move after it; paths that leave a group
// and re-enter it keep their producer out (no cycle); at most kMaxFusedOutputs outputs a group.
#include <doctest/doctest.h>

#include <algorithm>

#include "graph/fusion.h"
#include "fusion_test_util.h"

namespace test_fusion_exports {

using namespace ember;
using namespace ember::graph;
using graph_test::GraphBuilder;

namespace {

// Every graph output equals what eager execution computed, within fp32 rounding, under the
// lowered executor (memory plan: several outputs of one node in the arena) and the dispatching one.
void check_outputs(const GraphBuilder& builder, const Graph& graph, double tolerance = 1e-6) {
  for (const bool lowered : {true, false}) {
    INFO("lowered executor ", lowered);
    std::vector<Tensor> inputs;
    for (const Tensor& input : builder.inputs) inputs.push_back(input.clone());
    Executor executor(graph, {.lowered = lowered});
    CHECK((executor.memory_plan() != nullptr) == lowered);
    const std::vector<Tensor> results = executor.run(inputs);
    REQUIRE(results.size() == graph.outputs.size());
    for (size_t i = 0; i < results.size(); ++i) {
      INFO("output ", i);
      const double error = graph_test::max_relative_error(results[i], builder.eager[graph.outputs[i]]);
      CHECK(std::isfinite(error));
      CHECK(error <= tolerance);
    }
  }
}

}  // namespace

TEST_CASE("fusion exports: a member read by a GEMM before the root is exported, the GEMM moves after") {
  GraphBuilder builder;
  const ValueId x = builder.input(graph_test::seeded_randn({8, 6}, 21));
  const ValueId y = builder.input(graph_test::seeded_randn({8, 6}, 22));
  const ValueId w = builder.input(graph_test::seeded_randn({6, 3}, 23));
  const ValueId product = builder.node("mul", {x, y});
  const ValueId projected = builder.node("mm", {product, w});  // outside reader, before the root
  const ValueId exponent = builder.node("exp", {product});
  const ValueId result = builder.node("add", {exponent, x}, Attrs{{"alpha", 0.5}});
  builder.graph.outputs = {result, projected};
  Graph graph = builder.graph;
  REQUIRE(fuse_pointwise(graph) == 1);
  verify(graph);
  INFO(to_text(graph));
  REQUIRE(graph.nodes.size() == 2);
  const FusedOpDef* fused = as_fused(*graph.nodes[0].op);
  REQUIRE(fused != nullptr);
  CHECK(fused->group.summary() == "mul+exp+add");
  CHECK(fused->num_outputs == 2);
  CHECK(graph.nodes[0].outputs == std::vector<ValueId>{result, product});
  CHECK(graph.values[product].output == 1);
  CHECK(graph.nodes[1].op->name == "mm");  // moved after the fused node that now computes its input
  check_outputs(builder, graph);
}

TEST_CASE("fusion exports: a softmax-like chain is two groups, the path through the row sum keeps exp out") {
  // a = exp(x); s = sum(a, 1); b = a / s; c = b * y. From c, a may not join: its value leaves
  // through the sum s and re-enters at b, so one fused node would need its own output first.
  // a then joins s's group as an export: exp is computed once, read by the second group.
  GraphBuilder builder;
  const ValueId x = builder.input(graph_test::seeded_randn({5, 7}, 24));
  const ValueId y = builder.input(graph_test::seeded_randn({5, 7}, 25));
  const ValueId exponent = builder.node("exp", {x});
  const ValueId row_sum = builder.node("sum", {exponent}, Attrs{{"dims", Dims{1}}, {"keepdim", true}});
  const ValueId ratio = builder.node("div", {exponent, row_sum});
  const ValueId result = builder.node("mul", {ratio, y});
  builder.graph.outputs = {result};
  Graph graph = builder.graph;
  REQUIRE(fuse_pointwise(graph) == 2);
  verify(graph);
  INFO(to_text(graph));
  REQUIRE(graph.nodes.size() == 2);
  const FusedOpDef* first = as_fused(*graph.nodes[0].op);
  const FusedOpDef* second = as_fused(*graph.nodes[1].op);
  REQUIRE(first != nullptr);
  REQUIRE(second != nullptr);
  CHECK(first->group.summary() == "exp+sum");
  CHECK(first->group.exports == std::vector<int>{0});
  CHECK(graph.nodes[0].outputs == std::vector<ValueId>{row_sum, exponent});
  CHECK(second->group.summary() == "div+mul");
  CHECK(second->group.exports.empty());
  CHECK(graph.nodes[1].inputs == std::vector<ValueId>{exponent, row_sum, y});
  check_outputs(builder, graph);
}

TEST_CASE("fusion exports: a path out of the group through a GEMM and back in keeps the producer out") {
  GraphBuilder builder;
  const ValueId x = builder.input(graph_test::seeded_randn({6, 6}, 26));
  const ValueId exponent = builder.node("exp", {x});
  const ValueId square = builder.node("mm", {exponent, exponent});
  const ValueId total = builder.node("add", {exponent, square}, Attrs{{"alpha", 1.0}});
  const ValueId result = builder.node("tanh", {total});
  builder.graph.outputs = {result};
  Graph graph = builder.graph;
  REQUIRE(fuse_pointwise(graph) == 1);
  verify(graph);
  INFO(to_text(graph));
  CHECK(graph.count_op("exp") == 1);
  CHECK(graph.count_op("mm") == 1);
  REQUIRE(graph.nodes.size() == 3);
  const FusedOpDef* fused = as_fused(*graph.nodes[2].op);
  REQUIRE(fused != nullptr);
  CHECK(fused->group.summary() == "add+tanh");
  CHECK(fused->group.exports.empty());
  check_outputs(builder, graph);
}

TEST_CASE("fusion exports: relu_backward + bias-gradient sum, its value exported to both GEMMs") {
  // The backward of Linear + ReLU: g = relu_backward(grad, out) feeds grad_x = g w, grad_w =
  // g^T x and grad_b = sum(g, 0). One fused node writes g and accumulates grad_b.
  for (const bool strided : {false, true}) {
    for (const int64_t dim : {int64_t{0}, int64_t{1}}) {
      INFO("strided inputs ", strided, ", reduced dim ", dim);
      GraphBuilder builder;
      // Strided: the transpose of a [16, 32] tensor, so the kernel walks element strides.
      const Tensor grad_tensor = strided ? graph_test::seeded_randn({16, 32}, 27).transpose(0, 1) : graph_test::seeded_randn({32, 16}, 27);
      const ValueId grad = builder.input(grad_tensor);
      const ValueId out = builder.input(graph_test::seeded_randn({32, 16}, 28));
      const ValueId x = builder.input(graph_test::seeded_randn({32, 12}, 29));
      const ValueId w = builder.input(graph_test::seeded_randn({16, 12}, 30));
      const ValueId masked = builder.node("relu_backward", {grad, out});
      const ValueId grad_x = builder.node("matmul", {masked, w});
      const ValueId masked_t = builder.node("transpose", {masked}, Attrs{{"dim0", int64_t{0}}, {"dim1", int64_t{1}}});
      const ValueId grad_w = builder.node("mm", {masked_t, x});
      const ValueId grad_b = builder.node("sum", {masked}, Attrs{{"dims", Dims{dim}}, {"keepdim", false}});
      builder.graph.outputs = {grad_x, grad_w, grad_b};
      Graph graph = builder.graph;
      REQUIRE(fuse_pointwise(graph) == 1);
      verify(graph);
      INFO(to_text(graph));
      REQUIRE(graph.nodes.size() == 4);
      const FusedOpDef* fused = as_fused(*graph.nodes[0].op);
      REQUIRE(fused != nullptr);
      CHECK(fused->group.summary() == "relu_backward+sum");
      CHECK(fused->kind == OpKind::Reduction);
      CHECK(graph.nodes[0].outputs == std::vector<ValueId>{grad_b, masked});
      CHECK(graph.count_op("relu_backward") == 0);
      // g itself is exact (a select), so the GEMMs see bit-identical inputs; the sum rounds once.
      const std::vector<Tensor> results = builder.run(graph);
      CHECK(graph_test::bits_equal_or_nan(results[0], builder.eager[grad_x]));
      CHECK(graph_test::bits_equal_or_nan(results[1], builder.eager[grad_w]));
      CHECK(graph_test::max_relative_error(results[2], builder.eager[grad_b]) <= 1e-6);
      // Not a test of zeros: some gradients were masked, some passed.
      const std::vector<float> kept = builder.eager[masked].contiguous().to_vector<float>();
      CHECK(std::count(kept.begin(), kept.end(), 0.0f) > 0);
      CHECK(std::count(kept.begin(), kept.end(), 0.0f) < static_cast<std::ptrdiff_t>(kept.size()));
    }
  }
}

TEST_CASE("fusion exports: a group exports at most kMaxFusedOutputs - 1 values, the next producer stays out") {
  GraphBuilder builder;
  const ValueId x = builder.input(graph_test::seeded_randn({4, 5}, 31));
  const ValueId w = builder.input(graph_test::seeded_randn({5, 5}, 32));
  std::vector<ValueId> chain{builder.node("exp", {x})};
  for (const char* op : {"tanh", "sigmoid", "neg"}) chain.push_back(builder.node(op, {chain.back()}));
  const ValueId result = builder.node("mul", {chain.back(), x});
  std::vector<ValueId> outputs{result};
  for (ValueId value : chain) outputs.push_back(builder.node("mm", {value, w}));  // after the root
  builder.graph.outputs = outputs;
  Graph graph = builder.graph;
  REQUIRE(fuse_pointwise(graph) == 1);
  verify(graph);
  INFO(to_text(graph));
  CHECK(graph.count_op("exp") == 1);
  const FusedOpDef* fused = as_fused(*graph.nodes[1].op);
  REQUIRE(fused != nullptr);
  CHECK(fused->group.summary() == "tanh+sigmoid+neg+mul");
  CHECK(fused->num_outputs == kMaxFusedOutputs);
  CHECK(graph.nodes[1].outputs.size() == static_cast<size_t>(kMaxFusedOutputs));
  check_outputs(builder, graph);
}

TEST_CASE("fusion exports: a chain reading an export before the root moves after the fused node, in order") {
  // a = exp(x) is exported to neg -> tanh -> mm, which all ran before the root f: they move
  // after the fused node, keep their order, and (running after it) join no later group.
  GraphBuilder builder;
  const ValueId x = builder.input(graph_test::seeded_randn({4, 4}, 33));
  const ValueId w = builder.input(graph_test::seeded_randn({4, 4}, 34));
  const ValueId a = builder.node("exp", {x});
  const ValueId b = builder.node("neg", {a});
  const ValueId c = builder.node("tanh", {b});
  const ValueId d = builder.node("mm", {c, w});
  const ValueId e = builder.node("sigmoid", {a});
  const ValueId f = builder.node("mul", {e, x});
  builder.graph.outputs = {f, d};
  Graph graph = builder.graph;
  REQUIRE(fuse_pointwise(graph) == 1);
  verify(graph);
  INFO(to_text(graph));
  REQUIRE(graph.nodes.size() == 4);
  const FusedOpDef* fused = as_fused(*graph.nodes[0].op);
  REQUIRE(fused != nullptr);
  CHECK(fused->group.summary() == "exp+sigmoid+mul");
  CHECK(graph.nodes[0].outputs == std::vector<ValueId>{f, a});
  CHECK(graph.nodes[1].op->name == "neg");
  CHECK(graph.nodes[2].op->name == "tanh");
  CHECK(graph.nodes[3].op->name == "mm");
  CHECK(graph.values[b].index == 1);
  check_outputs(builder, graph);
}

}  // namespace test_fusion_exports
