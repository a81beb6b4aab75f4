// GEMM epilogue fusion: linear -> relu / gelu becomes one linear node with attr activation, so
// the activation runs in the GEMM's output pass (CPU) or cuBLASLt's epilogue (CUDA) instead of a
// second pass over memory.
#include <fmt/format.h>

#include "graph/pass_util.h"
#include "graph/passes.h"
#include "kernels/gemm_activation.h"

namespace ember::graph {

namespace {

// The activation a node applies, or None when it is not one the GEMM can apply.
Activation activation_of(const Node& node) {
  if (node.refresh || node.inputs.size() != 1 || node.inputs[0] < 0) return Activation::None;
  if (node.op->name == "relu") return Activation::Relu;
  if (node.op->name == "gelu") return node.attrs.get_or<bool>("tanh", false) ? Activation::GeluTanh : Activation::Gelu;
  return Activation::None;
}

}  // namespace

int fuse_gemm_epilogues(Graph& graph, std::vector<std::string>* notes) {
  const std::vector<bool> pinned = pinned_values(graph);
  // Readers of each value: node inputs, outputs and write-backs all count.
  std::vector<int> readers(graph.values.size(), 0);
  std::vector<int> producer(graph.values.size(), -1);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    for (ValueId input : graph.nodes[n].inputs)
      if (input >= 0) ++readers[input];
    for (ValueId output : graph.nodes[n].outputs) producer[output] = static_cast<int>(n);
  }
  for (ValueId output : graph.outputs) ++readers[output];
  for (const WriteBack& write : graph.write_backs) ++readers[write.value];
  for (const GradWriteBack& write : graph.grad_write_backs)
    if (write.value >= 0) ++readers[write.value];

  std::vector<bool> removed(graph.nodes.size(), false);
  int fused = 0;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& activation_node = graph.nodes[n];
    const Activation activation = activation_of(activation_node);
    if (activation == Activation::None) continue;
    const ValueId pre = activation_node.inputs[0];
    if (producer[pre] < 0) continue;
    Node& linear = graph.nodes[producer[pre]];
    if (linear.op->name != "linear" || linear.refresh || linear.attrs.get_or<int64_t>("activation", 0) != 0) continue;
    // The pre-activation disappears, so nothing else may read it. This keeps relu in training
    // graphs (relu_backward reads relu's output, which the fused node produces) but not gelu,
    // whose backward reads the pre-activation.
    if (readers[pre] != 1 || pinned[pre]) {
      if (notes != nullptr)
        notes->push_back(fmt::format("not fused: linear %{} -> {}: the pre-activation has {} readers", pre,
                                     activation_node.op->name, readers[pre]));
      continue;
    }
    // The epilogue applies the activation before a 16-bit output is rounded, where eager rounds
    // the GEMM's result first: gelu of the unrounded value differs. relu does not (rounding keeps
    // the sign and rounds 0 to 0), so only relu rides a 16-bit GEMM.
    const DType dtype = graph.values[pre].meta.dtype;
    if (!is_floating(dtype)) {  // the integer product (CPU only) has no epilogue
      if (notes != nullptr)
        notes->push_back(fmt::format("not fused: linear %{} -> {}: the {} GEMM has no epilogue", pre,
                                     activation_node.op->name, dtype));
      continue;
    }
    if ((dtype == DType::BFloat16 || dtype == DType::Float16) && activation != Activation::Relu) {
      if (notes != nullptr)
        notes->push_back(fmt::format("not fused: linear %{} -> {}: a {} GEMM would apply it before rounding", pre,
                                     activation_node.op->name, dtype));
      continue;
    }
    linear.attrs.set("activation", static_cast<int64_t>(activation));
    linear.outputs[0] = activation_node.outputs[0];  // computed earlier now: its inputs all are
    removed[n] = true;
    ++fused;
    if (notes != nullptr)
      notes->push_back(fmt::format("fused: linear %{} -> {} %{} into linear(activation={})", pre,
                                   activation_node.op->name, activation_node.outputs[0],
                                   activation_name(activation)));
  }
  remove_nodes(graph, removed);
  return fused;
}

}  // namespace ember::graph
