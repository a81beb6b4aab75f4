// The dispatcher's eager path and mode stack.
#include "runtime/dispatch.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "runtime/autocast.h"
#include "runtime/autograd/copy_slices.h"
#include "runtime/autograd/node.h"
#include "runtime/autograd/view_history.h"
#include "runtime/memory/overlap.h"
#include "runtime/profiler/nvtx.h"

namespace ember {

namespace {

thread_local std::vector<DispatchMode*> mode_stack;
thread_local bool grad_enabled = true;
thread_local AttrRefresh pending_attr_refresh;
thread_local int host_effect_depth = 0;  // open HostEffectScopes
thread_local int kernel_deferrals = 0;    // open KernelDeferrals: kernels are left to their owner

// EMBER_POISON_OUTPUTS=1 fills every freshly allocated output with NaN (floats) or 0xA5 bytes
// before its kernel runs, so tests catch kernels that leave elements unwritten.
bool poison_outputs() {
  static const bool enabled = [] {
    const char* value = std::getenv("EMBER_POISON_OUTPUTS");
    return value != nullptr && std::strcmp(value, "0") != 0;
  }();
  return enabled;
}

// Other devices are filled by their fill_ kernel: NaN for floating dtypes, 0xA5A5A5A5 for integers.
void poison_on_device(const Tensor& tensor) {
  static const OpDef& fill = registry().get("fill_");
  const Kernel kernel = fill.kernel_for(tensor.device());
  if (kernel == nullptr || tensor.dtype() == kBool) return;
  const double value = is_floating(tensor.dtype()) ? std::nan("") : -1515870811.0;
  const Attrs attrs{{"value", value}};
  const Tensor inputs[] = {tensor};
  TensorList outputs{tensor};
  kernel(OpCall{fill, inputs, attrs}, outputs);
}

void poison(const Tensor& tensor) {
  if (tensor.numel() == 0) return;
  if (!tensor.device().is_cpu()) return poison_on_device(tensor);
  if (tensor.dtype() == kFloat32) {
    float* data = tensor.data_ptr<float>();
    for (int64_t i = 0; i < tensor.numel(); ++i) data[i] = std::nanf("");
  } else if (tensor.dtype() == kFloat64) {
    double* data = tensor.data_ptr<double>();
    for (int64_t i = 0; i < tensor.numel(); ++i) data[i] = std::nan("");
  } else if (tensor.dtype() != kBool) {
    std::memset(tensor.raw_data_ptr(), 0xA5, tensor.nbytes());
  }
}

// Bit i of an OpDef mask. Inputs past bit 31 (cat of many tensors) have no bit: shifting by 32 or
// more would be undefined behaviour.
bool has_bit(uint32_t mask, size_t i) { return i < 32 && ((mask >> i) & 1u) != 0; }

Device common_device(const OpCall& call) {
  const Tensor* first = nullptr;
  for (const Tensor& input : call.inputs) {
    if (!input.defined()) continue;
    if (first == nullptr) {
      first = &input;
    } else if (input.device() != first->device()) {
      fail("{}: expected all tensors on one device, got {} and {}", call.op.name, first->device(),
           input.device());
    }
  }
  return first ? first->device() : kCPU;
}

bool any_input_requires_grad(const OpCall& call) {
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    const Tensor& input = call.inputs[i];
    if (input.defined() && !has_bit(call.op.nondifferentiable_inputs, i) && input.requires_grad())
      return true;
  }
  return false;
}

// The autograd node of a call whose inputs require grad, with what its backward rule needs.
// In-place ops build it before their kernel runs; a mutated input they save is cloned first, so
// backward sees the value the op read.
std::shared_ptr<autograd::OpNode> create_node(const OpCall& call) {
  const OpDef& op = call.op;
  const int num_inputs = static_cast<int>(call.inputs.size());
  auto node = std::make_shared<autograd::OpNode>(op, call.attrs, num_inputs);
  node->next_edges.resize(num_inputs);
  node->input_metas.resize(num_inputs);
  node->needs_input_grad.assign(num_inputs, false);
  for (int i = 0; i < num_inputs; ++i) {
    const Tensor& input = call.inputs[i];
    if (!input.defined()) continue;
    node->input_metas[i] = {input.sizes(), input.dtype(), input.device()};
    if (!has_bit(op.nondifferentiable_inputs, i) && input.requires_grad()) {
      node->next_edges[i] = autograd::gradient_edge(input);
      node->needs_input_grad[i] = true;
    }
    if (!has_bit(op.save_inputs, i)) continue;
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

// Makes `node` the grad_fn of the call's floating outputs (integer outputs carry no gradient).
void attach_outputs(const std::shared_ptr<autograd::OpNode>& node, const OpCall& call,
                    TensorList& outputs) {
  node->output_metas.resize(outputs.size());
  for (int i = 0; i < outputs.size(); ++i) {
    TensorImpl& impl = *outputs[i].impl();
    node->output_metas[i] = {impl.sizes, impl.dtype, impl.device};
    if (has_bit(call.op.save_outputs, static_cast<size_t>(i))) node->save_output(i, outputs[i]);
  }
  for (int i = 0; i < outputs.size(); ++i) {
    TensorImpl& impl = *outputs[i].impl();
    if (!is_floating(impl.dtype)) continue;
    impl.grad_fn = node;
    impl.output_nr = static_cast<uint32_t>(i);
  }
}

void record_autograd(const OpCall& call, TensorList& outputs) {
  attach_outputs(create_node(call), call, outputs);
}

void check_inplace_allowed(const OpCall& call, bool recording) {
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    if (!has_bit(call.op.mutated_inputs, i)) continue;
    const Tensor& target = call.inputs[i];
    check_no_overlap(call, i);
    if (!recording || !target.defined()) continue;
    check(!(target.is_leaf() && target.requires_grad()),
          "{}: a leaf tensor that requires grad (shape {}) is used in an in-place operation; "
          "wrap the update in NoGradGuard",
          call.op.name, target.sizes());
  }
}

// The input an in-place op writes, when it is a view and the op writes nothing else: autograd
// then carries the update to the view's base (autograd/copy_slices.h). -1 when no input is a view.
int updated_view(const OpCall& call) {
  int found = -1;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    if (!has_bit(call.op.mutated_inputs, i) || !call.inputs[i].defined() || !call.inputs[i].impl()->is_view)
      continue;
    check(std::popcount(call.op.mutated_inputs) == 1,
          "{}: in-place update of a view (shape {}) by an op that writes several inputs is not supported "
          "while recording gradients", call.op.name, call.inputs[i].sizes());
    found = static_cast<int>(i);
  }
  return found;
}

// The history an in-place update of view `call.inputs[mutated]` gives its root base: a CopySlices
// node over `node`, the op's own node over the view. Built before the kernel runs (it needs the
// base's history from before the update), installed after it succeeded.
std::shared_ptr<autograd::CopySlices> through_view(const std::shared_ptr<autograd::OpNode>& node,
                                                  const OpCall& call, int mutated, Tensor& root_out) {
  const Tensor& view = call.inputs[static_cast<size_t>(mutated)];
  autograd::ViewPath path = autograd::view_path(view);
  check(path.why_not.empty(), "{}: in-place update of a view (shape {}) while recording gradients: {}; use "
        "clone() first", call.op.name, view.sizes(), path.why_not);
  node->output_metas = {{view.sizes(), view.dtype(), view.device()}};
  root_out = path.root;
  const TensorImpl& root = *path.root.impl();
  return std::make_shared<autograd::CopySlices>(TensorMeta{root.sizes, root.dtype, root.device},
                                                std::move(path.steps), node, mutated,
                                                autograd::gradient_edge(path.root));
}

TensorList run_inplace(const OpCall& call, Kernel kernel) {
  const bool recording = grad_mode_enabled() && call.op.backward && any_input_requires_grad(call);
  check_inplace_allowed(call, recording);
  std::shared_ptr<autograd::OpNode> node = recording ? create_node(call) : nullptr;
  const int view = node ? updated_view(call) : -1;
  Tensor root;
  std::shared_ptr<autograd::CopySlices> slices = view >= 0 ? through_view(node, call, view, root) : nullptr;
  TensorList outputs;
  for (size_t i = 0; i < call.inputs.size(); ++i)
    if (has_bit(call.op.mutated_inputs, i)) outputs.push_back(call.inputs[i]);
  if (kernel_deferrals == 0) kernel(call, outputs);
  // An optional mutated input (an optimizer's absent state buffer) may be undefined.
  for (Tensor& output : outputs)
    if (output.defined()) output.impl()->storage->bump_version();
  // The written tensor now holds the op's result: its history continues through the new node.
  // Through a view, the base's does; the version bump above makes every view of the base, the
  // updated one included, remake its history from there when next read.
  if (slices) {
    for (int i = 0; i < outputs.size(); ++i)
      if (has_bit(call.op.save_outputs, static_cast<size_t>(i))) node->save_output(i, outputs[i]);
    root.impl()->grad_fn = std::move(slices);
    root.impl()->output_nr = 0;
  } else if (node) {
    attach_outputs(node, call, outputs);
  }
  return outputs;
}

TensorList run_view(const OpCall& call) {
  const Tensor& base = call.inputs[0];
  ViewGeometry geometry = call.op.view(call);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.impl()->storage;
  impl->sizes = geometry.sizes;
  impl->strides = geometry.strides;
  impl->offset = geometry.offset;
  impl->dtype = base.dtype();
  impl->device = base.device();
  impl->is_view = true;
  const bool grad_mode = grad_mode_enabled();
  if (grad_mode) {
    impl->view_origin = std::make_shared<const ViewOrigin>(ViewOrigin{base.impl_ptr(), &call.op, call.attrs});
    impl->view_version = base.version();
  }
  TensorList outputs{Tensor(std::move(impl))};
  if (call.op.backward && grad_mode && any_input_requires_grad(call)) record_autograd(call, outputs);
  return outputs;
}

}  // namespace

// The tensor an in-place op writes (input `written`) must hold each element once, and no other
// input may share part of its memory (the same tensor is fine): otherwise the result depends on
// the order the kernel visits elements, which on a GPU is none (runtime/memory/overlap.h).
void check_no_overlap(const OpCall& call, size_t written) {
  const Tensor& target = call.inputs[written];
  if (!target.defined()) return;  // an optional state buffer that is absent
  check(!has_internal_overlap(target),
        "{}: input {} (shape {}, strides {}) is written in place but several of its elements share one "
        "address (an expanded tensor); clone() it first",
        call.op.name, written, target.sizes(), target.strides());
  for (size_t j = 0; j < call.inputs.size(); ++j) {
    if (j == written || !call.inputs[j].defined()) continue;
    check(memory_overlap(target, call.inputs[j]) != MemoryOverlap::Partial,
          "{}: input {} (shape {}, strides {}) partly overlaps input {} (shape {}, strides {}), which is written "
          "in place; clone() it first",
          call.op.name, j, call.inputs[j].sizes(), call.inputs[j].strides(), written, target.sizes(),
          target.strides());
  }
}


TensorList dispatch_eager(const OpCall& call) {
  const OpDef& op = call.op;
  const profiler::NvtxRange range(op.name.c_str());  // EMBER_NVTX=1: the op's name in Nsight
  if (op.kind == OpKind::View) return run_view(call);
  // Factories have no inputs: their device attribute picks the kernel.
  const Device device =
      op.kind == OpKind::Factory ? call.attrs.get<Device>("device") : common_device(call);
  Kernel kernel = op.kernel_for(device);
  check(kernel != nullptr, "{}: no kernel for device {}", op.name, device);
  if (op.kind == OpKind::InPlace) return run_inplace(call, kernel);

  OutputMetas metas;
  for (int i = 0; i < op.num_outputs; ++i) metas[i].device = device;
  op.infer(call, metas);
  TensorList outputs;
  for (int i = 0; i < op.num_outputs; ++i) {
    outputs.push_back(make_tensor(metas[i].sizes, metas[i].dtype, metas[i].device));
    if (poison_outputs()) poison(outputs[i]);
  }
  if (kernel_deferrals == 0) [[likely]] kernel(call, outputs);
  if (op.backward && grad_mode_enabled() && any_input_requires_grad(call))
    record_autograd(call, outputs);
  return outputs;
}

TensorList DispatchNext::run(const OpCall& call) const {
  if (level_ < 0) return dispatch_eager(call);
  return mode_stack[level_]->handle(call, DispatchNext(level_ - 1));
}

TensorList dispatch(const OpCall& call) {
  if (mode_stack.empty() && !detail::autocast_state.enabled) [[likely]] return dispatch_eager(call);
  // Autocast comes before every mode, so that a capture records the casts as to_dtype nodes and
  // then the op on the cast inputs, whichever of the two was installed first. The call on the
  // cast inputs comes back here and needs no further cast.
  if (detail::autocast_state.enabled && call.op.autocast != AutocastPolicy::None) {
    std::vector<Tensor> cast;
    if (detail::autocast_inputs(call, cast)) return dispatch(OpCall{call.op, cast, call.attrs});
  }
  if (mode_stack.empty()) return dispatch_eager(call);
  const int top = static_cast<int>(mode_stack.size()) - 1;
  return mode_stack[top]->handle(call, DispatchNext(top - 1));
}

Tensor dispatch_one(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs) {
  TensorList outputs = dispatch(OpCall{op, inputs, attrs});
  return std::move(outputs[0]);
}

DispatchModeGuard::DispatchModeGuard(DispatchMode& mode) { mode_stack.push_back(&mode); }
DispatchModeGuard::~DispatchModeGuard() { mode_stack.pop_back(); }

DispatchModesHidden::DispatchModesHidden() { hidden_.swap(mode_stack); }
DispatchModesHidden::~DispatchModesHidden() { hidden_.swap(mode_stack); }

Tensor host_values(const char* what, const Tensor& tensor, bool dense) {
  notify_host_read(what, tensor);
  DispatchModesHidden run_now;
  const Tensor host = tensor.device().is_cpu() ? tensor : tensor.to(kCPU);
  return dense ? host.contiguous() : host;
}

void notify_host_read(const char* what, const Tensor& tensor) {
  if (mode_stack.empty()) [[likely]] return;
  for (DispatchMode* mode : mode_stack) mode->on_host_read(what, tensor);
}

void notify_alias(const Tensor& source, const Tensor& alias) {
  if (mode_stack.empty()) [[likely]] return;
  for (DispatchMode* mode : mode_stack) mode->on_alias(source, alias);
}

void notify_host_guard(const std::string& what, const std::function<bool()>& holds) {
  if (mode_stack.empty()) [[likely]] return;
  for (DispatchMode* mode : mode_stack) mode->on_host_guard(what, holds);
}

void notify_grad_set(const Tensor& leaf) {
  if (mode_stack.empty()) [[likely]] return;
  for (DispatchMode* mode : mode_stack) mode->on_grad_set(leaf);
}

void notify_host_state_change(const std::string& what) {
  if (mode_stack.empty() || host_effect_depth > 0) [[likely]] return;
  for (DispatchMode* mode : mode_stack) mode->on_host_state_change(what);
}

void notify_host_effect(const std::string& what, const std::function<void()>& replay) {
  if (mode_stack.empty() || host_effect_depth > 0) [[likely]] return;
  for (DispatchMode* mode : mode_stack) mode->on_host_effect(what, replay);
}

KernelDeferral::KernelDeferral() { ++kernel_deferrals; }
KernelDeferral::~KernelDeferral() { --kernel_deferrals; }

HostEffectScope::HostEffectScope() { ++host_effect_depth; }
HostEffectScope::~HostEffectScope() { --host_effect_depth; }
bool HostEffectScope::active() { return host_effect_depth > 0; }

bool dispatch_mode_active() {
  if (mode_stack.empty()) [[likely]] return false;
  return std::ranges::any_of(mode_stack, [](const DispatchMode* mode) { return mode->records(); });
}
void set_next_attr_refresh(AttrRefresh refresh) { pending_attr_refresh = std::move(refresh); }
AttrRefresh take_attr_refresh() { return std::exchange(pending_attr_refresh, AttrRefresh()); }

bool grad_mode_enabled() { return grad_enabled; }
void set_grad_mode(bool enabled) { grad_enabled = enabled; }

}  // namespace ember
