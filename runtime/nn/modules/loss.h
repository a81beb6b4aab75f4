// Loss modules, torch.nn's: each holds its options and calls the loss function of the same name
// (runtime/functional.h) in forward(input, target), so the math lives once. A tensor option (a
// class weight, BCEWithLogitsLoss's pos_weight) is registered as a buffer, as PyTorch registers
// it: it moves with to(), is listed by buffers() and saved in state_dict(). Like PyTorch's, they
// print as "CrossEntropyLoss()", whatever their options.
#pragma once

#include "runtime/functional.h"
#include "runtime/nn/holder.h"

namespace ember::nn {

// PyTorch's defaults. A weight is [C] (one per class) for CrossEntropyLoss and NLLLoss, and
// broadcasts to the input for BCELoss and BCEWithLogitsLoss; undefined: none.
using CrossEntropyLossOptions = CrossEntropyOptions;  // reduction, ignore_index, label_smoothing, weight
struct NLLLossOptions {
  Tensor weight = {};
  int64_t ignore_index = -100;
  Reduction reduction = Reduction::Mean;
};
struct MSELossOptions {
  Reduction reduction = Reduction::Mean;
};
struct L1LossOptions {
  Reduction reduction = Reduction::Mean;
};
struct SmoothL1LossOptions {
  Reduction reduction = Reduction::Mean;
  double beta = 1.0;
};
struct HuberLossOptions {
  Reduction reduction = Reduction::Mean;
  double delta = 1.0;
};
struct BCELossOptions {
  Tensor weight = {};
  Reduction reduction = Reduction::Mean;
};
struct BCEWithLogitsLossOptions {
  Tensor weight = {};
  Reduction reduction = Reduction::Mean;
  Tensor pos_weight = {};  // broadcasts over the last dims, e.g. [C]
};
struct KLDivLossOptions {
  Reduction reduction = Reduction::Mean;  // BatchMean is the mathematically right one, as in PyTorch
  bool log_target = false;
};

// What the loss modules share: options that hold tensors register them as buffers.
class LossModule : public Module {
 protected:
  using Module::Module;
  // Registers `tensor` as the buffer `name` and returns the buffer; an undefined tensor registers
  // nothing (PyTorch's register_buffer(name, None)). The buffer is a detached alias of the
  // caller's tensor: it shares its memory, but to() converts the module's handle only, as PyTorch's
  // module.to() replaces the module's tensor and leaves the caller's alone. A tensor that requires
  // grad is registered itself, so the loss's gradient reaches it as in PyTorch; to() then converts
  // the caller's tensor too, as it would a parameter.
  Tensor register_option_buffer(std::string name, const Tensor& tensor);
};

class CrossEntropyLossImpl : public LossModule {
 public:
  explicit CrossEntropyLossImpl(CrossEntropyLossOptions options = {});
  Tensor forward(const Tensor& input, const Tensor& target, Where where = Where::current());
  const CrossEntropyLossOptions& options() const { return options_; }  // its weight is the buffer
  Tensor weight;  // the buffer "weight", undefined without one

 private:
  CrossEntropyLossOptions options_;
};

class NLLLossImpl : public LossModule {
 public:
  explicit NLLLossImpl(NLLLossOptions options = {});
  Tensor forward(const Tensor& input, const Tensor& target, Where where = Where::current());
  const NLLLossOptions& options() const { return options_; }
  Tensor weight;

 private:
  NLLLossOptions options_;
};

class MSELossImpl : public LossModule {
 public:
  explicit MSELossImpl(MSELossOptions options = {}) : LossModule("MSELoss"), options_(options) {}
  Tensor forward(const Tensor& input, const Tensor& target, Where where = Where::current());
  const MSELossOptions& options() const { return options_; }

 private:
  MSELossOptions options_;
};

class L1LossImpl : public LossModule {
 public:
  explicit L1LossImpl(L1LossOptions options = {}) : LossModule("L1Loss"), options_(options) {}
  Tensor forward(const Tensor& input, const Tensor& target, Where where = Where::current());
  const L1LossOptions& options() const { return options_; }

 private:
  L1LossOptions options_;
};

class SmoothL1LossImpl : public LossModule {
 public:
  explicit SmoothL1LossImpl(SmoothL1LossOptions options = {}) : LossModule("SmoothL1Loss"), options_(options) {}
  Tensor forward(const Tensor& input, const Tensor& target, Where where = Where::current());
  const SmoothL1LossOptions& options() const { return options_; }

 private:
  SmoothL1LossOptions options_;
};

class HuberLossImpl : public LossModule {
 public:
  explicit HuberLossImpl(HuberLossOptions options = {}) : LossModule("HuberLoss"), options_(options) {}
  Tensor forward(const Tensor& input, const Tensor& target, Where where = Where::current());
  const HuberLossOptions& options() const { return options_; }

 private:
  HuberLossOptions options_;
};

class BCELossImpl : public LossModule {
 public:
  explicit BCELossImpl(BCELossOptions options = {});
  Tensor forward(const Tensor& input, const Tensor& target, Where where = Where::current());
  const BCELossOptions& options() const { return options_; }
  Tensor weight;

 private:
  BCELossOptions options_;
};

class BCEWithLogitsLossImpl : public LossModule {
 public:
  explicit BCEWithLogitsLossImpl(BCEWithLogitsLossOptions options = {});
  Tensor forward(const Tensor& input, const Tensor& target, Where where = Where::current());
  const BCEWithLogitsLossOptions& options() const { return options_; }
  Tensor weight;
  Tensor pos_weight;

 private:
  BCEWithLogitsLossOptions options_;
};

class KLDivLossImpl : public LossModule {
 public:
  explicit KLDivLossImpl(KLDivLossOptions options = {}) : LossModule("KLDivLoss"), options_(options) {}
  Tensor forward(const Tensor& input, const Tensor& target, Where where = Where::current());
  const KLDivLossOptions& options() const { return options_; }

 private:
  KLDivLossOptions options_;
};

// The holders: `nn::CrossEntropyLoss loss({.label_smoothing = 0.1}); loss(logits, target)`.
class CrossEntropyLoss : public ModuleHolder<CrossEntropyLossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit CrossEntropyLoss(CrossEntropyLossOptions options = {})
      : ModuleHolder(std::make_shared<CrossEntropyLossImpl>(std::move(options))) {}
};

class NLLLoss : public ModuleHolder<NLLLossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit NLLLoss(NLLLossOptions options = {}) : ModuleHolder(std::make_shared<NLLLossImpl>(std::move(options))) {}
};

class MSELoss : public ModuleHolder<MSELossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit MSELoss(MSELossOptions options = {}) : ModuleHolder(std::make_shared<MSELossImpl>(options)) {}
};

class L1Loss : public ModuleHolder<L1LossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit L1Loss(L1LossOptions options = {}) : ModuleHolder(std::make_shared<L1LossImpl>(options)) {}
};

class SmoothL1Loss : public ModuleHolder<SmoothL1LossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit SmoothL1Loss(SmoothL1LossOptions options = {}) : ModuleHolder(std::make_shared<SmoothL1LossImpl>(options)) {}
};

class HuberLoss : public ModuleHolder<HuberLossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit HuberLoss(HuberLossOptions options = {}) : ModuleHolder(std::make_shared<HuberLossImpl>(options)) {}
};

class BCELoss : public ModuleHolder<BCELossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit BCELoss(BCELossOptions options = {}) : ModuleHolder(std::make_shared<BCELossImpl>(std::move(options))) {}
};

class BCEWithLogitsLoss : public ModuleHolder<BCEWithLogitsLossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit BCEWithLogitsLoss(BCEWithLogitsLossOptions options = {})
      : ModuleHolder(std::make_shared<BCEWithLogitsLossImpl>(std::move(options))) {}
};

class KLDivLoss : public ModuleHolder<KLDivLossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit KLDivLoss(KLDivLossOptions options = {}) : ModuleHolder(std::make_shared<KLDivLossImpl>(options)) {}
};

}  // namespace ember::nn
