// The op registry's storage and lookups.
#include "runtime/ops/registry.h"

#include <algorithm>

namespace ember {

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
  internal_assert(found != ops_.end(), "set_kernel on an unregistered op");
  found->second->kernels[static_cast<int>(device)] = kernel;
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
