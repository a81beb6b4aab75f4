// nn::ModuleList: modules kept in a list and registered as "0", "1", ..., so that a model holding
// one as `layers` names their parameters "layers.0.weight" (torch.nn.ModuleList). It has no
// forward: the owner's forward decides how to call them.
//
//   nn::ModuleList blocks;
//   for (int i = 0; i < 4; ++i) blocks->push_back(nn::Linear(8, 8));
//   for (const auto& block : *blocks) x = block->as<nn::Linear>()->forward(x);
#pragma once

#include <cstdint>
#include <iterator>
#include <memory>
#include <type_traits>
#include <vector>

#include "runtime/nn/holder.h"

namespace ember::nn {

class ModuleListImpl : public Module {
 public:
  ModuleListImpl() : Module("ModuleList") {}
  // Any modules or holders, in order.
  template <typename... Modules>
  explicit ModuleListImpl(Modules&&... modules) : Module("ModuleList") {
    (push_back(ModulePointer(std::forward<Modules>(modules))), ...);
  }

  // Appends `module` under the next position's name (libtorch's push_back, PyTorch's append).
  void push_back(ModulePointer module, Where where = Where::current());
  void append(ModulePointer module, Where where = Where::current()) { push_back(std::move(module), where); }
  // Appends every module of `modules` (another list included: its modules are then shared).
  void extend(const std::vector<ModulePointer>& modules, Where where = Where::current()) {
    extend<std::vector<ModulePointer>>(modules, where);
  }
  template <typename Range>
  void extend(const Range& modules, Where where = Where::current()) {
    // Copied first, so that extending a list with itself appends each of its modules once.
    const std::vector<ModulePointer> items(std::begin(modules), std::end(modules));
    for (const ModulePointer& module : items) push_back(module, where);
  }
  // Inserts `module` before position `index` (0..size(); negative counts from the end, as Python's
  // list.insert); the modules after it move up one name ("2" becomes "3").
  void insert(int64_t index, ModulePointer module, Where where = Where::current());

  // These, the lookups and begin() report a guard to a compile capture (guard_children): a step
  // that looped over the list replays only while it holds the same modules.
  size_t size() const {
    guard_children();
    return modules_.size();
  }
  bool empty() const { return size() == 0; }
  bool is_empty() const { return empty(); }  // libtorch's name

  // The module at `index` (negative counts from the end, as in Python); out of range is an error
  // naming the caller's line (Operand carries it through the operator).
  std::shared_ptr<Module> operator[](Operand<int64_t> index) const { return ptr(index.value, index.where); }
  std::shared_ptr<Module> ptr(int64_t index, Where where = Where::current()) const;
  // The module at `index` as its concrete type: layers->at<LinearImpl>(0)->weight.
  template <typename Impl>
  std::shared_ptr<Impl> at(int64_t index, Where where = Where::current()) const {
    std::shared_ptr<Module> module = ptr(index, where);
    auto typed = std::dynamic_pointer_cast<Impl>(module);
    if (typed == nullptr) fail_wrong_type(index, *module, where);
    return typed;
  }

  auto begin() const {
    guard_children();
    return modules_.begin();
  }
  auto end() const { return modules_.end(); }

  // torch's ModuleList.__repr__: runs of entries that print alike fold into "(0-2): 3 x Linear(...)".
  std::string str() const override;

 private:
  // The position `index` names (negative counts from the end) among `count` slots.
  size_t position(int64_t index, size_t count, const char* what, Where where) const;
  [[noreturn]] static void fail_wrong_type(int64_t index, const Module& module, Where where);

  std::vector<std::shared_ptr<Module>> modules_;
};

class ModuleList : public ModuleHolder<ModuleListImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  ModuleList() : ModuleHolder(std::make_shared<ModuleListImpl>()) {}
  // Any modules or holders; one argument that is itself a ModuleList copies the handle instead.
  template <typename First, typename... Rest>
    requires(sizeof...(Rest) > 0 || !std::is_base_of_v<ModuleHolder<ModuleListImpl>, std::decay_t<First>>)
  explicit ModuleList(First&& first, Rest&&... rest)
      : ModuleHolder(std::make_shared<ModuleListImpl>(std::forward<First>(first), std::forward<Rest>(rest)...)) {}
};

}  // namespace ember::nn
