// nn::ModuleDict: modules by name, in insertion order, each registered under its key, so that a
// model holding one as `heads` names their parameters "heads.<key>.weight" (torch.nn.ModuleDict).
// It has no forward, and prints as any module does: "ModuleDict(\n  (key): Linear(...)\n)".
//
//   nn::ModuleDict heads({{"class", nn::Linear(16, 10)}, {"box", nn::Linear(16, 4)}});
//   Tensor logits = heads->at<nn::LinearImpl>("class")->forward(features);
#pragma once

#include <concepts>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/nn/holder.h"

namespace ember::nn {

class ModuleDictImpl : public Module {
 public:
  using Entries = std::vector<std::pair<std::string, ModulePointer>>;

  ModuleDictImpl() : Module("ModuleDict") {}
  // The entries in order; a repeated key replaces the module of its first occurrence, in place.
  explicit ModuleDictImpl(const Entries& modules, Where where = Where::current());

  // Adds `module` under `key`, or replaces the module `key` holds, keeping its place (PyTorch's
  // dict[key] = module, libtorch's insert). A key must be a valid module name: not empty, no '.'.
  void insert(const std::string& key, ModulePointer module, Where where = Where::current());
  // insert() for each entry, in order.
  void update(const Entries& modules, Where where = Where::current());
  // Another dict's entries (a template, so that a braced list always means Entries).
  template <typename Dict>
    requires std::derived_from<Dict, ModuleDictImpl>
  void update(const Dict& other, Where where = Where::current()) {
    const Entries entries(other.begin(), other.end());
    update(entries, where);
  }
  // Removes `key` and returns its module; a missing key is an error.
  std::shared_ptr<Module> pop(const std::string& key, Where where = Where::current());
  void clear();

  // These, the lookups and the listings report a guard to a compile capture (guard_children): a
  // step that read the dict replays only while it holds the same modules under the same keys.
  bool contains(const std::string& key) const {
    guard_children();
    return modules_.contains(key);
  }
  size_t size() const {
    guard_children();
    return modules_.size();
  }
  bool empty() const { return size() == 0; }
  bool is_empty() const { return empty(); }  // libtorch's name

  // The module under `key`; a missing key is an error naming the keys there are and the caller's
  // line (Operand carries it through the operator; one overload per kind of key, since a literal
  // would need two conversions to reach Operand<std::string>).
  std::shared_ptr<Module> operator[](Operand<std::string> key) const { return ptr(key.value, key.where); }
  std::shared_ptr<Module> operator[](Operand<const char*> key) const { return ptr(key.value, key.where); }
  std::shared_ptr<Module> ptr(const std::string& key, Where where = Where::current()) const;
  // The module under `key` as its concrete type: heads->at<LinearImpl>("class")->weight.
  template <typename Impl>
  std::shared_ptr<Impl> at(const std::string& key, Where where = Where::current()) const {
    std::shared_ptr<Module> module = ptr(key, where);
    auto typed = std::dynamic_pointer_cast<Impl>(module);
    if (typed == nullptr) fail_wrong_type(key, *module, where);
    return typed;
  }

  // Every entry, a module stored under two keys under both (PyTorch's keys(), values(), items()).
  std::vector<std::string> keys() const {
    guard_children();
    return modules_.keys();
  }
  std::vector<std::shared_ptr<Module>> values() const {
    guard_children();
    return modules_.values();
  }
  const std::vector<OrderedDict<std::shared_ptr<Module>>::Item>& items() const {
    guard_children();
    return modules_.items();
  }
  auto begin() const {
    guard_children();
    return modules_.begin();
  }
  auto end() const { return modules_.end(); }

 private:
  [[noreturn]] static void fail_wrong_type(const std::string& key, const Module& module, Where where);

  OrderedDict<std::shared_ptr<Module>> modules_;
};

class ModuleDict : public ModuleHolder<ModuleDictImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  ModuleDict() : ModuleHolder(std::make_shared<ModuleDictImpl>()) {}
  explicit ModuleDict(const ModuleDictImpl::Entries& modules, Where where = Where::current())
      : ModuleHolder(std::make_shared<ModuleDictImpl>(modules, where)) {}
};

}  // namespace ember::nn
