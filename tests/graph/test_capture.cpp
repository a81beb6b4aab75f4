// Capture of a whole training step into one graph, the text dump, DOT export, the verifier and
// graph breaks.
#include <doctest/doctest.h>

#include "graph/capture.h"
#include "graph_test_util.h"

namespace test_capture {

using namespace ember;
using namespace ember::graph;
using graph_test::SeedMlp;

namespace {

// Captures one seed-MLP step after one eager warm-up step (which creates Adam's moments).
Graph capture_seed_step(SeedMlp& mlp) {
  auto [x0, y0] = graph_test::batch(0);
  mlp.step(x0, y0);
  auto [x, y] = graph_test::batch(1);
  Graph graph;
  CaptureMode mode(graph, /*fullgraph=*/true);
  mode.add_input(x);
  mode.add_input(y);
  Tensor loss;
  {
    DispatchModeGuard installed(mode);
    loss = mlp.step(x, y);
  }
  mode.finish(std::span<const Tensor>(&loss, 1));
  return graph;
}

}  // namespace

TEST_CASE("capture: the seed MLP step is one graph with forward, backward and optimizer nodes") {
  SeedMlp mlp(7);
  Graph graph = capture_seed_step(mlp);
  verify(graph);
  CHECK(graph.inputs.size() == 2);
  // Forward: two linears, relu, the loss; backward: the relu and loss gradients; update: one
  // fused Adam step per parameter (4 parameters).
  CHECK(graph.count_op("linear") == 2);
  CHECK(graph.count_op("relu") == 1);
  CHECK(graph.count_op("cross_entropy") == 1);
  CHECK(graph.count_op("adam_step_") == 4);
  CHECK(graph.count_op("relu_backward") + graph.count_op("threshold_backward") >= 1);
  // Parameters and Adam's two moments per parameter are state: 4 + 8 = 12 tensors.
  CHECK(graph.state_inputs.size() == 12);
  // Each Adam step writes a parameter and both moments back: 12 write-backs; 4 new .grads.
  CHECK(graph.write_backs.size() == 12);
  CHECK(graph.grad_write_backs.size() == 4);
  int refreshed = 0;
  for (const Node& node : graph.nodes) refreshed += node.refresh ? 1 : 0;
  CHECK(refreshed == 4);  // lr and step are read per call, never baked in
}

TEST_CASE("capture: the text dump prints one node a line with its type, and DOT export") {
  SeedMlp mlp(7);
  Graph graph = capture_seed_step(mlp);
  const std::string text = to_text(graph);
  CHECK(text.find("graph(%x0: [32, 100] float32, %x1: [32] int64):") == 0);
  CHECK(text.find(" = linear(%x0, %s0, %s1)  # [32, 256] float32\n") != std::string::npos);
  CHECK(text.find(" = cross_entropy(") != std::string::npos);
  CHECK(text.find("(host scalars read per call)") != std::string::npos);
  CHECK(text.find("write_back(%s0, %") != std::string::npos);
  CHECK(text.find("set_grad(%s0, %") != std::string::npos);
  const std::string dot = to_dot(graph);
  CHECK(dot.find("digraph ember {") == 0);
  CHECK(dot.find("[label=\"linear\\n[32, 256] float32\"]") != std::string::npos);
  CHECK(dot.find("write back") != std::string::npos);
}

TEST_CASE("verify: rejects a use before definition, a double definition and a wrong type") {
  SeedMlp mlp(7);
  const Graph good = capture_seed_step(mlp);
  {
    Graph bad = good;
    bad.nodes[0].inputs[0] = bad.nodes[3].outputs[0];
    CHECK_THROWS_WITH_AS(verify(bad), doctest::Contains("node 0 (linear) uses value %"), Error);
  }
  {
    Graph bad = good;
    bad.nodes[1].outputs[0] = bad.nodes[0].outputs[0];
    CHECK_THROWS_WITH_AS(verify(bad), doctest::Contains("is defined twice"), Error);
  }
  {
    Graph bad = good;
    bad.values[bad.nodes[0].outputs[0]].meta.sizes = Dims{32, 255};
    CHECK_THROWS_WITH_AS(verify(bad),
                         doctest::Contains("node 0 (linear) output 0 is [32, 255] float32 but its shape "
                                           "rule gives [32, 256] float32"),
                         Error);
  }
  {
    Graph bad = good;
    bad.outputs[0] = static_cast<ValueId>(bad.values.size()) + 3;
    CHECK_THROWS_WITH_AS(verify(bad), doctest::Contains("the graph's outputs uses value %"), Error);
  }
}

TEST_CASE("capture: a host read of a graph value is a graph break naming the op and the reason") {
  Tensor a = from_vector<float>({1.5f, -2.0f, 0.25f});
  Graph graph;
  CaptureMode mode(graph, /*fullgraph=*/true);
  mode.add_input(a);
  DispatchModeGuard installed(mode);
  Tensor total = (a * a).sum();
  CHECK_THROWS_WITH_AS(total.item(), doctest::Contains("graph break: item() reads the values of %2 (from sum)"),
                       GraphBreak);
  CHECK_THROWS_WITH_AS(a.to_vector<float>(), doctest::Contains("to_vector() reads the values of %0 (from a graph input)"),
                       GraphBreak);
}

TEST_CASE("capture: without fullgraph a break is recorded and the function keeps running eagerly") {
  Tensor a = from_vector<float>({1.5f, -2.0f, 0.25f});
  Graph graph;
  CaptureMode mode(graph, /*fullgraph=*/false);
  mode.add_input(a);
  double value = 0;
  {
    DispatchModeGuard installed(mode);
    value = (a * a).sum().item();
  }
  CHECK(value == doctest::Approx(1.5 * 1.5 + 4.0 + 0.0625));
  CHECK(mode.break_reason().find("item() reads the values of %2 (from sum)") == 0);
}

TEST_CASE("capture: a random op is recorded with a refresh, one dispatched without it is a graph break") {
  Tensor a = from_vector<float>({1.5f, -2.0f, 0.25f, 3.0f});
  Graph graph;
  CaptureMode mode(graph, /*fullgraph=*/true);
  mode.add_input(a);
  DispatchModeGuard installed(mode);
  (void)ember::dropout(a, 0.5, true);
  REQUIRE(graph.nodes.size() == 1);
  CHECK(static_cast<bool>(graph.nodes[0].refresh));  // a new generator range per replay
  // A direct dispatch hands no refresh over: a replay would repeat the capture's numbers.
  const Attrs attrs{{"sizes", Dims{4}}, {"dtype", kFloat32}, {"device", kCPU}, {"seed", int64_t{1}},
                    {"offset", int64_t{0}}};
  CHECK_THROWS_WITH_AS(dispatch_one(lookup_op("randn"), {}, attrs),
                       doctest::Contains("randn draws random numbers but was dispatched without a per-call refresh"),
                       GraphBreak);
}

}  // namespace test_capture
