// What mode="reduce_overhead" may capture (graph/cuda_graph_plan.h), decided from graphs built
// from types alone, so it is checked on machines without a GPU: a graph that updates one of its
// inputs in place (directly or through a view) is refused with the node named; host<->device
// copies, CPU ops and nodes with per-call host scalars run outside the captured segments.
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "graph/cuda_graph_plan.h"
#include "runtime/ember.h"
#include "typed_graph.h"

namespace test_cuda_graph_plan {

using namespace ember;
using namespace ember::graph;
using graph_test::kGpu;
using graph_test::TypedGraph;

TEST_CASE("reduce_overhead refuses a graph that updates an input in place, directly or through a view") {
  const TensorMeta meta{{4, 8}, kFloat32, kGpu};
  {
    TypedGraph typed;
    const ValueId x = typed.input({4, 8}, kGpu);
    const ValueId y = typed.input({4, 8}, kGpu);
    const ValueId doubled = typed.node("mul_scalar", {x}, meta, Attrs{{"value", 2.0}});
    const ValueId updated = typed.node("add_", {y, doubled}, meta, Attrs{{"alpha", 1.0}});
    typed.graph.outputs = {updated};
    CHECK(cuda_graph_blocker(typed.graph, plan_memory(typed.graph)) == "node 1 (add_) updates graph input 1 in place");
  }
  {
    TypedGraph typed;
    const ValueId x = typed.input({4, 8}, kGpu);
    const TensorMeta transposed{{8, 4}, kFloat32, kGpu};
    const ValueId view = typed.node("transpose", {x}, transposed, Attrs{{"dim0", int64_t{0}}, {"dim1", int64_t{1}}});
    const ValueId updated = typed.node("mul_scalar_", {view}, transposed, Attrs{{"value", 3.0}});
    typed.graph.outputs = {updated};
    CHECK(cuda_graph_blocker(typed.graph, plan_memory(typed.graph)) ==
          "node 1 (mul_scalar_) updates graph input 0 in place");
  }
  {  // in place on an intermediate: the graph's own memory, capturable
    TypedGraph typed;
    const ValueId x = typed.input({4, 8}, kGpu);
    const ValueId doubled = typed.node("mul_scalar", {x}, meta, Attrs{{"value", 2.0}});
    const ValueId updated = typed.node("mul_scalar_", {doubled}, meta, Attrs{{"value", 3.0}});
    typed.graph.outputs = {updated};
    CHECK(cuda_graph_blocker(typed.graph, plan_memory(typed.graph)).empty());
  }
}

TEST_CASE("host<->device copies and nodes with per-call host scalars run outside captured segments") {
  TypedGraph typed;
  const ValueId host = typed.input({4, 8}, kCPU);
  const ValueId device = typed.input({4, 8}, kGpu);
  const int upload = typed.add("to_device", {host}, TensorMeta{{4, 8}, kFloat32, kGpu}, Attrs{{"device", kGpu}});
  const int download = typed.add("to_device", {device}, TensorMeta{{4, 8}, kFloat32, kCPU}, Attrs{{"device", kCPU}});
  const int on_device = typed.add("relu", {device}, TensorMeta{{4, 8}, kFloat32, kGpu});
  const int scaled = typed.add("mul_scalar", {device}, TensorMeta{{4, 8}, kFloat32, kGpu}, Attrs{{"value", 0.5}});
  typed.graph.nodes[scaled].refresh = [](Attrs& attrs) { attrs.set("value", 0.25); };
  // CPU work in a CUDA step (a per-call CPU input prepared before its upload) would run only at
  // capture and go stale on every replay after it.
  const int on_host = typed.add("add_scalar", {host}, TensorMeta{{4, 8}, kFloat32, kCPU}, Attrs{{"value", -1.0}});
  const Graph& graph = typed.graph;
  CHECK(runs_outside_capture(graph, graph.nodes[upload]));
  CHECK(runs_outside_capture(graph, graph.nodes[download]));
  CHECK_FALSE(runs_outside_capture(graph, graph.nodes[on_device]));
  CHECK(runs_outside_capture(graph, graph.nodes[scaled]));
  CHECK(runs_outside_capture(graph, graph.nodes[on_host]));
}

TEST_CASE("reduce_overhead refuses an input that shares its buffer with state the graph updates in place") {
  // Inputs are staged into buffers of their own; the state's update would not reach the copy.
  const TensorMeta meta{{4, 8}, kFloat32, kGpu};
  auto state_tensor = std::make_shared<TensorImpl>();
  state_tensor->sizes = {4, 8};
  state_tensor->strides = {8, 1};
  state_tensor->dtype = kFloat32;
  state_tensor->device = kGpu;
  for (bool state_updated : {true, false}) {
    TypedGraph typed;
    const ValueId x = typed.input({4, 8}, kGpu);
    const ValueId state = typed.graph.add_state(state_tensor);
    typed.graph.shared_buffers.push_back({state, x});
    const ValueId read = state_updated ? typed.node("mul_scalar_", {state}, meta, Attrs{{"value", 0.5}}) : state;
    typed.graph.outputs = {typed.node("add", {x, read}, meta, Attrs{{"alpha", 1.0}})};
    const std::string why = cuda_graph_blocker(typed.graph, plan_memory(typed.graph));
    if (state_updated) {
      CHECK(why == "graph input 0 shares its buffer with state the graph updates in place");
    } else {
      CHECK(why.empty());  // both only read: the staged copy holds the same values
    }
  }
}

TEST_CASE("reduce_overhead refuses a graph with work on a second GPU") {
  const Device second{DeviceType::CUDA, 1};
  TypedGraph typed;
  const ValueId x = typed.input({4, 8}, kGpu);
  const ValueId moved = typed.node("to_device", {x}, TensorMeta{{4, 8}, kFloat32, second}, Attrs{{"device", second}});
  typed.graph.outputs = {typed.node("relu", {moved}, TensorMeta{{4, 8}, kFloat32, second})};
  CHECK(cuda_graph_blocker(typed.graph, plan_memory(typed.graph)) == "node 0 (to_device) uses cuda:0 besides the graph's cuda:1");
}

}  // namespace test_cuda_graph_plan
