// The multi-tensor optimizer steps _multi_sgd_step_ and _multi_adam_step_ (see
// runtime/optim/multi_tensor_steps.h): OpDefs, checks shared with the CUDA kernels, and the CPU
// kernels, which run the per-parameter kernels of sgd_step_ / adam_step_ on each parameter in
// turn, so a multi-tensor step is bit-identical to the per-parameter one.
//
// Why these are not OpKind::InPlace ops: an in-place op returns its mutated inputs as outputs
// (at most TensorList::kCapacity) and names them in a 32-bit mask, while a multi-tensor step
// writes hundreds of tensors. They are OpKind::Other ops with no outputs that bump the versions
// of what they wrote themselves, and optimizers keep them out of compile's capture.
#include "runtime/ops/multi_tensor_steps_checks.h"

#include "kernels/cpu/optim_kernels.h"
#include "runtime/dispatch.h"
#include "runtime/ops/optim_step_checks.h"
#include "runtime/optim/multi_tensor_steps.h"

namespace ember {

namespace {

// The flat input list's width per parameter (the op is one of the two registered here).
int width_of(const OpCall& call) {
  static const OpDef& sgd = lookup_op("_multi_sgd_step_");
  return &call.op == &sgd ? optim::kSgdStepWidth : optim::kAdamStepWidth;
}

}  // namespace

const OpDef& single_step_op(const OpCall& call) {
  static const OpDef& sgd = lookup_op("sgd_step_");
  static const OpDef& adam = lookup_op("adam_step_");
  return width_of(call) == optim::kSgdStepWidth ? sgd : adam;
}

int multi_step_count(const OpCall& call) { return static_cast<int>(call.inputs.size()) / width_of(call); }

OpCall multi_step_slice(const OpCall& call, int index) {
  const int width = width_of(call);
  return OpCall{single_step_op(call), call.inputs.subspan(static_cast<size_t>(index * width), width), call.attrs};
}

void check_multi_step(const OpCall& call) {
  const char* op = call.op.name.c_str();
  const int width = width_of(call);
  check(call.inputs.size() % static_cast<size_t>(width) == 0,
        "{}: expected {} tensors per parameter, got {} tensors in all", op, width, call.inputs.size());
  const int count = multi_step_count(call);
  for (int i = 0; i < count; ++i) {
    const OpCall slice = multi_step_slice(call, i);
    const Tensor& param = slice.input(0);
    if (width == optim::kSgdStepWidth) check_sgd_step(slice);
    else check_adam_step(slice);
    const Tensor& first = call.input(0);
    check(param.device() == first.device() && param.dtype() == first.dtype(),
          "{}: every parameter must share one device and dtype; parameter {} is {} on {}, parameter 0 is {} on {}",
          op, i, param.dtype(), param.device(), first.dtype(), first.device());
    for (const Tensor& tensor : slice.inputs)
      if (tensor.defined())  // check() evaluates its arguments: an undefined tensor has no device
        check(tensor.device() == param.device(), "{}: parameter {} is on {} but one of its tensors is on {}", op, i,
              param.device(), tensor.device());
    // The in-place rules of the dispatcher (run_inplace), which an OpKind::Other op does not get:
    // an expanded parameter or state would have several elements updated through one address.
    for (size_t k = 0; k < slice.inputs.size(); ++k)
      if (((slice.op.mutated_inputs >> k) & 1u) != 0) check_no_overlap(slice, k);
    check(!(grad_mode_enabled() && param.requires_grad()),
          "{}: parameter {} (shape {}) requires grad and is updated in place; wrap the step in NoGradGuard", op, i,
          param.sizes());
  }
}

void bump_multi_step_versions(const OpCall& call) {
  const uint32_t mutated = single_step_op(call).mutated_inputs;
  const int count = multi_step_count(call);
  for (int i = 0; i < count; ++i) {
    const OpCall slice = multi_step_slice(call, i);
    for (size_t k = 0; k < slice.inputs.size(); ++k)
      if (((mutated >> k) & 1u) != 0 && slice.inputs[k].defined()) slice.inputs[k].impl()->storage->bump_version();
  }
}

namespace {

// Every slice is checked before the first update, so a bad call changes nothing.
void multi_step_cpu(const OpCall& call, TensorList&) {
  check_multi_step(call);
  const bool sgd = width_of(call) == optim::kSgdStepWidth;
  for (int i = 0; i < multi_step_count(call); ++i) {
    const OpCall slice = multi_step_slice(call, i);
    TensorList written;
    if (sgd) cpu::sgd_step_kernel(slice, written);
    else cpu::adam_step_kernel(slice, written);
  }
  bump_multi_step_versions(call);
}

void no_outputs(const OpCall&, OutputMetas&) {}

OpDef multi_step_op(const char* name, const char* schema) {
  OpDef def = make_op(name, schema, OpKind::Other, no_outputs, multi_step_cpu);
  def.num_outputs = 0;
  def.mutated_inputs = 0;
  return def;
}

void register_multi_tensor_optim_ops(OpRegistry& registry) {
  registry.add(multi_step_op("_multi_sgd_step_",
                             "_multi_sgd_step_(Tensor[](a!) param_grad_buffer_triples, float lr, float momentum, "
                             "float dampening, float weight_decay, bool nesterov, bool first_step, "
                             "bool maximize) -> ()"));
  registry.add(multi_step_op("_multi_adam_step_",
                             "_multi_adam_step_(Tensor[](a!) param_grad_exp_avg_exp_avg_sq_max_quintuples, float lr, "
                             "float beta1, float beta2, float eps, float weight_decay, int step, bool amsgrad, "
                             "bool decoupled, bool maximize) -> ()"));
}

const OpRegistration registration(register_multi_tensor_optim_ops);

// The flat list: (params[i], grads[i], state...[i]) per parameter; a missing state list (empty
// span) contributes undefined tensors.
std::vector<Tensor> interleave(std::initializer_list<std::span<const Tensor>> lists, const char* op) {
  const size_t count = lists.begin()->size();
  for (std::span<const Tensor> list : lists)
    check(list.empty() || list.size() == count, "{}: {} parameters but a list of {} tensors", op, count, list.size());
  std::vector<Tensor> flat;
  flat.reserve(count * lists.size());
  for (size_t i = 0; i < count; ++i)
    for (std::span<const Tensor> list : lists) flat.push_back(list.empty() ? Tensor() : list[i]);
  return flat;
}

// A mode (compile's capture) records in-place ops through their returned outputs; these ops
// return none, so a capture would miss what they write. Fail clearly rather than record wrong.
void check_no_mode(const char* op, const char* single) {
  check(!dispatch_mode_active(),
        "{}: cannot run under a dispatch mode (compile's capture records in-place updates through the op's "
        "outputs, and this op has none); call {} per parameter instead, as the optimizers do under capture",
        op, single);
}

}  // namespace

namespace optim {

void multi_sgd_step_(std::span<const Tensor> params, std::span<const Tensor> grads,
                     std::span<const Tensor> momentum_buffers, const SgdStepArgs& args, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("_multi_sgd_step_");
  check_no_mode("_multi_sgd_step_", "sgd_step_");
  check(grads.size() == params.size(), "_multi_sgd_step_: {} parameters but {} gradients", params.size(), grads.size());
  const Attrs attrs = sgd_step_attrs(args);
  const std::vector<Tensor> inputs = interleave({params, grads, momentum_buffers}, "_multi_sgd_step_");
  if (!inputs.empty()) dispatch(OpCall{op, inputs, attrs});
}

void multi_adam_step_(std::span<const Tensor> params, std::span<const Tensor> grads, std::span<const Tensor> exp_avgs,
                      std::span<const Tensor> exp_avg_sqs, std::span<const Tensor> max_exp_avg_sqs,
                      const AdamStepArgs& args, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("_multi_adam_step_");
  check_no_mode("_multi_adam_step_", "adam_step_");
  for (size_t size : {grads.size(), exp_avgs.size(), exp_avg_sqs.size()})
    check(size == params.size(), "_multi_adam_step_: {} parameters but a state or gradient list of {} tensors",
          params.size(), size);
  const Attrs attrs = adam_step_attrs(args);
  const std::vector<Tensor> inputs =
      interleave({params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs}, "_multi_adam_step_");
  if (!inputs.empty()) dispatch(OpCall{op, inputs, attrs});
}

}  // namespace optim
}  // namespace ember
