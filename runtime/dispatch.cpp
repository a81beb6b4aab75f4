// The dispatcher's mode stack and eager path (in-place ops: dispatch_inplace.cpp; autograd
// recording: dispatch_autograd.cpp).
#include "runtime/dispatch.h"

#include <algorithm>
#include <utility>

#include "runtime/autocast.h"
#include "runtime/autograd/node.h"
#include "runtime/autograd/view_history.h"
#include "runtime/dispatch_internal.h"
#include "runtime/output_poison.h"
#include "runtime/profiler/nvtx.h"

namespace ember {

using dispatch_detail::any_input_requires_grad;
using dispatch_detail::record_autograd;
using dispatch_detail::refuse_constant_use;
using dispatch_detail::run_inplace;

namespace {

thread_local std::vector<DispatchMode*> mode_stack;
thread_local bool grad_enabled = true;
thread_local AttrRefresh pending_attr_refresh;
thread_local int host_effect_depth = 0;  // open HostEffectScopes
thread_local int kernel_deferrals = 0;    // open KernelDeferrals: kernels are left to their owner

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
    impl->view_origin = std::make_shared<const ViewOrigin>(base.impl_ptr(), &call.op, call.attrs);
    impl->view_version = base.version();
  }
  TensorList outputs{Tensor(std::move(impl))};
  if (call.op.backward && grad_mode && any_input_requires_grad(call)) record_autograd(call, outputs);
  return outputs;
}

}  // namespace

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
  if (!op.backward && autograd::node_creating_graph() != nullptr) [[unlikely]] refuse_constant_use(call, outputs);
  if (kernel_deferrals == 0) [[likely]] kernel(call, outputs);
  if (op.backward && grad_mode_enabled() && any_input_requires_grad(call)) record_autograd(call, outputs);
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

void notify_host_guard(const std::string& what, const std::function<bool()>& holds, const void* owner) {
  if (mode_stack.empty()) [[likely]] return;
  for (DispatchMode* mode : mode_stack) mode->on_host_guard(what, holds, owner);
}

void notify_grad_set(const Tensor& leaf) {
  if (mode_stack.empty()) [[likely]] return;
  for (DispatchMode* mode : mode_stack) mode->on_grad_set(leaf);
}

void notify_grad_absent(const Tensor& leaf) {
  if (mode_stack.empty()) [[likely]] return;
  for (DispatchMode* mode : mode_stack) mode->on_grad_absent(leaf);
}

void notify_host_state_change(const std::string& what) {
  if (mode_stack.empty() || host_effect_depth > 0) [[likely]] return;
  for (DispatchMode* mode : mode_stack) mode->on_host_state_change(what);
}

void notify_host_effect(const std::string& what, const std::function<void()>& replay) {
  if (mode_stack.empty() || host_effect_depth > 0) [[likely]] return;
  for (DispatchMode* mode : mode_stack) mode->on_host_effect(what, replay);
}

bool dispatch_detail::kernels_deferred() { return kernel_deferrals > 0; }

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
