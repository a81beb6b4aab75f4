// Shared by the fusion tests: a graph builder that runs each op eagerly while adding its node (so
// node types come from the ops' own rules and the eager result is the reference), and a
// comparison of tensors within a relative tolerance that treats NaN as equal to NaN.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "graph/executor.h"
#include "graph/ir.h"
#include "runtime/ember.h"
#include "skip_case.h"

namespace ember::graph_test {

// randn of `sizes` drawn from a fixed seed.
inline Tensor seeded_randn(const Dims& sizes, uint64_t seed) {
  manual_seed(seed);
  return randn(sizes);
}

struct GraphBuilder {
  graph::Graph graph;
  std::vector<Tensor> inputs;  // the graph inputs, in order
  std::vector<Tensor> eager;   // per value id: what eager execution computed

  graph::ValueId input(const Tensor& tensor) {
    const graph::ValueId id = graph.add_input(graph::meta_of(tensor));
    inputs.push_back(tensor);
    eager.resize(graph.values.size());
    eager[id] = tensor;
    return id;
  }
  // Runs `op` eagerly on the inputs' eager values (in-place ops on clones) and records the node.
  graph::ValueId node(const std::string& op_name, const std::vector<graph::ValueId>& ids, const Attrs& attrs = {}) {
    const OpDef& op = registry().get(op_name);
    std::vector<Tensor> arguments;
    for (graph::ValueId id : ids) arguments.push_back(op.kind == OpKind::InPlace ? eager[id].clone() : eager[id]);
    const Tensor result = dispatch_one(op, arguments, attrs);
    const TensorMeta meta = graph::meta_of(result);
    const int n = graph.add_node(op, attrs, ids, std::span<const TensorMeta>(&meta, 1));
    const graph::ValueId id = graph.nodes[n].outputs[0];
    eager.resize(graph.values.size());
    eager[id] = result;
    return id;
  }
  std::vector<Tensor> run(graph::Graph replayed) const {
    std::vector<Tensor> copies;  // in-place nodes write into their inputs
    for (const Tensor& tensor : inputs) copies.push_back(tensor.clone());
    graph::Executor executor(std::move(replayed));
    return executor.run(copies);
  }
};

// Largest |actual - expected| / max(|expected|, 1), with NaN matching NaN; infinity when the
// shapes or dtypes differ, or NaN or infinite positions disagree, so `error <= tolerance` fails.
inline double max_relative_error(const Tensor& actual, const Tensor& expected) {
  constexpr double kMismatch = std::numeric_limits<double>::infinity();
  if (actual.sizes() != expected.sizes() || actual.dtype() != expected.dtype()) return kMismatch;
  const std::vector<double> a = to_dtype(actual, kFloat64).contiguous().to_vector<double>();
  const std::vector<double> b = to_dtype(expected, kFloat64).contiguous().to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) {
      if (std::isnan(a[i]) != std::isnan(b[i])) return kMismatch;
      continue;
    }
    if (a[i] == b[i]) continue;  // equal infinities too
    if (std::isinf(a[i]) || std::isinf(b[i])) return kMismatch;  // inf / inf would be NaN, which max drops
    worst = std::max(worst, std::abs(a[i] - b[i]) / std::max(std::abs(b[i]), 1.0));
  }
  return worst;
}

inline bool bits_equal_or_nan(const Tensor& actual, const Tensor& expected) { return max_relative_error(actual, expected) == 0; }

// Each of `compiled` within `tolerance` (max_relative_error) of the same one of `eager`: a
// compiled training run's parameters against an eager run's after the same steps.
inline void check_same_values(const std::vector<Tensor>& compiled, const std::vector<Tensor>& eager,
                              double tolerance = 1e-5) {
  REQUIRE(compiled.size() == eager.size());
  for (size_t i = 0; i < eager.size(); ++i) {
    INFO("tensor ", i);
    CHECK(max_relative_error(compiled[i], eager[i]) <= tolerance);
  }
}

}  // namespace ember::graph_test
