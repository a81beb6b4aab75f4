// The op registry's storage and lookups.
#include "runtime/ops/registry.h"

#include <algorithm>

namespace ember {

OpDef make_op(const char* name, const char* schema, OpKind kind, ShapeRule infer, Kernel cpu_kernel,
              BackwardRule backward) {
  OpDef def;
  def.name = name;
  def.schema = schema;
  def.kind = kind;
  def.infer = infer;
  def.kernels[static_cast<int>(DeviceType::CPU)] = cpu_kernel;
  def.backward = backward;
  return def;
}

OpRegistry& registry() {
  static OpRegistry* instance = new OpRegistry;  // never destroyed: ops outlive static tensors
  return *instance;
}

const OpDef& OpRegistry::add(OpDef def) {
  internal_assert(!def.name.empty(), "op without a name");
  internal_assert(ops_.find(def.name) == ops_.end(), "op registered twice");
  if (def.kind == OpKind::View) {
    internal_assert(def.view != nullptr, "view op without a view rule");
  } else if (def.kind != OpKind::InPlace) {  // in-place ops write their inputs: no shape rule
    internal_assert(def.infer != nullptr, "op without a shape rule");
  }
  auto owned = std::make_unique<OpDef>(std::move(def));
  // Kernels a backend set before this op's file registered it (static init order across files
  // is unspecified) are attached now.
  if (auto pending = pending_kernels_.find(owned->name); pending != pending_kernels_.end()) {
    for (const auto& [device, kernel] : pending->second) owned->kernels[static_cast<int>(device)] = kernel;
    pending_kernels_.erase(pending);
  }
  if (auto pending = pending_autocast_.find(owned->name); pending != pending_autocast_.end()) {
    owned->autocast = pending->second;
    pending_autocast_.erase(pending);
  }
  const OpDef& ref = *owned;
  ops_.emplace(ref.name, std::move(owned));
  return ref;
}

const OpDef* OpRegistry::find(const std::string& name) const {
  auto found = ops_.find(name);
  return found == ops_.end() ? nullptr : found->second.get();
}

const OpDef& OpRegistry::get(const std::string& name) const {
  const OpDef* op = find(name);
  check(op != nullptr, "op registry: no op named '{}'", name);
  return *op;
}

std::vector<const OpDef*> OpRegistry::all() const {
  std::vector<const OpDef*> result;
  for (const auto& [name, op] : ops_) result.push_back(op.get());
  std::sort(result.begin(), result.end(),
            [](const OpDef* a, const OpDef* b) { return a->name < b->name; });
  return result;
}

void OpRegistry::set_kernel(const std::string& name, DeviceType device, Kernel kernel) {
  auto found = ops_.find(name);
  if (found == ops_.end()) {
    pending_kernels_[name].emplace_back(device, kernel);
    return;
  }
  found->second->kernels[static_cast<int>(device)] = kernel;
}

std::vector<std::string> OpRegistry::pending_kernel_ops() const {
  std::vector<std::string> names;
  for (const auto& [name, kernels] : pending_kernels_) names.push_back(name);
  return names;
}

void OpRegistry::set_autocast(const std::string& name, AutocastPolicy policy) {
  auto found = ops_.find(name);
  if (found == ops_.end()) {
    pending_autocast_[name] = policy;
    return;
  }
  found->second->autocast = policy;
}

std::vector<std::string> OpRegistry::pending_autocast_ops() const {
  std::vector<std::string> names;
  for (const auto& [name, policy] : pending_autocast_) names.push_back(name);
  return names;
}

const Tensor& BackwardContext::input(int i) const {
  internal_assert(saved_inputs[i].defined(), "backward rule reads an input its op did not save");
  return saved_inputs[i];
}

const Tensor& BackwardContext::output(int i) const {
  internal_assert(saved_outputs[i].defined(), "backward rule reads an output its op did not save");
  return saved_outputs[i];
}

}  // namespace ember
