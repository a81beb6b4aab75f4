// The autograd node of a dispatched call (see dispatch_internal.h).
#include "runtime/autograd/node.h"
#include "runtime/dispatch.h"
#include "runtime/dispatch_internal.h"

namespace ember::dispatch_detail {

std::shared_ptr<autograd::OpNode> create_node(const OpCall& call) {
  const OpDef& op = call.op;
  const int num_inputs = static_cast<int>(call.inputs.size());
  auto node = std::make_shared<autograd::OpNode>(op, call.attrs, num_inputs);
  node->next_edges.resize(num_inputs);
  node->input_metas.resize(num_inputs);
  node->needs_input_grad.assign(num_inputs, false);
  int inputs_needing_grad = 0;
  for (int i = 0; i < num_inputs; ++i) {
    const Tensor& input = call.inputs[i];
    if (!input.defined()) continue;
    node->input_metas[i] = {input.sizes(), input.dtype(), input.device()};
    if (!has_bit(op.nondifferentiable_inputs, i) && input.requires_grad()) {
      node->next_edges[i] = autograd::gradient_edge(input);
      node->needs_input_grad[i] = true;
      ++inputs_needing_grad;
    }
  }
  for (int i = 0; i < num_inputs; ++i) {
    const Tensor& input = call.inputs[i];
    if (!input.defined() || !has_bit(op.save_inputs, i)) continue;
    const bool others_need_grad = inputs_needing_grad > (node->needs_input_grad[i] ? 1 : 0);
    if (has_bit(op.saved_for_other_inputs, i) && !others_need_grad) continue;
    const bool mutated = op.kind == OpKind::InPlace && has_bit(op.mutated_inputs, i);
    if (mutated) {
      NoGradGuard no_grad;
      node->save_input(i, input.clone());
    } else {
      node->save_input(i, input);
    }
  }
  return node;
}

void attach_outputs(const std::shared_ptr<autograd::OpNode>& node, const OpCall& call, TensorList& outputs) {
  node->output_metas.resize(outputs.size());
  for (int i = 0; i < outputs.size(); ++i) {
    TensorImpl& impl = *outputs[i].impl();
    node->output_metas[i] = {impl.sizes, impl.dtype, impl.device};
    if (has_bit(call.op.save_outputs, static_cast<size_t>(i))) node->save_output(i, outputs[i]);
  }
  for (int i = 0; i < outputs.size(); ++i) {
    TensorImpl& impl = *outputs[i].impl();
    if (!is_floating(impl.dtype)) continue;
    autograd::set_history(impl, node, static_cast<uint32_t>(i));  // an in-place op's output had one
  }
}

void record_autograd(const OpCall& call, TensorList& outputs) {
  attach_outputs(create_node(call), call, outputs);
}

void refuse_constant_use(const OpCall& call, const TensorList& outputs) {
  const autograd::Node* node = autograd::node_creating_graph();
  if (node == nullptr || !grad_mode_enabled() || !any_input_requires_grad(call)) return;
  bool floating_result = false;
  for (const Tensor& output : outputs) floating_result = floating_result || is_floating(output.dtype());
  if (!floating_result) return;  // comparisons, argmax: no gradient to lose
  const auto* op_node = dynamic_cast<const autograd::OpNode*>(node);
  fail("autograd: {}'s backward is not differentiable (create_graph=true): it calls {}, which has no backward rule, "
       "so a second derivative through it would be wrong; compute this gradient with create_graph=false",
       op_node != nullptr ? op_node->op().name : node->name(), call.op.name);
}

}  // namespace ember::dispatch_detail
