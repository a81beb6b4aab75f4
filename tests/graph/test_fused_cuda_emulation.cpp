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

#include "cuda_emulation.h"
#include "fused_case_graphs.h"

namespace test_fused_cuda_emulation {

using namespace ember;
using namespace ember::graph;
using namespace ember::graph_test;

TEST_CASE("cuda emulation: generated fused kernels, run on the CPU with the packed arguments, equal eager") {
  const std::vector<Case> cases = all_cases();
  std::vector<const FusedGroup*> groups;
  for (const Case& test : cases) groups.push_back(&test.group);
  const auto module = compile_emulated(groups);
  for (const Case& test : cases) {
    const bool reduction = test.group.root != FusedRoot::None;
    const FusedCudaLaunch tiny = reduction ? FusedCudaLaunch{2, 2, 3} : FusedCudaLaunch{2, 3, 1};
    const FusedCudaLaunch in_pieces = reduction ? FusedCudaLaunch{2, 2, 3, 3} : tiny;
    for (const FusedCudaLaunch& launch : {fused_cuda_launch(test.group), tiny, in_pieces}) {
      INFO(test.label, ": ", test.group.summary(), " over ", test.group.shape, ", grid ", launch.grid, " x ",
           launch.pieces, ", block ", launch.block_x, " x ", launch.block_y);
      const std::vector<Tensor> results = run_emulated(*module, test.group, test.inputs, launch);
      REQUIRE(results.size() == test.expected.size());
      // Sums accumulate in double in another order than eager's; bfloat16 rounds the sum once.
      const double tolerance = test.group.dtype == kBFloat16 ? 1.0 / 128 : 1e-6;
      for (size_t i = 0; i < results.size(); ++i) {
        CAPTURE(i);
        const double error = max_relative_error(results[i], test.expected[i]);
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
  const auto module = compile_emulated(groups);
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& test = cases[i];
    for (const FusedCudaLaunch& launch : {fused_cuda_launch(test.group), launches[i]}) {
      INFO(test.label, ": ", test.group.summary(), " over ", test.group.shape, " reducing 0x", std::hex,
           test.group.reduced_dims, std::dec, ", grid ", launch.grid, " x ", launch.pieces, ", block ", launch.block_x,
           " x ", launch.block_y);
      const double error =
          max_relative_error(run_emulated(*module, test.group, test.inputs, launch).at(0),
                                         test.expected.at(0));
      CHECK(std::isfinite(error));
      CHECK(error <= 1e-6);
    }
  }
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
  const auto module = compile_emulated(groups);
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
        const double error = max_relative_error(
            run_emulated(*module, test->group, test->inputs, used).at(0), test->expected.at(0));
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
      const double error = max_relative_error(results[i].to(kCPU), builder.eager[graph.outputs[i]].to(kCPU));
      CHECK(std::isfinite(error));
      CHECK(error <= tolerance);
    }
  }
}

}  // namespace test_fused_cuda_emulation
