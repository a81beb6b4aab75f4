// Generated kernels with a dynamic dim (FusedGroup::dynamic_dims) over random groups: the same
// program at two sizes of that dim must emit the same CPU and CUDA text, and the kernels compiled
// once from the first size's text must compute the second size's results too, on the CPU entry
// and on the CUDA kernel (run through cuda_emulation.h). Shapes of rank 1-4 with sizes 0-8, a
// transposed input, broadcasts, and pointwise or sum/mean roots over random dims.
#include <doctest/doctest.h>

#include <random>

#include "cuda_emulation.h"
#include "fusion_test_util.h"
#include "graph/codegen_cpp.h"

namespace test_dynamic_kernels {

using namespace ember;
using namespace ember::graph;
using graph_test::GraphBuilder;

namespace {

struct Case {
  FusedGroup group;
  std::vector<Tensor> inputs;
  std::vector<Tensor> expected;  // eager's output 0
};

// The graph of `seed` with its dynamic dim at `size`: every other draw depends on the seed alone.
GraphBuilder random_graph(uint64_t seed, int64_t size, int& dynamic) {
  std::mt19937_64 random(seed);
  auto pick = [&](int low, int high) { return std::uniform_int_distribution<int>(low, high)(random); };
  const int rank = pick(1, 4);
  dynamic = pick(0, rank - 1);
  Dims sizes = Dims::filled(rank, 1);
  for (int d = 0; d < rank; ++d) sizes[d] = pick(2, 6);
  sizes[dynamic] = size;
  const bool transposed = rank >= 2 && pick(0, 1) == 1;
  Dims broadcast = sizes;
  for (int d = 0; d < rank; ++d)
    if (pick(0, 2) == 0) broadcast[d] = 1;
  const bool exp_step = pick(0, 1) == 1;
  const int root = pick(0, 2);  // 0: pointwise, 1: sum, 2: mean
  Dims dims;
  for (int d = 0; d < rank; ++d)
    if (pick(0, 1) == 1) dims.push_back(d);
  if (dims.size() == 0) dims.push_back(rank - 1);
  const bool keepdim = pick(0, 1) == 1;

  GraphBuilder builder;
  Tensor x = graph_test::seeded_randn(sizes, seed * 3 + 1);
  if (transposed) {  // same shape, transposed storage
    Dims swapped = sizes;
    std::swap(swapped[0], swapped[rank - 1]);
    x = graph_test::seeded_randn(swapped, seed * 3 + 1).transpose(0, rank - 1);
  }
  const ValueId a = builder.input(x);
  const ValueId b = builder.input(graph_test::seeded_randn(broadcast, seed * 3 + 2));
  ValueId chain = builder.node(exp_step ? "exp" : "neg", {builder.node("mul", {a, b})});
  if (root > 0) chain = builder.node(root == 2 ? "mean" : "sum", {chain}, Attrs{{"dims", dims}, {"keepdim", keepdim}});
  builder.graph.outputs = {chain};
  return builder;
}

// The graph's single fused group, named `name`, with `dynamic` marked; false when it did not fuse.
bool fuse_case(GraphBuilder& builder, const std::string& name, int dynamic, Case& result) {
  Graph graph = builder.graph;
  if (fuse_pointwise(graph) != 1) return false;
  for (const Node& node : graph.nodes) {
    const FusedOpDef* fused = as_fused(*node.op);
    if (fused == nullptr) continue;
    result.group = fused->group;
    for (ValueId input : node.inputs) result.inputs.push_back(builder.eager[input]);
    result.expected.push_back(builder.eager[node.outputs[0]]);
  }
  result.group.name = name;
  result.group.dynamic_dims = 1u << dynamic;
  return true;
}

// Runs the CPU entry `function` on the case's inputs.
Tensor run_cpu(FusedCpuFunction function, const Case& test) {
  TensorList outputs;
  outputs.push_back(empty(test.group.output.sizes, {.dtype = test.group.output.dtype}));
  const Attrs none;
  const OpCall call{registry().get("add"), std::span<const Tensor>(test.inputs), none};  // only the inputs are read
  FusedOperands operands;
  fill_fused_operands(test.group, call, outputs, operands);
  function(operands.data.data(), operands.strides.data(), test.group.shape.data(), test.group.shape.size(),
           operands.contiguous ? 1 : 0);
  return outputs[0];
}

void check_close(const Tensor& actual, const Tensor& expected) {
  const double error = graph_test::max_relative_error(actual, expected);
  CHECK(std::isfinite(error));
  CHECK(error <= 1e-6);  // the fused sums accumulate in double, eager's in another order
}

}  // namespace

TEST_CASE("dynamic kernels: 40 random groups emit one text for two sizes, and its kernels compute both") {
  const int64_t sizes[] = {0, 1, 3, 5, 8};
  std::vector<Case> first, second;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    std::mt19937_64 random(seed + 1000);
    const int64_t a = sizes[random() % 5];
    int64_t b = sizes[random() % 5];
    while (b == a) b = sizes[random() % 5];
    int dynamic = 0;
    GraphBuilder at_a = random_graph(seed, a, dynamic), at_b = random_graph(seed, b, dynamic);
    Case one, two;
    const std::string name = "dynamic_" + std::to_string(seed);
    if (!fuse_case(at_a, name, dynamic, one) || !fuse_case(at_b, name, dynamic, two)) continue;
    first.push_back(std::move(one));
    second.push_back(std::move(two));
  }
  REQUIRE(first.size() >= 30);
  std::vector<const FusedGroup*> groups;
  for (const Case& test : first) groups.push_back(&test.group);
  const std::shared_ptr<CompiledModule> cpu = compile_cpu_module(emit_module_source(groups, Target::Cpu));
  const auto cuda = graph_test::compile_emulated(groups);
  for (size_t i = 0; i < first.size(); ++i) {
    INFO(first[i].group.name, ": ", first[i].group.summary(), " over ", first[i].group.shape, " and ",
         second[i].group.shape, ", dynamic dims 0x", std::hex, first[i].group.dynamic_dims, std::dec);
    CHECK(emit_group_source(first[i].group, Target::Cpu) == emit_group_source(second[i].group, Target::Cpu));
    CHECK(emit_group_source(first[i].group, Target::Cuda) == emit_group_source(second[i].group, Target::Cuda));
    const auto function = reinterpret_cast<FusedCpuFunction>(cpu->symbol(first[i].group.name));
    for (const Case* test : {&first[i], &second[i]}) {
      CAPTURE(test->group.shape);
      check_close(run_cpu(function, *test), test->expected[0]);
      check_close(graph_test::run_emulated(*cuda, test->group, test->inputs).at(0), test->expected[0]);
    }
  }
}

}  // namespace test_dynamic_kernels
