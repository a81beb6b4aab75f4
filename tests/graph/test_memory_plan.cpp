// Memory planning: no two simultaneously live buffers overlap (checked by brute force over every
// pair), live ranges cover every use of every alias, returned values stay out of the arena, new
// .grad tensors too unless planned into it (then live to the end of the call), and reuse actually
// happens (planned bytes below the sum of sizes).
#include <doctest/doctest.h>

#include "graph/compile.h"
#include "graph/memory_plan.h"
#include "graph_test_util.h"

namespace test_memory_plan {

using namespace ember;
using graph::MemoryPlan;
using graph::Placement;

namespace {

// The seed MLP's captured training step (forward, backward, Adam).
graph::Graph seed_graph() {
  graph_test::SeedMlp mlp(3);
  auto train_step = ember::compile([&](const Tensor& x, const Tensor& y) { return mlp.step(x, y); },
                                   {.fullgraph = true});
  for (int step = 0; step < 2; ++step) {
    auto [x, y] = graph_test::batch(step);
    train_step(x, y);
  }
  REQUIRE(train_step.state().graph() != nullptr);
  return *train_step.state().graph();
}

void check_plan(const graph::Graph& graph, const MemoryPlan& plan, graph::PlanOptions options = {}) {
  const int end = static_cast<int>(graph.nodes.size());
  std::vector<const graph::BufferInterval*> arena;
  int64_t sum = 0;
  for (const graph::BufferInterval& buffer : plan.buffers) {
    if (plan.placement[buffer.root] != Placement::Arena) continue;
    arena.push_back(&buffer);
    sum += buffer.bytes;
    CHECK(buffer.offset % MemoryPlan::kAlignment == 0);
    CHECK(buffer.offset + buffer.bytes <= plan.arena_bytes);
    CHECK(buffer.bytes >= graph.values[buffer.root].meta.sizes.product() * 4);
  }
  CHECK(sum == plan.unshared_bytes);
  CHECK(plan.arena_bytes <= plan.unshared_bytes);
  // Brute force: two buffers live at the same node never share a byte.
  for (size_t a = 0; a < arena.size(); ++a)
    for (size_t b = a + 1; b < arena.size(); ++b) {
      const bool live_together = arena[a]->first <= arena[b]->last && arena[b]->first <= arena[a]->last;
      const bool share_bytes = arena[a]->offset < arena[b]->offset + arena[b]->bytes &&
                               arena[b]->offset < arena[a]->offset + arena[a]->bytes;
      INFO("values %", arena[a]->root, " and %", arena[b]->root);
      CHECK_FALSE((live_together && share_bytes));
    }
  // Every use of a value (directly or through a view / in-place alias) lies in its root's range.
  auto interval_of = [&](graph::ValueId value) -> const graph::BufferInterval* {
    for (const graph::BufferInterval& buffer : plan.buffers)
      if (buffer.root == plan.root[value]) return &buffer;
    return nullptr;
  };
  for (int n = 0; n < end; ++n)
    for (graph::ValueId input : graph.nodes[n].inputs) {
      if (input < 0 || plan.placement[input] != Placement::Arena) continue;
      const graph::BufferInterval* buffer = interval_of(input);
      REQUIRE(buffer != nullptr);
      CHECK(buffer->first <= n);
      CHECK(n <= buffer->last);
    }
  for (const graph::WriteBack& write : graph.write_backs)
    if (plan.placement[write.value] == Placement::Arena) CHECK(interval_of(write.value)->last == end);
  // What the caller gets back is never in the arena; new gradients only when asked, and then they
  // live to the end of the call, with the arena made per call.
  for (graph::ValueId output : graph.outputs) CHECK(plan.placement[output] != Placement::Arena);
  bool grads_in_arena = false;
  for (const graph::GradWriteBack& write : graph.grad_write_backs) {
    if (write.value < 0) continue;
    const bool in_arena = plan.placement[write.value] == Placement::Arena;
    CHECK(in_arena == options.grads_in_arena);
    if (in_arena) CHECK(interval_of(write.value)->last == end);
    grads_in_arena = grads_in_arena || in_arena;
  }
  CHECK(plan.arena_escapes == grads_in_arena);
}

}  // namespace

TEST_CASE("memory plan: the seed step's buffers never overlap while live, and reuse shrinks the arena") {
  const graph::Graph graph = seed_graph();
  const MemoryPlan plan = graph::plan_memory(graph);
  check_plan(graph, plan);
  CHECK(plan.arena_bytes > 0);
  CHECK(plan.arena_bytes < plan.unshared_bytes);
  // The four parameters' new .grad tensors and the loss escape the call.
  int per_call = 0;
  for (const graph::BufferInterval& buffer : plan.buffers) per_call += plan.placement[buffer.root] == Placement::PerCall;
  CHECK(per_call == 5);
  // Deterministic: planning twice gives the same offsets.
  const MemoryPlan again = graph::plan_memory(graph);
  for (size_t i = 0; i < plan.buffers.size(); ++i) CHECK(plan.buffers[i].offset == again.buffers[i].offset);
}

TEST_CASE("memory plan: the seed step's new gradients planned into the arena take dead intermediates' space") {
  const graph::Graph graph = seed_graph();
  const MemoryPlan apart = graph::plan_memory(graph);
  const MemoryPlan together = graph::plan_memory(graph, {.grads_in_arena = true});
  check_plan(graph, together, {.grads_in_arena = true});
  CHECK(together.arena_escapes);
  // Only the loss is allocated on its own now.
  int per_call = 0;
  int64_t grad_bytes = 0;
  for (const graph::BufferInterval& buffer : together.buffers) {
    per_call += together.placement[buffer.root] == Placement::PerCall;
    if (apart.placement[buffer.root] == Placement::PerCall && together.placement[buffer.root] == Placement::Arena)
      grad_bytes += buffer.bytes;
  }
  CHECK(per_call == 1);
  CHECK(grad_bytes > 0);
  // Planned together, the gradients reuse bytes of intermediates that died before them.
  INFO("arena apart ", apart.arena_bytes, ", gradients ", grad_bytes, ", together ", together.arena_bytes);
  CHECK(together.arena_bytes < apart.arena_bytes + grad_bytes);
}

TEST_CASE("memory plan: a chain reuses the buffer of a dead value, views keep their base alive") {
  Tensor weight = from_vector<float>({0.5f, -1.25f, 2.0f, 0.75f, 1.5f, -0.5f}, {2, 3});
  auto chain = ember::compile([&](const Tensor& x) {
    Tensor a = x * weight;      // [2, 3]
    Tensor b = a.exp();         // a dies here ...
    Tensor c = b.t();           // ... c views b, so b lives while c is read
    Tensor d = c * 2.0;         // [3, 2]
    Tensor e = d.neg();         // d dies: e may take a's old bytes
    return (e * c.t().t()).sum();
  }, {.warmup_calls = 0});
  const Tensor x = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  chain(x);
  const graph::Graph& graph = *chain.state().graph();
  const MemoryPlan plan = graph::plan_memory(graph);
  check_plan(graph, plan);
  CHECK(plan.arena_bytes < plan.unshared_bytes);
  // b is read (through c) by the last multiply, so its range reaches that node.
  for (const graph::Node& node : graph.nodes)
    if (node.op->name == "t") CHECK(plan.root[node.outputs[0]] == plan.root[node.inputs[0]]);
}

}  // namespace test_memory_plan
