// nn::Sequential: runs its modules in order, each one's output feeding the next. Children are named
// "0", "1", ... (or given names), so parameters read "0.weight", "2.bias" like PyTorch.
//
//   auto model = nn::Sequential(nn::Linear(100, 256), nn::ReLU(), nn::Linear(256, 10));
//   Tensor y = model->forward(x);
#pragma once

#include <concepts>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "runtime/nn/holder.h"

namespace ember::nn {

// A module with a forward(Tensor) -> Tensor, its type erased: what a Sequential stores.
class AnyModule {
 public:
  template <typename Impl>
    requires std::derived_from<Impl, Module>
  AnyModule(std::shared_ptr<Impl> module)  // NOLINT: implicit, so Sequential takes modules directly
      : module_(std::move(module)), forward_(&call_forward<Impl>) {}
  template <typename Impl>
  AnyModule(const ModuleHolder<Impl>& holder) : AnyModule(holder.ptr()) {}  // NOLINT

  Tensor forward(const Tensor& input) const { return forward_(*module_, input); }
  const std::shared_ptr<Module>& ptr() const { return module_; }

 private:
  template <typename Impl>
  static Tensor call_forward(Module& module, const Tensor& input) {
    return static_cast<Impl&>(module).forward(input);
  }

  std::shared_ptr<Module> module_;
  Tensor (*forward_)(Module&, const Tensor&);
};

class SequentialImpl : public Module {
 public:
  SequentialImpl() : Module("Sequential") {}
  template <typename... Modules>
  explicit SequentialImpl(Modules&&... modules) : Module("Sequential") {
    (push_back(AnyModule(std::forward<Modules>(modules))), ...);
  }

  // Appends a module named by its position ("3"), or by `name`.
  void push_back(AnyModule module);
  void push_back(std::string name, AnyModule module);

  // Runs the modules in order; errors inside name the caller's line.
  Tensor forward(const Tensor& input, Where where = Where::current());
  // Runs modules [begin, end) in order (checkpoint_sequential's segments); 0 <= begin < end <= size().
  Tensor forward_range(int64_t begin, int64_t end, const Tensor& input, Where where = Where::current());

  // These, [] and at() report a guard to a compile capture (guard_children): code that loops
  // over the modules replays only while they are the same.
  size_t size() const {
    guard_children();
    return modules_.size();
  }
  bool empty() const { return size() == 0; }
  // The module at `index`, a negative one counting from the end as in Python (seq[-1] is the last);
  // out of range is an error naming the caller's line (Operand carries it through the operator).
  std::shared_ptr<Module> operator[](Operand<int64_t> index) const { return ptr(index.value, index.where); }
  std::shared_ptr<Module> ptr(int64_t index, Where where = Where::current()) const;
  // The module at `index` as its concrete type: seq->at<LinearImpl>(0)->weight.
  template <typename Impl>
  std::shared_ptr<Impl> at(int64_t index, Where where = Where::current()) const {
    std::shared_ptr<Module> module = ptr(index, where);
    auto typed = std::dynamic_pointer_cast<Impl>(module);
    if (typed == nullptr) fail_wrong_type(index, *module, where);
    return typed;
  }

 private:
  [[noreturn]] static void fail_wrong_type(int64_t index, const Module& module, Where where);

  std::vector<AnyModule> modules_;
};

class Sequential : public ModuleHolder<SequentialImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  Sequential() : ModuleHolder(std::make_shared<SequentialImpl>()) {}
  // Any modules or holders; one argument that is itself a Sequential copies the handle instead.
  template <typename First, typename... Rest>
    requires(sizeof...(Rest) > 0 || !std::is_base_of_v<ModuleHolder<SequentialImpl>, std::decay_t<First>>)
  explicit Sequential(First&& first, Rest&&... rest)
      : ModuleHolder(std::make_shared<SequentialImpl>(std::forward<First>(first), std::forward<Rest>(rest)...)) {}
};

}  // namespace ember::nn
