// What the fusion pass needs per op: the functor construction expression of each pointwise op
// from its attributes, and the shape rule and CPU kernel of the synthesized fused OpDefs.
#include <cmath>

#include <fmt/format.h>

#include "graph/codegen_cpp.h"
#include "graph/fused_launch.h"
#include "graph/fusion.h"

namespace ember::graph {

namespace {

// A double as an exact C++ literal (hexadecimal floating point), infinities and NaN spelled out.
std::string double_literal(double value) {
  if (std::isnan(value)) return "std::numeric_limits<double>::quiet_NaN()";
  if (std::isinf(value))
    return value > 0 ? "std::numeric_limits<double>::infinity()" : "-std::numeric_limits<double>::infinity()";
  return fmt::format("{:a}", value);
}

}  // namespace

std::string functor_expression(const OpDef& op, const Attrs& attrs, std::string& reason) {
  if (op.functor.empty()) {
    reason = "the op names no functor in kernels/functors.h";
    return "";
  }
  auto number = [&](const char* name) { return double_literal(attrs.get<double>(name)); };
  const std::string& name = op.name;
  // Ops whose attributes construct their functor, as their CPU kernels do.
  if (name == "add" || name == "sub") return fmt::format("{}{{{}}}", op.functor, number("alpha"));
  if (name == "add_scalar" || name == "mul_scalar" || name == "div_scalar" || name == "rsub_scalar" ||
      name == "rdiv_scalar" || name == "pow_scalar")
    return fmt::format("{}{{{}}}", op.functor, number("value"));
  if (name == "clamp") {
    const double infinity = std::numeric_limits<double>::infinity();
    return fmt::format("{}{{{}, {}}}", op.functor, double_literal(attrs.get_or<double>("min", -infinity)),
                       double_literal(attrs.get_or<double>("max", infinity)));
  }
  if (name == "leaky_relu" || name == "leaky_relu_backward")
    return fmt::format("{}{{{}}}", op.functor, number("negative_slope"));
  if (name == "elu" || name == "elu_backward") return fmt::format("{}{{{}}}", op.functor, number("alpha"));
  if (name == "hardtanh" || name == "hardtanh_backward")  // hardtanh's functor is fn::Clamp
    return fmt::format("{}{{{}, {}}}", op.functor, number("min_val"), number("max_val"));
  if (name == "softplus" || name == "softplus_backward")
    return fmt::format("{}{{{}, {}}}", op.functor, number("beta"), number("threshold"));
  if (name == "polygamma") return fmt::format("{}{{{}}}", op.functor, attrs.get<int64_t>("n"));  // fn::Polygamma{n}
  // gelu's CPU kernels call the tanh or erf functor chosen once per call, not fn::Gelu's select.
  if (name == "gelu") return attrs.get<bool>("tanh") ? "ember::fn::GeluTanh{}" : "ember::fn::GeluErf{}";
  if (name == "gelu_backward")
    return attrs.get<bool>("tanh") ? "ember::fn::GeluTanhBackward{}" : "ember::fn::GeluErfBackward{}";
  if (attrs.size() == 0) return op.functor + "{}";
  reason = fmt::format("its attributes ({}) have no known mapping to {}'s members (add the op to "
                       "functor_expression in graph/fusion_ops.cpp)",
                       attrs.str(), op.functor);
  return "";
}

DType FusedGroup::export_dtype(size_t e) const { return steps[exports[e]].dtype == kBool ? kBool : dtype; }

std::string FusedGroup::summary() const {
  std::string text;
  for (const FusedStep& step : steps) text += (text.empty() ? "" : "+") + step.op;
  if (root == FusedRoot::Sum) text += "+sum";
  if (root == FusedRoot::Mean) text += "+mean";
  return text;
}

namespace {

const FusedOpDef& fused_def(const OpCall& call) { return *as_fused(call.op); }

}  // namespace

const FusedOpDef* as_fused(const OpDef& op) {
  return op.infer == fused_shape ? static_cast<const FusedOpDef*>(&op) : nullptr;
}

std::vector<const FusedOpDef*> fused_ops(const Graph& graph) {
  std::vector<const FusedOpDef*> ops;
  for (const Node& node : graph.nodes)
    if (const FusedOpDef* fused = as_fused(*node.op)) ops.push_back(fused);
  return ops;
}

void fused_shape(const OpCall& call, OutputMetas& outputs) {
  const FusedGroup& group = fused_def(call).group;
  check(call.inputs.size() == group.inputs.size(), "{}: expected {} inputs, got {}", group.name,
        group.inputs.size(), call.inputs.size());
  for (size_t k = 0; k < group.inputs.size(); ++k) {
    const Tensor& input = call.input(static_cast<int>(k));
    check(input.defined() && input.sizes() == group.inputs[k].sizes && input.dtype() == group.inputs[k].dtype,
          "{}: input {} must be {} {} (the generated code is specialized for it)", group.name, k,
          group.inputs[k].sizes, group.inputs[k].dtype);
  }
  outputs[0].sizes = group.output.sizes;
  outputs[0].dtype = group.output.dtype;
  for (size_t e = 0; e < group.exports.size(); ++e) {
    outputs[e + 1].sizes = group.shape;
    outputs[e + 1].dtype = group.export_dtype(e);
  }
}

void fused_cpu_kernel(const OpCall& call, TensorList& outputs) {
  const FusedOpDef& def = fused_def(call);
  const FusedGroup& group = def.group;
  const int rank = group.shape.size();
  thread_local FusedOperands operands;  // reused: a launch allocates nothing for its operands
  fill_fused_operands(group, call, outputs, operands);
  const auto function = reinterpret_cast<FusedCpuFunction>(def.function);
  function(operands.data.data(), operands.strides.data(), group.shape.data(), rank, operands.contiguous ? 1 : 0);
}

}  // namespace ember::graph
