// nn::Module: the base of every layer. Owns named parameters, buffers and child modules, and does
// what applies to a whole tree at once: train/eval, to(device), zero_grad, state dicts.
//
// Names follow PyTorch: a child's entries are prefixed with its name ("0.weight", "encoder.bias"),
// and state_dict() lists each module's parameters, then its buffers, then its children's entries.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "runtime/nn/ordered_dict.h"
#include "runtime/tensor.h"

namespace ember::nn {

// A module's named tensors, as state_dict() returns them and load_state_dict() takes them.
using StateDict = OrderedDict<Tensor>;

// What load_state_dict(strict = false) left unloaded, as PyTorch's _IncompatibleKeys: the module's
// keys `state` did not hold, and `state`'s keys the module does not have, each in its own order.
struct IncompatibleKeys {
  std::vector<std::string> missing_keys;
  std::vector<std::string> unexpected_keys;
};

template <typename Impl>
class ModuleHolder;

class Module : public std::enable_shared_from_this<Module> {
 public:
  // `name` is the type's name ("Linear"), used when printing and in error messages.
  explicit Module(std::string name = "Module") : name_(std::move(name)) {}
  virtual ~Module() = default;
  // Modules live behind shared_ptr (see ModuleHolder); a copy would silently share parameters.
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& name() const { return name_; }

  // ---- the tree ----
  // Parameters of this module and (recurse) its descendants; a tensor registered under two names
  // (tied weights) is listed once, under its first name.
  std::vector<Tensor> parameters(bool recurse = true) const;
  OrderedDict<Tensor> named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  OrderedDict<Tensor> named_buffers(bool recurse = true) const;
  // The direct children in registration order. A module registered under two names here is
  // listed once, under its first name, as PyTorch's named_children() does; state_dict() and
  // printing keep every name.
  OrderedDict<std::shared_ptr<Module>> named_children() const;
  std::vector<std::shared_ptr<Module>> children() const { return named_children().values(); }
  // This module (named "") and every descendant, parents before their children; a module
  // registered under two names (shared) is listed once, under its first name, as in PyTorch.
  OrderedDict<std::shared_ptr<Module>> named_modules(bool include_self = true);
  std::vector<std::shared_ptr<Module>> modules(bool include_self = true) {
    return named_modules(include_self).values();
  }

  // This module as its concrete type (an Impl or a holder type: as<nn::Linear>() is a LinearImpl*),
  // or nullptr when it is another module: libtorch's Module::as, for iterating a ModuleList.
  template <typename T>
  auto* as() {
    if constexpr (requires { typename T::ImplType; }) return dynamic_cast<typename T::ImplType*>(this);
    else return dynamic_cast<T*>(this);
  }

  // ---- whole-tree operations ----
  // Calls fn on each child's subtree, then on this module, and returns this module: PyTorch's
  // Module.apply, children first (libtorch's calls fn on the parent first). A child shared by two
  // names here is visited once, one shared by two parents once under each.
  Module& apply(const std::function<void(Module&)>& fn);

  // Sets training mode on this module and all descendants (Dropout reads it).
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Moves or converts every parameter and buffer in place: Tensor handles the module gave out
  // (to an optimizer, say) see the new data. to(dtype) converts floating tensors only.
  void to(Device device, bool non_blocking = false, Where where = Where::current());
  void to(DType dtype, Where where = Where::current());

  // Clears (set_to_none) or zeroes every parameter's gradient.
  void zero_grad(bool set_to_none = true);

  // Every parameter and buffer by its dotted name, as detached aliases of the module's tensors
  // (PyTorch's keep_vars=False): they share its memory and do not require grad.
  StateDict state_dict() const;
  // Copies `state` into the module's tensors. strict: a missing or unexpected key is an error.
  // A shape mismatch is always an error, and so is what copy_ refuses: an entry that partly
  // overlaps its target, a target that is expanded. Everything is validated before anything is
  // copied, so a failed load leaves the module unchanged. One error lists, as PyTorch's, the
  // missing and unexpected keys (when strict) and every size mismatch. Returns, as PyTorch's, the
  // keys the module has and `state` lacks and the keys `state` has and the module lacks (both
  // empty after a strict load, which refuses either).
  IncompatibleKeys load_state_dict(const StateDict& state, bool strict = true, Where where = Where::current());

  // PyTorch's printing: "Sequential(\n  (0): Linear(in_features=2, out_features=3, bias=True)\n)"; the
  // lines of extra_repr come first, then the children, each indented under its parent.
  // Virtual for the containers that print their own way (ModuleList folds repeated entries).
  virtual std::string str() const;

  // For code whose path inside ember::compile depends on this module's host state (the training
  // flag, through nn::training_for_forward; a container's modules): reports the guard that
  // `holds(*this)` stays true (notify_host_guard), so that a call after a change recompiles
  // instead of replaying the path captured. The guard does not keep the module alive; once it is
  // destroyed the guard fails. Public so that a user's module can guard its own host state.
  void guard_host_state(const std::string& what, std::function<bool(const Module&)> holds) const;

 protected:
  // Registers a parameter (a leaf that requires grad unless told otherwise) and returns it.
  // Registration errors name the line of the module's code that registered.
  Tensor& register_parameter(std::string name, Tensor tensor, bool requires_grad = true,
                             Where where = Where::current());
  // Registers a buffer: state that is moved with the module but not trained. A persistent buffer
  // (PyTorch's default) is part of state_dict(); a non-persistent one (a cache that can be
  // recomputed, say) is listed by buffers() and moved by to(), but neither saved nor loaded.
  Tensor& register_buffer(std::string name, Tensor tensor, bool persistent = true, Where where = Where::current());

  template <typename M>
    requires std::derived_from<M, Module>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module, Where where = Where::current()) {
    add_child(std::move(name), module, where);
    return module;
  }
  template <typename Holder>
    requires std::derived_from<Holder, ModuleHolder<typename Holder::ImplType>>
  Holder register_module(std::string name, Holder holder, Where where = Where::current()) {
    add_child(std::move(name), holder.ptr(), where);
    return holder;
  }

  // Replaces the child registered as `name`, keeping its place among the children (ModuleDict's
  // insert of a key it holds). A name that is not a child is an error.
  void replace_module(const std::string& name, std::shared_ptr<Module> module, Where where = Where::current());
  // Removes the child registered as `name` and returns it (ModuleDict::pop, ModuleList::insert).
  std::shared_ptr<Module> unregister_module(const std::string& name, Where where = Where::current());

  // What str() prints between the parentheses: "in_features=2, out_features=3, bias=True".
  virtual std::string extra_repr() const { return ""; }

  // guard_host_state on this module's children, while a dispatch mode records: a child added,
  // replaced or removed after the capture recompiles, as torch.compile guards a module's _modules.
  // The containers call it wherever they hand out their modules, Sequential in its forward, and so
  // do named_children() and named_modules() (parameters() and the other tree walks do not).
  void guard_children() const;

 private:
  // module.cpp's tree walk reads the registry itself, every name included, without the copy
  // named_children() makes (parameters() runs it in every zero_grad).
  template <typename Visit>
  friend void walk_module_tree(const Module& module, const std::string& prefix, bool recurse, Visit&& visit);

  void add_child(std::string name, std::shared_ptr<Module> child, Where where);
  void check_new_name(const std::string& name, const char* what) const;
  void collect_named_modules(const std::string& prefix, std::unordered_set<const Module*>& seen,
                             OrderedDict<std::shared_ptr<Module>>& out);
  void collect_state(const std::string& prefix, StateDict& out) const;

  std::string name_;
  OrderedDict<Tensor> parameters_;
  OrderedDict<Tensor> buffers_;
  std::unordered_set<std::string> non_persistent_buffers_;
  OrderedDict<std::shared_ptr<Module>> children_;
  uint64_t children_version_ = 0;  // counts the changes to children_, for guard_children
  // Expires when this module is destroyed: what a guard_host_state guard checks before it reads the
  // module, whether the module is owned by a shared_ptr or not (a local, a member by value).
  std::shared_ptr<const bool> liveness_ = std::make_shared<const bool>(true);
  bool training_ = true;
};

std::ostream& operator<<(std::ostream& out, const Module& module);

}  // namespace ember::nn
