// Graphs built from types alone (no tensors, no GPU): inputs and nodes given by their metas, so
// passes and plans for CUDA-typed graphs are tested on machines without a GPU.
#pragma once

#include <string>
#include <vector>

#include "graph/ir.h"
#include "runtime/ember.h"

namespace ember::graph_test {

inline const Device kGpu{DeviceType::CUDA, 0};

struct TypedGraph {
  graph::Graph graph;

  graph::ValueId input(const Dims& sizes, Device device) {
    return graph.add_input(TensorMeta{sizes, kFloat32, device});
  }
  // Adds a node of registry op `op` with one output of `meta`; returns the node's index.
  int add(const std::string& op, std::vector<graph::ValueId> inputs, const TensorMeta& meta, const Attrs& attrs = {}) {
    return graph.add_node(registry().get(op), attrs, std::move(inputs), std::span<const TensorMeta>(&meta, 1));
  }
  // The same, returning the node's output value.
  graph::ValueId node(const std::string& op, std::vector<graph::ValueId> inputs, const TensorMeta& meta,
                      const Attrs& attrs = {}) {
    return graph.nodes[add(op, std::move(inputs), meta, attrs)].outputs[0];
  }
};

}  // namespace ember::graph_test
