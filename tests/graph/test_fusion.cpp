// The fusion pass on known graphs: which nodes form a group (a relu_backward + mul chain with a
// bias-gradient sum as root), what stays out (in-place nodes, shared and returned values), the
// text dump, replay against eager, the disk cache seen from a new process, and the CUDA text
// (which test_fused_cuda_emulation.cpp compiles and runs).
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "graph/codegen_cpp.h"
#include "graph/fusion.h"
#include "fusion_test_util.h"

namespace test_fusion {

using namespace ember;
using namespace ember::graph;
using graph_test::GraphBuilder;

namespace {

// grad [8, 6] through relu_backward, scaled by a broadcast [6] row, summed over the batch (a bias
// gradient); next to it an in-place update and a value that is both returned and reused.
struct KnownGraph {
  GraphBuilder builder;
  ValueId bias_grad, updated, shared, scaled;
  KnownGraph() {
    const ValueId grad = builder.input(graph_test::seeded_randn({8, 6}, 1));
    const ValueId output = builder.input(graph_test::seeded_randn({8, 6}, 2));
    const ValueId scale = builder.input(graph_test::seeded_randn({6}, 3));
    const ValueId masked = builder.node("relu_backward", {grad, output});
    scaled = builder.node("mul", {masked, scale});
    const ValueId squared = builder.node("mul", {scaled, scaled});
    bias_grad = builder.node("sum", {squared}, Attrs{{"dims", Dims{0}}, {"keepdim", false}});
    shared = builder.node("exp", {output});                  // returned and used below
    const ValueId tanh = builder.node("tanh", {shared});
    updated = builder.node("add_", {tanh, grad}, Attrs{{"alpha", 0.5}});  // in place on tanh
    const ValueId after = builder.node("neg", {updated});
    builder.graph.outputs = {bias_grad, shared, after, scaled};
  }
};

}  // namespace

TEST_CASE("fusion: a relu_backward + mul chain becomes one node rooted at its bias-gradient sum") {
  KnownGraph known;
  Graph graph = known.builder.graph;
  // `scaled` is returned, so it ends the chain: relu_backward+mul is one group, and mul+sum
  // (squared, then the batch sum) another.
  CHECK(fuse_pointwise(graph) == 2);
  verify(graph);
  const std::string text = to_text(graph);
  INFO(text);
  CHECK(text.find("relu_backward+mul") != std::string::npos);
  CHECK(text.find("mul+sum") != std::string::npos);
  CHECK(graph.count_op("relu_backward") == 0);
  CHECK(graph.count_op("sum") == 0);
  // In-place nodes are never fused, nor is a value that an in-place node mutates (tanh), nor exp,
  // whose value is returned; neg follows the in-place node alone.
  CHECK(graph.count_op("add_") == 1);
  CHECK(graph.count_op("tanh") == 1);
  CHECK(graph.count_op("exp") == 1);
  CHECK(graph.count_op("neg") == 1);
  CHECK(graph.nodes.size() == 6);
  const std::vector<Tensor> results = known.builder.run(graph);
  REQUIRE(results.size() == 4);
  CHECK(graph_test::max_relative_error(results[0], known.builder.eager[known.bias_grad]) <= 1e-6);
  for (int i = 1; i < 4; ++i) CHECK(graph_test::bits_equal_or_nan(results[i], known.builder.eager[graph.outputs[i]]));
}

TEST_CASE("fusion: a group node's inputs may broadcast, the fused node replays like any node") {
  GraphBuilder builder;
  const ValueId x = builder.input(graph_test::seeded_randn({4, 3, 5}, 4));
  const ValueId row = builder.input(graph_test::seeded_randn({5}, 5));
  const ValueId column = builder.input(graph_test::seeded_randn({3, 1}, 6));
  const ValueId a = builder.node("add", {x, row}, Attrs{{"alpha", -2.0}});
  const ValueId b = builder.node("sigmoid", {a});
  const ValueId c = builder.node("mul", {b, column});
  const ValueId d = builder.node("mean", {c}, Attrs{{"dims", Dims{1, 2}}, {"keepdim", true}});
  builder.graph.outputs = {d};
  Graph graph = builder.graph;
  REQUIRE(fuse_pointwise(graph) == 1);
  verify(graph);
  REQUIRE(graph.nodes.size() == 1);
  CHECK(graph.nodes[0].inputs.size() == 3);
  CHECK(graph.nodes[0].op->kind == OpKind::Reduction);
  CHECK(graph_test::max_relative_error(builder.run(graph).at(0), builder.eager[d]) <= 1e-6);
}

TEST_CASE("fusion: a sum of a 0-d value over dim -1 or 0 roots a group that reduces nothing") {
  // dim -1 of a 0-d tensor once became a shift by -1 (undefined; the sanitizer build aborts).
  for (const int64_t dim : {-1, 0}) {
    CAPTURE(dim);
    GraphBuilder builder;
    const ValueId x = builder.input(scalar_tensor(3.0));
    const ValueId squared = builder.node("mul", {x, x});
    const ValueId total = builder.node("sum", {squared}, Attrs{{"dims", Dims{dim}}, {"keepdim", false}});
    builder.graph.outputs = {total};
    Graph graph = builder.graph;
    REQUIRE(fuse_pointwise(graph) == 1);
    verify(graph);
    const Tensor fused = builder.run(graph).at(0);
    CHECK(fused.dim() == 0);
    CHECK(fused.item<float>() == 9.0f);
  }
}

TEST_CASE("fusion: a single pointwise node and nodes on values escaping the group stay as they are") {
  GraphBuilder builder;
  const ValueId x = builder.input(graph_test::seeded_randn({5}, 7));
  const ValueId a = builder.node("exp", {x});
  const ValueId b = builder.node("log", {a});
  builder.graph.outputs = {a, b};  // a is returned: it cannot live inside a group
  Graph graph = builder.graph;
  CHECK(fuse_pointwise(graph) == 0);
  CHECK(graph.nodes.size() == 2);
}

TEST_CASE("fusion: the generated CUDA text has a grid-stride kernel around the same body") {
  KnownGraph known;
  Graph graph = known.builder.graph;
  REQUIRE(fuse_pointwise(graph) == 2);
  const FusedOpDef& fused = *fused_ops(graph).at(0);
  const std::string cpu = emit_group_source(fused.group, Target::Cpu);
  const std::string cuda = emit_group_source(fused.group, Target::Cuda);
  INFO(cuda);
  CHECK(cuda.find("extern \"C\" __global__ void __launch_bounds__(256) " + fused.group.name) != std::string::npos);
  CHECK(cuda.find("i += step") != std::string::npos);
  CHECK(cuda.find("struct " + fused.group.name + "_args") != std::string::npos);
  // The body function (the math) is identical text in both.
  const std::string body = cpu.substr(0, cpu.find("extern"));
  CHECK(cuda.find(body.substr(body.find("EMBER_FORCE_INLINE"))) != std::string::npos);
  CHECK(body.find("ember::fn::ReluBackward{}") != std::string::npos);
}

TEST_CASE("fusion: a second process loads the compiled library from the disk cache, no compiler runs") {
  // A fresh cache directory, so the first compile below really compiles.
  char directory[] = "/tmp/ember_fusion_cache_XXXXXX";
  REQUIRE(::mkdtemp(directory) != nullptr);
  ::setenv("EMBER_CACHE_DIR", directory, 1);
  {
    KnownGraph known;
    Graph graph = known.builder.graph;
    const int before = compiler_runs();
    REQUIRE(fuse_pointwise(graph) == 2);
    CHECK(compiler_runs() > before);
    // All groups of a graph: one translation unit, one library.
    int libraries = 0;
    for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(directory) / "cpu"))
      libraries += entry.path().extension() == ".so" ? 1 : 0;
    CHECK(libraries == 1);
  }
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The counter is inherited through fork: what matters is that it does not move here.
    const int inherited = compiler_runs();
    int status = 1;
    try {
      KnownGraph known;
      Graph graph = known.builder.graph;
      const bool fused = fuse_pointwise(graph) == 2;
      const std::vector<Tensor> results = known.builder.run(graph);
      const bool same = graph_test::max_relative_error(results[0], known.builder.eager[known.bias_grad]) <= 1e-6;
      status = !fused ? 2 : !same ? 3 : compiler_runs() != inherited ? 4 : 0;
    } catch (...) {
      status = 5;
    }
    ::_exit(status);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  ::unsetenv("EMBER_CACHE_DIR");
  std::filesystem::remove_all(directory);
}

TEST_CASE("fusion: without a working compiler the graph stays unfused and still runs") {
  char directory[] = "/tmp/ember_fusion_cache_XXXXXX";
  REQUIRE(::mkdtemp(directory) != nullptr);
  ::setenv("EMBER_CACHE_DIR", directory, 1);
  ::setenv("EMBER_CXX", "/bin/false", 1);
  KnownGraph known;
  Graph graph = known.builder.graph;
  CHECK(fuse_pointwise(graph) == 0);
  CHECK(graph.nodes.size() == known.builder.graph.nodes.size());
  ::unsetenv("EMBER_CXX");
  ::unsetenv("EMBER_CACHE_DIR");
  std::filesystem::remove_all(directory);
}

TEST_CASE("fusion: a group reads at most kMaxFusedInputs tensors, a longer chain splits and still equals eager") {
  // x0 + x1 + ... + x139, one add per input: a single group would read 140 tensors.
  GraphBuilder builder;
  constexpr int kTerms = static_cast<int>(kMaxFusedInputs) + 12;
  ValueId total = builder.input(graph_test::seeded_randn({3}, 100));
  for (int i = 1; i < kTerms; ++i)
    total = builder.node("add", {total, builder.input(graph_test::seeded_randn({3}, 100 + i))}, Attrs{{"alpha", 1.0}});
  builder.graph.outputs = {total};
  Graph graph = builder.graph;
  CHECK(fuse_pointwise(graph) == 2);
  verify(graph);
  size_t most = 0;
  for (const Node& node : graph.nodes) most = std::max(most, node.inputs.size());
  CHECK(most == kMaxFusedInputs);
  CHECK(graph_test::max_relative_error(builder.run(graph).at(0), builder.eager[total]) <= 1e-6);
}

TEST_CASE("fusion: an input a member reads twice counts once toward kMaxFusedInputs") {
  // mul(z, z) + x1 + ... + x127: the whole chain reads exactly kMaxFusedInputs tensors (z once).
  GraphBuilder builder;
  const ValueId z = builder.input(graph_test::seeded_randn({3}, 300));
  ValueId total = builder.node("mul", {z, z});
  for (int i = 1; i < static_cast<int>(kMaxFusedInputs); ++i)
    total = builder.node("add", {total, builder.input(graph_test::seeded_randn({3}, 300 + i))}, Attrs{{"alpha", 1.0}});
  builder.graph.outputs = {total};
  Graph graph = builder.graph;
  CHECK(fuse_pointwise(graph) == 1);
  CHECK(graph.count_op("mul") == 0);  // joined last, when the group already read 128 tensors
  REQUIRE(graph.nodes.size() == 1);
  CHECK(graph.nodes[0].inputs.size() == kMaxFusedInputs);
  CHECK(graph_test::max_relative_error(builder.run(graph).at(0), builder.eager[total]) <= 1e-6);
}

}  // namespace test_fusion
