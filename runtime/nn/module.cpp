// nn::Module: registration, tree traversal, train/eval, to(), zero_grad and state dicts.
#include "runtime/nn/module.h"

#include <fmt/ranges.h>

#include <ostream>
#include <unordered_set>

#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/memory/overlap.h"
#include "runtime/nn/python_repr.h"
#include "runtime/tensor_alias.h"
#include "runtime/zero_grad.h"

namespace ember::nn {

namespace {

std::string join_name(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// "a\nb" -> {"a", "b"}; "" -> {} (Python's split on a non-empty string, as __repr__ uses it).
std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  if (text.empty()) return lines;
  size_t begin = 0;
  for (size_t end = text.find('\n'); end != std::string::npos; end = text.find('\n', begin)) {
    lines.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  lines.push_back(text.substr(begin));
  return lines;
}

// Whether `source` already is `target`'s data: a view of the same storage with the same offset,
// sizes, strides and dtype, as an entry of the module's own state_dict (a detached alias) is. Such
// an entry is not copied, as PyTorch's copy_ returns early for it (before refusing an expanded target).
bool holds_same_data(const Tensor& source, const Tensor& target) {
  const TensorImpl& a = *source.impl();
  const TensorImpl& b = *target.impl();
  return a.storage == b.storage && a.offset == b.offset && a.sizes == b.sizes && a.strides == b.strides &&
         a.dtype == b.dtype;
}

// What is loaded from `source` into `target`: the entry itself, or for a 0-d target its element 0
// when the entry is 1-D and not empty (PyTorch's "backward compatibility: loading 1-dim tensor from
// 0.3.*", which checkpoints of a 0-d buffer such as num_batches_tracked may still rely on).
Tensor loaded_value(const Tensor& source, const Tensor& target) {
  if (target.dim() == 0 && source.dim() == 1 && source.size(0) > 0) return source.select(0, 0);
  return source;
}

}  // namespace

// Walks `module` and its descendants (parents first), calling visit(prefix, module).
template <typename Visit>
void walk_module_tree(const Module& module, const std::string& prefix, bool recurse, Visit&& visit) {
  visit(prefix, module);
  if (!recurse) return;
  for (const auto& [name, child] : module.children_) walk_module_tree(*child, join_name(prefix, name), true, visit);
}

Tensor& Module::register_parameter(std::string name, Tensor tensor, bool requires_grad, Where where) {
  CallSiteScope site(where);
  check_new_name(name, "parameter");
  check(tensor.defined(), "{}: register_parameter('{}') got an undefined tensor", name_, name);
  check(tensor.is_leaf(), "{}: parameter '{}' must be a leaf tensor; pass tensor.detach()", name_, name);
  check(!requires_grad || tensor.is_floating_point(),
        "{}: parameter '{}' of dtype {} cannot require grad; only floating-point tensors can", name_,
        name, tensor.dtype());
  tensor.requires_grad_(requires_grad);
  return parameters_.insert(std::move(name), std::move(tensor));
}

Tensor& Module::register_buffer(std::string name, Tensor tensor, bool persistent, Where where) {
  CallSiteScope site(where);
  check_new_name(name, "buffer");
  check(tensor.defined(), "{}: register_buffer('{}') got an undefined tensor", name_, name);
  if (!persistent) non_persistent_buffers_.insert(name);
  return buffers_.insert(std::move(name), std::move(tensor));
}

void Module::add_child(std::string name, std::shared_ptr<Module> child, Where where) {
  CallSiteScope site(where);
  check_new_name(name, "submodule");
  check(child != nullptr, "{}: register_module('{}') got an empty module", name_, name);
  children_.insert(std::move(name), std::move(child));
  ++children_version_;
}

void Module::replace_module(const std::string& name, std::shared_ptr<Module> module, Where where) {
  CallSiteScope site(where);
  check(module != nullptr, "{}: replace_module('{}') got an empty module", name_, name);
  std::shared_ptr<Module>* existing = children_.find(name);
  check(existing != nullptr, "{}: replace_module: no submodule '{}' to replace", name_, name);
  *existing = std::move(module);
  ++children_version_;
}

std::shared_ptr<Module> Module::unregister_module(const std::string& name, Where where) {
  CallSiteScope site(where);
  const std::shared_ptr<Module>* existing = children_.find(name);
  check(existing != nullptr, "{}: unregister_module: no submodule '{}'", name_, name);
  std::shared_ptr<Module> removed = *existing;
  children_.erase(name);
  ++children_version_;
  return removed;
}

void Module::guard_host_state(const std::string& what, std::function<bool(const Module&)> holds) const {
  // The liveness token, not weak_from_this(): a module on the stack or inside another object has
  // no shared_ptr, and its guard must still find it, or learn that it is gone.
  notify_host_guard(
      what,
      [alive = std::weak_ptr<const bool>(liveness_), module = this, holds = std::move(holds)] {
        return !alive.expired() && holds(*module);
      },
      this);
}

void Module::guard_children() const {
  if (!dispatch_mode_active()) [[likely]] return;
  guard_host_state(fmt::format("{}'s {} modules unchanged", name_, children_.size()),
                   [version = children_version_](const Module& module) { return module.children_version_ == version; });
}

void Module::check_new_name(const std::string& name, const char* what) const {
  check(!name.empty(), "{}: a {} name must not be empty", name_, what);
  check(name.find('.') == std::string::npos, "{}: {} name '{}' must not contain '.'", name_, what, name);
  check(!parameters_.contains(name) && !buffers_.contains(name) && !children_.contains(name),
        "{}: cannot register {} '{}': the name is already taken", name_, what, name);
}

OrderedDict<Tensor> Module::named_parameters(bool recurse) const {
  OrderedDict<Tensor> result;
  std::unordered_set<const TensorImpl*> seen;
  walk_module_tree(*this, "", recurse, [&](const std::string& prefix, const Module& module) {
    for (const auto& [name, tensor] : module.parameters_)
      if (seen.insert(tensor.impl()).second) result.insert(join_name(prefix, name), tensor);
  });
  return result;
}

std::vector<Tensor> Module::parameters(bool recurse) const { return named_parameters(recurse).values(); }

OrderedDict<Tensor> Module::named_buffers(bool recurse) const {
  OrderedDict<Tensor> result;
  std::unordered_set<const TensorImpl*> seen;
  walk_module_tree(*this, "", recurse, [&](const std::string& prefix, const Module& module) {
    for (const auto& [name, tensor] : module.buffers_)
      if (seen.insert(tensor.impl()).second) result.insert(join_name(prefix, name), tensor);
  });
  return result;
}

std::vector<Tensor> Module::buffers(bool recurse) const { return named_buffers(recurse).values(); }

OrderedDict<std::shared_ptr<Module>> Module::named_children() const {
  guard_children();  // code looping over the children inside a compiled step replays only while they stay
  OrderedDict<std::shared_ptr<Module>> result;
  std::unordered_set<const Module*> seen;
  for (const auto& [name, child] : children_)
    if (seen.insert(child.get()).second) result.insert(name, child);
  return result;
}

Module& Module::apply(const std::function<void(Module&)>& fn) {
  for (const std::shared_ptr<Module>& child : children()) child->apply(fn);
  fn(*this);
  return *this;
}

OrderedDict<std::shared_ptr<Module>> Module::named_modules(bool include_self) {
  OrderedDict<std::shared_ptr<Module>> result;
  if (include_self) {
    // A module not owned by a shared_ptr (a local variable) is listed through a non-owning alias.
    std::shared_ptr<Module> self = weak_from_this().lock();
    result.insert("", self ? self : std::shared_ptr<Module>(std::shared_ptr<Module>(), this));
  }
  std::unordered_set<const Module*> seen{this};
  collect_named_modules("", seen, result);
  return result;
}

void Module::collect_named_modules(const std::string& prefix, std::unordered_set<const Module*>& seen,
                                   OrderedDict<std::shared_ptr<Module>>& out) {
  guard_children();
  for (const auto& [name, child] : children_) {
    // A module registered twice (Sequential(lin, lin)) is listed once, under its first name, and
    // its subtree is not walked again: Python PyTorch's remove_duplicate, the rule parameters follow.
    if (!seen.insert(child.get()).second) continue;
    const std::string full = join_name(prefix, name);
    out.insert(full, child);
    child->collect_named_modules(full, seen, out);
  }
}

void Module::train(bool on) {
  training_ = on;
  for (const auto& [name, child] : children_) child->train(on);
}

void Module::to(Device device, bool non_blocking, Where where) {
  CallSiteScope site(where);
  NoGradGuard no_grad;
  walk_module_tree(*this, "", true, [&](const std::string&, const Module& module) {
    for (const OrderedDict<Tensor>* tensors : {&module.parameters_, &module.buffers_}) {
      for (const auto& [name, tensor] : *tensors) {
        if (tensor.device() == device) continue;
        replace_data(*tensor.impl(), *tensor.to(device, non_blocking).impl());
        Tensor grad = tensor.grad();
        if (grad.defined()) replace_data(*grad.impl(), *grad.to(device, non_blocking).impl());
      }
    }
  });
}

void Module::to(DType dtype, Where where) {
  CallSiteScope site(where);
  check(is_floating(dtype), "{}: to(dtype) converts floating-point tensors; got target dtype {}", name_, dtype);
  NoGradGuard no_grad;
  walk_module_tree(*this, "", true, [&](const std::string&, const Module& module) {
    for (const OrderedDict<Tensor>* tensors : {&module.parameters_, &module.buffers_}) {
      for (const auto& [name, tensor] : *tensors) {
        if (!tensor.is_floating_point() || tensor.dtype() == dtype) continue;
        replace_data(*tensor.impl(), *tensor.to(dtype).impl());
        Tensor grad = tensor.grad();
        if (grad.defined()) replace_data(*grad.impl(), *grad.to(dtype).impl());
      }
    }
  });
}

void Module::zero_grad(bool set_to_none) {
  zero_grads(parameters(), set_to_none);
}

StateDict Module::state_dict() const {
  StateDict result;
  collect_state("", result);
  return result;
}

// Detached aliases, as PyTorch's state_dict (keep_vars=False): an entry shares its tensor's memory
// but does not require grad, so it can be written in place (and nothing done with it is recorded).
void Module::collect_state(const std::string& prefix, StateDict& out) const {
  for (const auto& [name, tensor] : parameters_) out.insert(join_name(prefix, name), tensor.detach());
  for (const auto& [name, tensor] : buffers_)
    if (!non_persistent_buffers_.contains(name)) out.insert(join_name(prefix, name), tensor.detach());
  for (const auto& [name, child] : children_) child->collect_state(join_name(prefix, name), out);
}

IncompatibleKeys Module::load_state_dict(const StateDict& state, bool strict, Where where) {
  CallSiteScope site(where);
  const StateDict own = state_dict();
  // PyTorch's RuntimeError: the missing and the unexpected keys (only when strict), then every size
  // mismatch, one line each. Unlike PyTorch's, which may have copied entries by then, nothing is copied.
  std::vector<std::string> problems;
  IncompatibleKeys keys;
  for (const auto& [key, tensor] : own)
    if (!state.contains(key)) keys.missing_keys.push_back(key);
  for (const auto& [key, tensor] : state)
    if (!own.contains(key)) keys.unexpected_keys.push_back(key);
  const auto quoted = [](const std::vector<std::string>& names) {
    std::string text;
    for (const std::string& name : names) text += fmt::format("{}\"{}\"", text.empty() ? "" : ", ", name);
    return text;
  };
  if (strict && !keys.missing_keys.empty())
    problems.push_back(fmt::format("Missing key(s) in state_dict: {}. ", quoted(keys.missing_keys)));
  if (strict && !keys.unexpected_keys.empty())
    problems.push_back(fmt::format("Unexpected key(s) in state_dict: {}. ", quoted(keys.unexpected_keys)));
  std::vector<Tensor> sources;  // what each of own's entries loads (undefined: none)
  for (const auto& [key, target] : own) {
    const Tensor* entry = state.find(key);
    sources.push_back(entry != nullptr && entry->defined() ? loaded_value(*entry, target) : Tensor{});
    const Tensor* source = &sources.back();
    if (!source->defined() || source->sizes() == target.sizes()) continue;
    problems.push_back(fmt::format("size mismatch for {}: copying a param with shape {} from checkpoint, the shape in "
                                   "current model is {}.", key, source->sizes(), target.sizes()));
  }
  check(problems.empty(), "Error(s) in loading state_dict for {}:\n\t{}", name_, fmt::join(problems, "\n\t"));
  for (size_t i = 0; i < own.size(); ++i) {
    const auto& [key, target] = own.items()[i];
    const Tensor* entry = state.find(key);
    if (entry == nullptr) continue;
    check(entry->defined(), "{}: load_state_dict: entry '{}' is an undefined tensor", name_, key);
    const Tensor* source = &sources[i];
    if (holds_same_data(*source, target)) continue;  // not copied
    // What copy_ refuses, checked here so that nothing is copied before it would refuse. A source
    // on another device arrives as a fresh copy, which shares nothing.
    check(!has_internal_overlap(target),
          "{}: load_state_dict: the module's '{}' (shape {}, strides {}) is expanded: several of its elements "
          "share one address, so it cannot be written", name_, key, target.sizes(), target.strides());
    check(source->device() != target.device() || memory_overlap(target, *source) != MemoryOverlap::Partial,
          "{}: load_state_dict: entry '{}' (shape {}, strides {}) partly overlaps the module's tensor (strides {}); "
          "clone() it first", name_, key, source->sizes(), source->strides(), target.strides());
  }
  NoGradGuard no_grad;
  for (size_t i = 0; i < own.size(); ++i) {
    Tensor target = own.items()[i].second;
    const Tensor& source = sources[i];
    if (source.defined() && !holds_same_data(source, target)) target.copy_(source.to(target.device()));
  }
  return keys;
}

std::string Module::str() const {
  // torch.nn.Module.__repr__: the lines of extra_repr, then "(name): " and each child's text, every
  // line indented under the parent; a single extra_repr line without children stays inline.
  std::vector<std::string> lines = split_lines(extra_repr());
  if (lines.size() == 1 && children_.empty()) return name_ + "(" + lines[0] + ")";
  for (const auto& [name, child] : children_) lines.push_back("(" + name + "): " + indent_later_lines(child->str()));
  std::string out = name_ + "(";
  for (const std::string& line : lines) out += "\n  " + line;
  return out + (lines.empty() ? ")" : "\n)");
}

std::ostream& operator<<(std::ostream& out, const Module& module) { return out << module.str(); }

}  // namespace ember::nn
