// optim::AveragedModel: PyTorch 2.3's torch.optim.swa_utils.AveragedModel. It holds its own copy of
// a model and folds the model's parameters into it at each update_parameters(model):
//   SWA (the default): avg <- avg + (p - avg) / (n + 1), the equal-weight mean of every update
//   EMA (get_ema_multi_avg_fn(decay)): avg <- decay * avg + (1 - decay) * p
// where n = n_averaged, the updates folded in so far. The first update copies the parameters. With
// use_buffers the buffers (BatchNorm's running statistics) are averaged too; without, they are
// copied from the model at every update.
//
//   auto swa = std::make_shared<optim::AveragedModel<Net>>(model, [] { return Net(); });
//   for (epoch ...) { train(model); if (epoch >= swa_start) swa->update_parameters(model); }
//   optim::update_bn(inputs, *swa);
//   Tensor prediction = swa->forward(x);  // or swa->module()->forward(x)
//
// Why a template with a factory: PyTorch deep-copies the model with copy.deepcopy; an ember module
// has no such copy (a C++ class cannot clone an arbitrary subclass), so the copy is built by
// `make_copy`, a function returning a new module of the model's architecture, and then given copies
// of every parameter and buffer of the model: their values, dtypes, devices and requires_grad, and
// each submodule's training flag. The copy shares no memory with the model. Host settings that are
// no tensors (a BatchNorm's momentum, a Dropout's p) are the factory's. Typing it as ModuleType (a
// module holder: nn::Linear, or nn::ModuleHolder<MyNetImpl>) gives module() and forward() the
// model's own forward signature, as libtorch users call their models.
//
// The state dict is PyTorch's: "n_averaged" (an int64 scalar) and the copy's entries under "module.".
#pragma once

#include <concepts>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "runtime/nn/holder.h"
#include "runtime/nn/module.h"
#include "runtime/random/generator.h"

namespace ember::optim {

// One tensor's new average from its average so far, the model's tensor and the updates folded in
// so far (an int64 scalar on the average's device). Runs under no-grad.
using AvgFn = std::function<Tensor(const Tensor& averaged, const Tensor& current, const Tensor& num_averaged)>;
// Updates the averages in place (each `averaged` handle shares the copy's memory: write it with
// copy_), for tensors of one device and dtype at a time.
using MultiAvgFn = std::function<void(const std::vector<Tensor>& averaged, const std::vector<Tensor>& current,
                                      const Tensor& num_averaged)>;

// avg + (p - avg) / (n + 1).
AvgFn get_swa_avg_fn();
// decay * avg + (1 - decay) * p.
AvgFn get_ema_avg_fn(double decay = 0.999);
// SWA as lerp(avg, p, 1 / (n + 1)) for floating tensors, the weight rounded to the default float
// dtype as PyTorch's 1 / (n + 1) of an int64 tensor is; integer tensors as get_swa_avg_fn.
MultiAvgFn get_swa_multi_avg_fn();
// EMA as lerp(avg, p, 1 - decay) for floating tensors; integer tensors as get_ema_avg_fn.
MultiAvgFn get_ema_multi_avg_fn(double decay = 0.999);

struct AveragedModelOptions {
  // Where the copy and n_averaged live. Empty: the copy's tensors stay on the model's devices and
  // n_averaged goes to the default device (PyTorch's goes to its default, the CPU).
  std::optional<Device> device;
  AvgFn avg_fn;  // at most one of avg_fn and multi_avg_fn; neither: SWA
  MultiAvgFn multi_avg_fn;
  bool use_buffers = false;  // average the buffers too, instead of copying them
};

// What AveragedModel<ModuleType> does whatever the type of its module.
class AveragedModelBase : public nn::Module {
 public:
  // Folds `model`'s parameters (and buffers, with use_buffers) into the averages, under no-grad;
  // model must have the copy's parameters and buffers, in order and shape (PyTorch zips them and
  // silently stops at the shorter list; a mismatch is refused here before anything changes). Its
  // tensors may be on another device. Without use_buffers the buffers are copied from it.
  void update_parameters(nn::Module& model, Where where = Where::current());
  template <typename Impl>
  void update_parameters(const nn::ModuleHolder<Impl>& model, Where where = Where::current()) {
    update_parameters(*model, where);
  }

  // The int64 scalar counting the updates so far.
  const Tensor& n_averaged() const { return n_averaged_; }
  bool use_buffers() const { return options_.use_buffers; }

 protected:
  AveragedModelBase(AveragedModelOptions options, Where where);
  // Makes `copy`, a new module built by the factory, a deep copy of `model` (see the header comment)
  // and registers it as the child "module".
  void adopt_copy(nn::Module& model, const std::shared_ptr<nn::Module>& copy);

  // Restores the default generators of the CPU, the default device and `model`'s devices when it
  // goes: the factory's initial values are overwritten, so building the copy draws nothing, as
  // PyTorch's deepcopy.
  class KeepGenerators {
   public:
    explicit KeepGenerators(const nn::Module& model);
    ~KeepGenerators();
    KeepGenerators(const KeepGenerators&) = delete;
    KeepGenerators& operator=(const KeepGenerators&) = delete;

   private:
    std::vector<std::pair<Device, GeneratorState>> saved_;
  };

 private:
  AveragedModelOptions options_;
  std::shared_ptr<nn::Module> copy_module_;  // the child "module"
  Tensor n_averaged_;
};

template <typename ModuleType>
requires std::derived_from<ModuleType, nn::ModuleHolder<typename ModuleType::ImplType>>
class AveragedModel : public AveragedModelBase {
 public:
  using Impl = typename ModuleType::ImplType;

  // `make_copy` returns a new module of `model`'s architecture (not `model` itself, nor one sharing
  // its submodules: refused).
  AveragedModel(const ModuleType& model, const std::function<ModuleType()>& make_copy,
                AveragedModelOptions options = {}, Where where = Where::current())
      : AveragedModelBase(std::move(options), where), copy_(nullptr) {
    CallSiteScope site(where);
    check(!model.is_empty(), "AveragedModel: the model is an empty module holder");
    check(static_cast<bool>(make_copy), "AveragedModel: make_copy is empty; pass a function building a new model");
    {
      KeepGenerators keep(*model);
      copy_ = make_copy();
    }
    check(!copy_.is_empty(), "AveragedModel: make_copy returned an empty module holder");
    adopt_copy(*model, copy_.ptr());
  }

  // The averaged copy, as its own type.
  const ModuleType& module() const { return copy_; }

  // The copy's forward: PyTorch's AveragedModel.forward. The caller's line is passed on where the
  // module's forward takes one.
  decltype(auto) forward(const Tensor& input, Where where = Where::current()) requires nn::ForwardTakesWhere<Impl> {
    return copy_->forward(input, where);
  }
  template <typename... Args>
  requires(!(sizeof...(Args) == 1 && nn::ForwardTakesWhere<Impl>)) decltype(auto) forward(Args&&... args) {
    return copy_(std::forward<Args>(args)...);
  }

 private:
  ModuleType copy_;
};

}  // namespace ember::optim
