// The generated CUDA kernels of fused groups, run on the CPU through cuda_emulation.h with the
// argument block the CUDA backend packs: pointwise groups on broadcast, strided and exported
// operands, and reductions over leading, trailing, middle and all dims, each with the launch the
// backend uses and with deliberately tiny ones (so grid-stride loops and the split of one
// output's elements over threads run more than once, and over blocks: pieces added by the
// finishing kernel). Every result is compared with eager. The last case runs the same graphs on
// cuda:0 when a GPU is usable (tools/gpu_check.sh).
#include <doctest/doctest.h>

#include <functional>
#include <random>

#include <fmt/format.h>

#include "cuda_emulation.h"
#include "fusion_test_util.h"

using namespace ember;
using namespace ember::graph;
using graph_test::GraphBuilder;

namespace {

Device device = kCPU;  // where the case graphs are built: the CPU for emulation, cuda:0 for real

Tensor values(const Dims& sizes, uint64_t seed, DType dtype = kFloat32) {
  return to_dtype(graph_test::seeded_randn(sizes, seed), dtype).to(device);
}

// One fused graph: its only group (renamed `name`), the tensors it reads, and what eager computed
// for the group's outputs (output 0, then the exports).
struct Case {
  std::string label;
  FusedGroup group;
  std::vector<Tensor> inputs;
  std::vector<Tensor> expected;
};

Case fuse_one(const std::string& label, GraphBuilder& builder) {
  Graph graph = builder.graph;
  REQUIRE(fuse_pointwise(graph) == 1);
  Case result{label, {}, {}, {}};
  for (const Node& node : graph.nodes) {
    const FusedOpDef* fused = as_fused(*node.op);
    if (fused == nullptr) continue;
    result.group = fused->group;
    for (ValueId input : node.inputs) result.inputs.push_back(builder.eager[input]);
    for (ValueId output : node.outputs) result.expected.push_back(builder.eager[output]);
  }
  REQUIRE(!result.expected.empty());
  result.group.name = "emulated_" + std::to_string(std::hash<std::string>{}(label) % 100000) + "_" +
                      std::to_string(result.expected.size());
  return result;
}

// relu_backward * row, with a column added: broadcast inputs ([6] and [8, 1]).
GraphBuilder broadcast_pointwise() {
  GraphBuilder builder;
  const ValueId grad = builder.input(values({8, 6}, 1));
  const ValueId output = builder.input(values({8, 6}, 2));
  const ValueId row = builder.input(values({6}, 3));
  const ValueId column = builder.input(values({8, 1}, 4));
  const ValueId masked = builder.node("relu_backward", {grad, output});
  const ValueId scaled = builder.node("mul", {masked, row});
  builder.graph.outputs = {builder.node("add", {scaled, column}, Attrs{{"alpha", 0.5}})};
  return builder;
}

// A transposed (non-contiguous) input in float64.
GraphBuilder strided_pointwise() {
  GraphBuilder builder;
  const ValueId x = builder.input(transpose(values({7, 5}, 5, kFloat64), 0, 1));
  const ValueId y = builder.input(values({5, 7}, 6, kFloat64));
  const ValueId product = builder.node("mul", {x, y});
  builder.graph.outputs = {builder.node("tanh", {product})};
  return builder;
}

// The hidden layer's backward: the masked gradient is exported to a GEMM while the kernel sums
// the bias gradient over the batch (leading dim).
GraphBuilder bias_gradient_with_export(DType dtype) {
  GraphBuilder builder;
  const ValueId grad = builder.input(values({33, 20}, 7, dtype));
  const ValueId hidden = builder.input(values({33, 20}, 8, dtype));
  const ValueId x = builder.input(values({33, 4}, 9, dtype));
  const ValueId masked = builder.node("relu_backward", {grad, hidden});
  const ValueId bias_grad = builder.node("sum", {masked}, Attrs{{"dims", Dims{0}}, {"keepdim", false}});
  const ValueId weight_grad = builder.node("mm", {builder.node("transpose", {masked}, Attrs{{"dim0", int64_t{0}}, {"dim1", int64_t{1}}}), x});
  builder.graph.outputs = {bias_grad, weight_grad};
  return builder;
}

// exp(x * y) reduced over `dims` (sum, or mean) of a `sizes` input.
GraphBuilder reduction(const Dims& sizes, const Dims& dims, bool mean, bool keepdim = false) {
  GraphBuilder builder;
  const ValueId x = builder.input(values(sizes, 10));
  const ValueId y = builder.input(values({sizes[sizes.size() - 1]}, 11));
  const ValueId product = builder.node("mul", {x, y});
  builder.graph.outputs = {builder.node(mean ? "mean" : "sum", {product}, Attrs{{"dims", dims}, {"keepdim", keepdim}})};
  return builder;
}

// get_total_norm's part for one float32 gradient: its float64 sum of squares over every dim.
GraphBuilder float64_sum_of_squares(const Dims& sizes) {
  GraphBuilder builder;
  const ValueId grad = builder.input(values(sizes, 12));
  const ValueId wide = builder.node("to_dtype", {grad}, Attrs{{"dtype", kFloat64}});
  const ValueId squares = builder.node("mul", {wide, wide});
  builder.graph.outputs = {builder.node("sum", {squares}, Attrs{{"dims", Dims{}}, {"keepdim", false}})};
  return builder;
}

// Every case graph, built on `device`.
std::vector<std::pair<std::string, GraphBuilder>> case_graphs(Device on) {
  device = on;
  std::vector<std::pair<std::string, GraphBuilder>> graphs;
  graphs.emplace_back("broadcast pointwise", broadcast_pointwise());
  graphs.emplace_back("strided pointwise", strided_pointwise());
  graphs.emplace_back("bias gradient with export, float32", bias_gradient_with_export(kFloat32));
  graphs.emplace_back("bias gradient with export, bfloat16", bias_gradient_with_export(kBFloat16));
  graphs.emplace_back("trailing dim, 50 per output", reduction({5, 50}, Dims{1}, false));
  graphs.emplace_back("middle dim, kept", reduction({3, 4, 5}, Dims{1}, false, true));
  graphs.emplace_back("leading and trailing dims", reduction({3, 4, 5}, Dims{0, 2}, true));
  graphs.emplace_back("every dim, mean", reduction({7, 9}, Dims{}, true));
  graphs.emplace_back("an empty reduced dim", reduction({0, 3}, Dims{0}, false));
  graphs.emplace_back("float64 sum of squares of a [64, 60] float32", float64_sum_of_squares({64, 60}));
  graphs.emplace_back("float64 sum of squares of a [10] float32", float64_sum_of_squares({10}));
  // Long enough that the backend's own launch splits them over blocks (3 pieces each).
  graphs.emplace_back("leading dim of 600, split over blocks", reduction({600, 40}, Dims{0}, false));
  graphs.emplace_back("whole-tensor mean of 9000, split over blocks", reduction({9000}, Dims{}, true));
  device = kCPU;
  return graphs;
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (auto& [label, builder] : case_graphs(kCPU)) cases.push_back(fuse_one(label, builder));
  return cases;
}

}  // namespace

TEST_CASE("cuda emulation: generated fused kernels, run on the CPU with the packed arguments, equal eager") {
  const std::vector<Case> cases = all_cases();
  std::vector<const FusedGroup*> groups;
  for (const Case& test : cases) groups.push_back(&test.group);
  const auto module = graph_test::compile_emulated(groups);
  for (const Case& test : cases) {
    const bool reduction = test.group.root != FusedRoot::None;
    const FusedCudaLaunch tiny = reduction ? FusedCudaLaunch{2, 2, 3} : FusedCudaLaunch{2, 3, 1};
    const FusedCudaLaunch in_pieces = reduction ? FusedCudaLaunch{2, 2, 3, 3} : tiny;
    for (const FusedCudaLaunch& launch : {fused_cuda_launch(test.group), tiny, in_pieces}) {
      INFO(test.label, ": ", test.group.summary(), " over ", test.group.shape, ", grid ", launch.grid, " x ",
           launch.pieces, ", block ", launch.block_x, " x ", launch.block_y);
      const std::vector<Tensor> results = graph_test::run_emulated(*module, test.group, test.inputs, launch);
      REQUIRE(results.size() == test.expected.size());
      // Sums accumulate in double in another order than eager's; bfloat16 rounds the sum once.
      const double tolerance = test.group.dtype == kBFloat16 ? 1.0 / 128 : 1e-6;
      for (size_t i = 0; i < results.size(); ++i) {
        CAPTURE(i);
        const double error = graph_test::max_relative_error(results[i], test.expected[i]);
        CHECK(std::isfinite(error));
        CHECK(error <= tolerance);
      }
    }
  }
}

// A random case from `seed`: a mul (+ exp) chain over a rank-1..4 shape with sizes 0..6, one
// input possibly transposed (strided), the other broadcast on some dims, ending pointwise or in a
// sum/mean over a random non-empty set of dims; plus a random small launch shape (a reduction's
// also split into 1-4 pieces over blocks).
std::pair<GraphBuilder, FusedCudaLaunch> random_case(uint64_t seed) {
  std::mt19937_64 random(seed);
  auto pick = [&](int low, int high) { return std::uniform_int_distribution<int>(low, high)(random); };
  const int rank = pick(1, 4);
  Dims sizes = Dims::filled(rank, 1);
  for (int d = 0; d < rank; ++d) sizes[d] = pick(0, 9) == 0 ? 0 : pick(1, 6);
  GraphBuilder builder;
  Tensor x = values(sizes, seed * 3 + 1);
  if (rank >= 2 && pick(0, 1) == 1) {  // same shape, transposed storage
    Dims swapped = sizes;
    std::swap(swapped[0], swapped[rank - 1]);
    x = values(swapped, seed * 3 + 1).transpose(0, rank - 1);
  }
  Dims broadcast = sizes;
  for (int d = 0; d < rank; ++d)
    if (pick(0, 2) == 0) broadcast[d] = 1;
  const ValueId a = builder.input(x);
  const ValueId b = builder.input(values(broadcast, seed * 3 + 2));
  ValueId chain = builder.node("mul", {a, b});
  chain = builder.node(pick(0, 1) ? "exp" : "neg", {chain});
  const bool reduction = pick(0, 2) > 0;
  if (reduction) {
    Dims dims;
    for (int d = 0; d < rank; ++d)
      if (pick(0, 1) == 1) dims.push_back(d);
    if (dims.size() == 0) dims.push_back(rank - 1);
    const bool mean = pick(0, 1) == 1;
    chain = builder.node(mean ? "mean" : "sum", {chain}, Attrs{{"dims", dims}, {"keepdim", pick(0, 1) == 1}});
  }
  builder.graph.outputs = {chain};
  const auto grid = static_cast<unsigned>(pick(1, 3));
  const auto block_x = static_cast<unsigned>(pick(1, 5));
  const auto block_y = static_cast<unsigned>(pick(1, 4));
  const auto pieces = static_cast<unsigned>(reduction ? pick(1, 4) : 1);
  return {std::move(builder), FusedCudaLaunch{grid, block_x, block_y, pieces}};
}

TEST_CASE("cuda emulation: 60 random shapes, strides, broadcasts and reduced dims equal eager") {
  std::vector<Case> cases;
  std::vector<FusedCudaLaunch> launches;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    auto [builder, launch] = random_case(seed);
    Graph graph = builder.graph;
    if (fuse_pointwise(graph) != 1) continue;  // e.g. a mean of an empty dim's NaN is still fused
    cases.push_back(fuse_one("random " + std::to_string(seed), builder));
    launches.push_back(launch);
  }
  REQUIRE(cases.size() >= 55);
  std::vector<const FusedGroup*> groups;
  for (const Case& test : cases) groups.push_back(&test.group);
  const auto module = graph_test::compile_emulated(groups);
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& test = cases[i];
    for (const FusedCudaLaunch& launch : {fused_cuda_launch(test.group), launches[i]}) {
      INFO(test.label, ": ", test.group.summary(), " over ", test.group.shape, " reducing 0x", std::hex,
           test.group.reduced_dims, std::dec, ", grid ", launch.grid, " x ", launch.pieces, ", block ", launch.block_x,
           " x ", launch.block_y);
      const double error =
          graph_test::max_relative_error(graph_test::run_emulated(*module, test.group, test.inputs, launch).at(0),
                                         test.expected.at(0));
      CHECK(std::isfinite(error));
      CHECK(error <= 1e-6);
    }
  }
}

TEST_CASE("cuda emulation: the launch splits reduced elements over threads along the axis that reads adjacent memory") {
  GraphBuilder bias = bias_gradient_with_export(kFloat32);
  const FusedGroup leading = fuse_one("leading", bias).group;  // [33, 20] -> [20]
  const FusedCudaLaunch across = fused_cuda_launch(leading);
  CHECK(across.block_x == 32);  // adjacent outputs
  CHECK(across.block_y == 32);  // 33 rows: split 32 ways
  CHECK(across.grid == 1);
  GraphBuilder rows = reduction({5, 50}, Dims{1}, false);
  const FusedGroup trailing = fuse_one("trailing", rows).group;  // [5, 50] -> [5]
  const FusedCudaLaunch along = fused_cuda_launch(trailing);
  CHECK(along.block_x == 32);  // adjacent elements of one row
  CHECK(along.block_y == 8);
  CHECK(along.grid == 1);
  GraphBuilder chain = broadcast_pointwise();
  const FusedGroup pointwise = fuse_one("pointwise", chain).group;
  CHECK(fused_cuda_launch(pointwise).block_x == 256);
  CHECK(fused_cuda_launch(pointwise).grid == 1);
  GraphBuilder empty_rows = reduction({0, 3}, Dims{0}, false);
  CHECK(fused_cuda_launch(fuse_one("empty", empty_rows).group).grid == 1);  // 3 zero sums
  // The argument block: pointers to output 0, 2 inputs and 1 export; 2 x 2 strides; the piece
  // sums' pointer and count; the flag.
  CHECK(fused_cuda_argument_words(leading) == 4 + 4 + 2 + 1);
}

// A launch as "grid <x> x <pieces>, block <x> x <y>", so one CHECK shows all of it.
std::string launch_text(const FusedCudaLaunch& launch) {
  return fmt::format("grid {} x {}, block {} x {}", launch.grid, launch.pieces, launch.block_x, launch.block_y);
}

TEST_CASE("cuda emulation: few long outputs are split over blocks as eager's reductions are, short ones never") {
  GraphBuilder columns = reduction({33, 20}, Dims{0}, false);
  FusedGroup bias = fuse_one("columns", columns).group;
  // The large model's bias gradients: 4096 outputs of a 4096 batch. Unsplit they were 128 blocks
  // of 32 x 32; now 8 pieces of 512 rows: 1024 blocks of 32 x 8, as eager's column sums.
  bias.shape = Dims{4096, 4096};
  CHECK(launch_text(fused_cuda_launch(bias)) == "grid 128 x 8, block 32 x 8");
  CHECK(launch_text(finish_launch(bias)) == "grid 16 x 1, block 256 x 1");
  // The seed and wide models' (batch 32 and 256): one piece, the block as before.
  bias.shape = Dims{32, 1024};
  CHECK(launch_text(fused_cuda_launch(bias)) == "grid 32 x 1, block 32 x 32");
  bias.shape = Dims{256, 1024};
  CHECK(launch_text(fused_cuda_launch(bias)) == "grid 32 x 1, block 32 x 32");
  // A whole-tensor mean of 16 M elements: one output, so one row of 256 threads per block, and
  // eager's 1024 blocks.
  GraphBuilder whole = reduction({7, 9}, Dims{}, true);
  FusedGroup mean = fuse_one("whole", whole).group;
  mean.shape = Dims{4096, 4096};
  CHECK(launch_text(fused_cuda_launch(mean)) == "grid 1 x 1024, block 256 x 1");
  // Rows of 4096 or fewer elements are never split: 2 outputs get 128 threads each.
  GraphBuilder rows = reduction({2, 4096}, Dims{1}, false);
  CHECK(launch_text(fused_cuda_launch(fuse_one("rows", rows).group)) == "grid 1 x 1, block 128 x 2");
}

// tanh(x * row) over an [n, 6] input: a pointwise group whose leading dim is `n`.
GraphBuilder rows_pointwise(int64_t n) {
  GraphBuilder builder;
  const ValueId x = builder.input(values({n, 6}, 12));
  const ValueId row = builder.input(values({6}, 13));
  builder.graph.outputs = {builder.node("tanh", {builder.node("mul", {x, row})})};
  return builder;
}

TEST_CASE("cuda emulation: a group with a dynamic dim is emitted once and its kernel runs at other sizes") {
  // Each graph at two sizes of one dim; the other dims (6, 5, 3, 50) never take those sizes.
  const std::vector<std::pair<std::string, std::function<GraphBuilder(int64_t)>>> graphs = {
      {"pointwise", [](int64_t n) { return rows_pointwise(n); }},
      {"leading sum", [](int64_t n) { return reduction({n, 5}, Dims{0}, false); }},
      {"trailing mean", [](int64_t n) { return reduction({n, 50}, Dims{1}, true); }},
      {"middle kept, mean of the rest", [](int64_t n) { return reduction({3, n, 5}, Dims{0, 2}, true); }},
      {"every dim, mean", [](int64_t n) { return reduction({n, 5}, Dims{}, true); }},
  };
  std::vector<Case> compiled, other;
  for (const auto& [label, build] : graphs) {
    for (const int64_t n : {int64_t{37}, int64_t{4}}) {
      GraphBuilder builder = build(n);
      Case test = fuse_one("dynamic " + label, builder);
      for (int d = 0; d < test.group.shape.size(); ++d)
        if (test.group.shape[d] == n) test.group.dynamic_dims |= 1u << d;
      (n == 37 ? compiled : other).push_back(std::move(test));
    }
  }
  std::vector<const FusedGroup*> groups;
  for (const Case& test : compiled) groups.push_back(&test.group);
  const auto module = graph_test::compile_emulated(groups);
  for (size_t i = 0; i < compiled.size(); ++i) {
    INFO(compiled[i].label);
    REQUIRE(compiled[i].group.dynamic_dims != 0);
    // The text names no size of the dynamic dim: the size-4 group runs the size-37 kernel.
    CHECK(emit_group_source(compiled[i].group, Target::Cuda) == emit_group_source(other[i].group, Target::Cuda));
    for (const Case* test : {&compiled[i], &other[i]}) {
      for (const FusedCudaLaunch& launch :
           {fused_cuda_launch(test->group), FusedCudaLaunch{2, 2, 3}, FusedCudaLaunch{2, 2, 3, 2}}) {
        const bool reduction = test->group.root != FusedRoot::None;
        const FusedCudaLaunch used = reduction ? launch : FusedCudaLaunch{launch.grid, launch.block_x, 1};
        CAPTURE(test->group.shape);
        const double error = graph_test::max_relative_error(
            graph_test::run_emulated(*module, test->group, test->inputs, used).at(0), test->expected.at(0));
        CHECK(std::isfinite(error));
        CHECK(error <= 1e-6);
      }
    }
  }
  // The shape travels in the argument block: pointers, strides, 2 sizes, the flag.
  const FusedGroup& pointwise = compiled[0].group;
  CHECK(fused_cuda_argument_words(pointwise) == 3 + 2 * 2 + 2 + 1);
}

TEST_CASE("cuda fusion: the same graphs built on cuda:0 run their fused kernels there and equal eager") {
  if (!ember::testing::cuda_or_skip()) return;
  for (auto& [label, builder] : case_graphs(Device(DeviceType::CUDA, 0))) {
    INFO(label);
    Graph graph = builder.graph;
    REQUIRE(fuse_pointwise(graph) == 1);
    const std::vector<Tensor> results = builder.run(graph);
    REQUIRE(results.size() == builder.graph.outputs.size());
    // Eager's CUDA reductions accumulate in float, in a tree order: a looser bound than on the
    // CPU, still far below what a wrong index or a lost part gives.
    const double tolerance = label.find("bfloat16") != std::string::npos ? 1.0 / 128 : 1e-5;
    for (size_t i = 0; i < results.size(); ++i) {
      CHECK(results[i].device() == Device(DeviceType::CUDA, 0));
      const double error = graph_test::max_relative_error(results[i].to(kCPU), builder.eager[graph.outputs[i]].to(kCPU));
      CHECK(std::isfinite(error));
      CHECK(error <= tolerance);
    }
  }
}
