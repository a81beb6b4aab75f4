// ModuleHolder: libtorch's holder pattern. nn::Linear is a thin handle around a
// std::shared_ptr<LinearImpl>; copying the handle shares the module, `->` reaches the Impl, and
// `model(args...)` calls its forward with them.
#pragma once

#include <concepts>
#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

#include "runtime/nn/module.h"

namespace ember::nn {

// Whether Impl's forward takes a tensor and the caller's location: forward(x, Where).
template <typename Impl>
concept ForwardTakesWhere = requires(Impl& impl, const Tensor& input, Where where) { impl.forward(input, where); };
// Whether Impl's forward takes two tensors and the caller's location: a loss's forward(input, target, Where).
template <typename Impl>
concept PairForwardTakesWhere = requires(Impl& impl, const Tensor& input, const Tensor& target, Where where) {
  impl.forward(input, target, where);
};
// Whether Impl's forward takes three tensors and the caller's location: forward(a, b, target, Where)
// of MarginRankingLoss, CosineEmbeddingLoss, the triplet losses and GaussianNLLLoss, and
// MultiheadAttention's forward(query, key, value, Where).
template <typename Impl>
concept TripleForwardTakesWhere = requires(Impl& impl, const Tensor& a, const Tensor& b, const Tensor& c, Where where) {
  impl.forward(a, b, c, where);
};
// Whether Impl's forward takes four tensors and the caller's location: CTCLoss's
// forward(log_probs, targets, input_lengths, target_lengths, Where).
template <typename Impl>
concept QuadForwardTakesWhere =
    requires(Impl& impl, const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& d, Where where) {
      impl.forward(a, b, c, d, where);
    };
// Whether model(args...) is served by one of the operator() below that add the caller's location.
template <typename Impl, typename... Args>
constexpr bool adds_call_site = (std::is_convertible_v<Args, const Tensor&> && ...) &&
                                ((sizeof...(Args) == 1 && ForwardTakesWhere<Impl>) ||
                                 (sizeof...(Args) == 2 && PairForwardTakesWhere<Impl>) ||
                                 (sizeof...(Args) == 3 && TripleForwardTakesWhere<Impl>) ||
                                 (sizeof...(Args) == 4 && QuadForwardTakesWhere<Impl>));

template <typename Impl>
class ModuleHolder {
 public:
  using ImplType = Impl;

  // An empty holder, assigned later: `nn::Linear fc{nullptr}; ... fc = register_module(...)`.
  ModuleHolder(std::nullptr_t) {}  // NOLINT: implicit, like libtorch
  ModuleHolder(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}  // NOLINT

  Impl* operator->() const { return get(); }
  Impl& operator*() const { return *get(); }
  Impl* get() const {
    check(impl_ != nullptr, "nn: use of an empty module holder (constructed from nullptr)");
    return impl_.get();
  }
  const std::shared_ptr<Impl>& ptr() const { return impl_; }
  bool is_empty() const { return impl_ == nullptr; }

  // model(x) for a forward that also takes the caller's location, as every built-in module's does:
  // errors raised inside name the user's line.
  decltype(auto) operator()(const Tensor& input, Where where = Where::current()) const
    requires ForwardTakesWhere<Impl>
  {
    return get()->forward(input, where);
  }
  // loss(input, target) likewise, for a forward(input, target, Where) as the loss modules' take.
  decltype(auto) operator()(const Tensor& input, const Tensor& target, Where where = Where::current()) const
    requires PairForwardTakesWhere<Impl>
  {
    return get()->forward(input, target, where);
  }
  // loss(a, b, c) likewise, for a forward(a, b, c, Where).
  decltype(auto) operator()(const Tensor& a, const Tensor& b, const Tensor& c, Where where = Where::current()) const
    requires TripleForwardTakesWhere<Impl>
  {
    return get()->forward(a, b, c, where);
  }
  // loss(a, b, c, d) likewise, for a forward(a, b, c, d, Where).
  decltype(auto) operator()(const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& d,
                            Where where = Where::current()) const
    requires QuadForwardTakesWhere<Impl>
  {
    return get()->forward(a, b, c, d, where);
  }
  // model(args...): libtorch's call, for any other forward: forward(const Tensor&), forward(Tensor),
  // several inputs, other types. The arguments go through unchanged.
  template <typename... Args>
    requires(!adds_call_site<Impl, Args...>)
  decltype(auto) operator()(Args&&... args) const {
    return get()->forward(std::forward<Args>(args)...);
  }

 protected:
  std::shared_ptr<Impl> impl_;
};

// A module handed to a container (ModuleList, ModuleDict): an Impl's shared_ptr or a holder, both
// converting implicitly, so `{"head", nn::Linear(4, 2)}` and `std::make_shared<MyImpl>()` both fit.
class ModulePointer {
 public:
  template <typename Impl>
    requires std::derived_from<Impl, Module>
  ModulePointer(std::shared_ptr<Impl> module) : module_(std::move(module)) {}  // NOLINT: implicit
  template <typename Impl>
  ModulePointer(const ModuleHolder<Impl>& holder) : module_(holder.ptr()) {}  // NOLINT: implicit

  const std::shared_ptr<Module>& get() const { return module_; }

 private:
  std::shared_ptr<Module> module_;
};

template <typename Impl>
std::ostream& operator<<(std::ostream& out, const ModuleHolder<Impl>& holder) {
  return out << *holder;
}

}  // namespace ember::nn
