// The small fused graphs that the CUDA emulation tests (test_fused_cuda_emulation.cpp) and the
// launch-shape tests (test_fused_cuda_launch.cpp) share: each graph has one fused group, built
// with its inputs on `case_device` (the CPU for the emulation, cuda:0 for the real GPU run), and
// eager's outputs as the expected values.
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "fusion_test_util.h"
#include "graph/fusion.h"

namespace ember::graph_test {

inline Device case_device = kCPU;  // where the case graphs are built

inline Tensor values(const Dims& sizes, uint64_t seed, DType dtype = kFloat32) {
  return to_dtype(seeded_randn(sizes, seed), dtype).to(case_device);
}

// One fused graph: its only group (renamed `name`), the tensors it reads, and what eager computed
// for the group's outputs (output 0, then the exports).
struct Case {
  std::string label;
  graph::FusedGroup group;
  std::vector<Tensor> inputs;
  std::vector<Tensor> expected;
};

inline Case fuse_one(const std::string& label, GraphBuilder& builder) {
  graph::Graph graph = builder.graph;
  REQUIRE(graph::fuse_pointwise(graph) == 1);
  Case result{label, {}, {}, {}};
  for (const graph::Node& node : graph.nodes) {
    const graph::FusedOpDef* fused = graph::as_fused(*node.op);
    if (fused == nullptr) continue;
    result.group = fused->group;
    for (graph::ValueId input : node.inputs) result.inputs.push_back(builder.eager[input]);
    for (graph::ValueId output : node.outputs) result.expected.push_back(builder.eager[output]);
  }
  REQUIRE(!result.expected.empty());
  result.group.name = "emulated_" + std::to_string(std::hash<std::string>{}(label) % 100000) + "_" +
                      std::to_string(result.expected.size());
  return result;
}

// relu_backward * row, with a column added: broadcast inputs ([6] and [8, 1]).
inline GraphBuilder broadcast_pointwise() {
  GraphBuilder builder;
  const graph::ValueId grad = builder.input(values({8, 6}, 1));
  const graph::ValueId output = builder.input(values({8, 6}, 2));
  const graph::ValueId row = builder.input(values({6}, 3));
  const graph::ValueId column = builder.input(values({8, 1}, 4));
  const graph::ValueId masked = builder.node("relu_backward", {grad, output});
  const graph::ValueId scaled = builder.node("mul", {masked, row});
  builder.graph.outputs = {builder.node("add", {scaled, column}, Attrs{{"alpha", 0.5}})};
  return builder;
}

// A transposed (non-contiguous) input in float64.
inline GraphBuilder strided_pointwise() {
  GraphBuilder builder;
  const graph::ValueId x = builder.input(transpose(values({7, 5}, 5, kFloat64), 0, 1));
  const graph::ValueId y = builder.input(values({5, 7}, 6, kFloat64));
  const graph::ValueId product = builder.node("mul", {x, y});
  builder.graph.outputs = {builder.node("tanh", {product})};
  return builder;
}

// The hidden layer's backward: the masked gradient is exported to a GEMM while the kernel sums
// the bias gradient over the batch (leading dim).
inline GraphBuilder bias_gradient_with_export(DType dtype) {
  GraphBuilder builder;
  const graph::ValueId grad = builder.input(values({33, 20}, 7, dtype));
  const graph::ValueId hidden = builder.input(values({33, 20}, 8, dtype));
  const graph::ValueId x = builder.input(values({33, 4}, 9, dtype));
  const graph::ValueId masked = builder.node("relu_backward", {grad, hidden});
  const graph::ValueId bias_grad = builder.node("sum", {masked}, Attrs{{"dims", Dims{0}}, {"keepdim", false}});
  const graph::ValueId masked_t =
      builder.node("transpose", {masked}, Attrs{{"dim0", int64_t{0}}, {"dim1", int64_t{1}}});
  const graph::ValueId weight_grad = builder.node("mm", {masked_t, x});
  builder.graph.outputs = {bias_grad, weight_grad};
  return builder;
}

// exp(x * y) reduced over `dims` (sum, or mean) of a `sizes` input.
inline GraphBuilder reduction(const Dims& sizes, const Dims& dims, bool mean, bool keepdim = false) {
  GraphBuilder builder;
  const graph::ValueId x = builder.input(values(sizes, 10));
  const graph::ValueId y = builder.input(values({sizes[sizes.size() - 1]}, 11));
  const graph::ValueId product = builder.node("mul", {x, y});
  builder.graph.outputs = {builder.node(mean ? "mean" : "sum", {product}, Attrs{{"dims", dims}, {"keepdim", keepdim}})};
  return builder;
}

// get_total_norm's part for one float32 gradient: its float64 sum of squares over every dim.
inline GraphBuilder float64_sum_of_squares(const Dims& sizes) {
  GraphBuilder builder;
  const graph::ValueId grad = builder.input(values(sizes, 12));
  const graph::ValueId wide = builder.node("to_dtype", {grad}, Attrs{{"dtype", kFloat64}});
  const graph::ValueId squares = builder.node("mul", {wide, wide});
  builder.graph.outputs = {builder.node("sum", {squares}, Attrs{{"dims", Dims{}}, {"keepdim", false}})};
  return builder;
}

// Every case graph, built on `on`.
inline std::vector<std::pair<std::string, GraphBuilder>> case_graphs(Device on) {
  case_device = on;
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
  case_device = kCPU;
  return graphs;
}

inline std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (auto& [label, builder] : case_graphs(kCPU)) cases.push_back(fuse_one(label, builder));
  return cases;
}

}  // namespace ember::graph_test
