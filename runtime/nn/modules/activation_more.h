// Activation modules of nn/functional_activations_more.h: Hardtanh, ReLU6, Threshold, GLU, Hardswish,
// Hardsigmoid, Mish, CELU, Softmin, LogSigmoid, Softsign, Tanhshrink, Softshrink, Hardshrink, PReLU
// (with its learnable weight) and RReLU (random slopes while training). Options, defaults and reprs
// are torch.nn's; like activation.h's, they have no in-place form, which PyTorch's inplace=False
// prints as nothing.
#pragma once

#include <concepts>
#include <optional>

#include "runtime/nn/holder.h"

namespace ember::nn {

// Modules without options: forward calls the function of the same name; the repr is the class name.
class ReLU6Impl : public Module {
 public:
  ReLU6Impl() : Module("ReLU6") {}
  Tensor forward(const Tensor& input, Where where = Where::current());
};

class HardswishImpl : public Module {
 public:
  HardswishImpl() : Module("Hardswish") {}
  Tensor forward(const Tensor& input, Where where = Where::current());
};

class HardsigmoidImpl : public Module {
 public:
  HardsigmoidImpl() : Module("Hardsigmoid") {}
  Tensor forward(const Tensor& input, Where where = Where::current());
};

class MishImpl : public Module {
 public:
  MishImpl() : Module("Mish") {}
  Tensor forward(const Tensor& input, Where where = Where::current());
};

class LogSigmoidImpl : public Module {
 public:
  LogSigmoidImpl() : Module("LogSigmoid") {}
  Tensor forward(const Tensor& input, Where where = Where::current());
};

class SoftsignImpl : public Module {
 public:
  SoftsignImpl() : Module("Softsign") {}
  Tensor forward(const Tensor& input, Where where = Where::current());
};

class TanhshrinkImpl : public Module {
 public:
  TanhshrinkImpl() : Module("Tanhshrink") {}
  Tensor forward(const Tensor& input, Where where = Where::current());
};

// libtorch's option structs and torch.nn's defaults.
struct HardtanhOptions {
  double min_val = -1.0;
  double max_val = 1.0;
};
struct ThresholdOptions {
  double threshold;
  double value;
};
struct GLUOptions {
  int64_t dim = -1;
};
struct CELUOptions {
  double alpha = 1.0;
};
struct SoftminOptions {
  int64_t dim;
};
struct SoftshrinkOptions {
  double lambda = 0.5;
};
struct HardshrinkOptions {
  double lambda = 0.5;
};
struct PReLUOptions {
  int64_t num_parameters = 1;  // 1: one slope shared by every channel; else one per channel (dim 1)
  double init = 0.25;
  DType dtype = DType::Float32;
  std::optional<Device> device = std::nullopt;  // empty: the default device
};
struct RReLUOptions {
  double lower = 1.0 / 8.0;
  double upper = 1.0 / 3.0;
};

// The base of the modules below that hold one option struct, readable through options().
template <typename Options>
class OptionActivationImpl : public Module {
 public:
  OptionActivationImpl(const char* name, Options options) : Module(name), options_(options) {}
  const Options& options() const { return options_; }

 protected:
  Options options_;
};

class HardtanhImpl : public OptionActivationImpl<HardtanhOptions> {
 public:
  // torch.nn.Hardtanh asserts max_val > min_val (F.hardtanh refuses only min_val > max_val).
  explicit HardtanhImpl(HardtanhOptions options = {}, Where where = Where::current());
  Tensor forward(const Tensor& input, Where where = Where::current());

 protected:
  std::string extra_repr() const override;
};

class ThresholdImpl : public OptionActivationImpl<ThresholdOptions> {
 public:
  explicit ThresholdImpl(ThresholdOptions options) : OptionActivationImpl("Threshold", options) {}
  ThresholdImpl(double threshold, double value) : ThresholdImpl(ThresholdOptions{threshold, value}) {}
  Tensor forward(const Tensor& input, Where where = Where::current());

 protected:
  std::string extra_repr() const override;
};

class GLUImpl : public OptionActivationImpl<GLUOptions> {
 public:
  explicit GLUImpl(GLUOptions options = {}) : OptionActivationImpl("GLU", options) {}
  Tensor forward(const Tensor& input, Where where = Where::current());

 protected:
  std::string extra_repr() const override;
};

class CELUImpl : public OptionActivationImpl<CELUOptions> {
 public:
  explicit CELUImpl(CELUOptions options = {}, Where where = Where::current());
  Tensor forward(const Tensor& input, Where where = Where::current());

 protected:
  std::string extra_repr() const override;
};

class SoftminImpl : public OptionActivationImpl<SoftminOptions> {
 public:
  explicit SoftminImpl(SoftminOptions options) : OptionActivationImpl("Softmin", options) {}
  Tensor forward(const Tensor& input, Where where = Where::current());

 protected:
  std::string extra_repr() const override;
};

class SoftshrinkImpl : public OptionActivationImpl<SoftshrinkOptions> {
 public:
  explicit SoftshrinkImpl(SoftshrinkOptions options = {}, Where where = Where::current());
  Tensor forward(const Tensor& input, Where where = Where::current());

 protected:
  std::string extra_repr() const override;
};

class HardshrinkImpl : public OptionActivationImpl<HardshrinkOptions> {
 public:
  explicit HardshrinkImpl(HardshrinkOptions options = {}) : OptionActivationImpl("Hardshrink", options) {}
  Tensor forward(const Tensor& input, Where where = Where::current());

 protected:
  std::string extra_repr() const override;
};

// Reads the module's training flag: random slopes in train(), their mean in eval().
class RReLUImpl : public OptionActivationImpl<RReLUOptions> {
 public:
  explicit RReLUImpl(RReLUOptions options = {}, Where where = Where::current());
  Tensor forward(const Tensor& input, Where where = Where::current());

 protected:
  std::string extra_repr() const override;
};

// weight: [num_parameters], every element `init` (reset_parameters), a parameter named "weight".
class PReLUImpl : public OptionActivationImpl<PReLUOptions> {
 public:
  explicit PReLUImpl(PReLUOptions options = {}, Where where = Where::current());
  Tensor forward(const Tensor& input, Where where = Where::current());
  void reset_parameters();

  Tensor weight;

 protected:
  std::string extra_repr() const override;
};

class ReLU6 : public ModuleHolder<ReLU6Impl> {
 public:
  using ModuleHolder::ModuleHolder;
  ReLU6() : ModuleHolder(std::make_shared<ReLU6Impl>()) {}
};

class Hardswish : public ModuleHolder<HardswishImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  Hardswish() : ModuleHolder(std::make_shared<HardswishImpl>()) {}
};

class Hardsigmoid : public ModuleHolder<HardsigmoidImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  Hardsigmoid() : ModuleHolder(std::make_shared<HardsigmoidImpl>()) {}
};

class Mish : public ModuleHolder<MishImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  Mish() : ModuleHolder(std::make_shared<MishImpl>()) {}
};

class LogSigmoid : public ModuleHolder<LogSigmoidImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  LogSigmoid() : ModuleHolder(std::make_shared<LogSigmoidImpl>()) {}
};

class Softsign : public ModuleHolder<SoftsignImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  Softsign() : ModuleHolder(std::make_shared<SoftsignImpl>()) {}
};

class Tanhshrink : public ModuleHolder<TanhshrinkImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  Tanhshrink() : ModuleHolder(std::make_shared<TanhshrinkImpl>()) {}
};

class Hardtanh : public ModuleHolder<HardtanhImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit Hardtanh(HardtanhOptions options = {}, Where where = Where::current())
      : ModuleHolder(std::make_shared<HardtanhImpl>(options, where)) {}
};

class Threshold : public ModuleHolder<ThresholdImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit Threshold(ThresholdOptions options) : ModuleHolder(std::make_shared<ThresholdImpl>(options)) {}
  Threshold(double threshold, double value) : Threshold(ThresholdOptions{threshold, value}) {}
};

class GLU : public ModuleHolder<GLUImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit GLU(GLUOptions options = {}) : ModuleHolder(std::make_shared<GLUImpl>(options)) {}
};

class CELU : public ModuleHolder<CELUImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit CELU(CELUOptions options = {}, Where where = Where::current())
      : ModuleHolder(std::make_shared<CELUImpl>(options, where)) {}
};

class Softmin : public ModuleHolder<SoftminImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  // A template, so that Softmin(0) is the dim 0 rather than an ambiguous null holder.
  template <std::integral Dim>
  explicit Softmin(Dim dim) : ModuleHolder(std::make_shared<SoftminImpl>(SoftminOptions{static_cast<int64_t>(dim)})) {}
  explicit Softmin(SoftminOptions options) : ModuleHolder(std::make_shared<SoftminImpl>(options)) {}
};

class Softshrink : public ModuleHolder<SoftshrinkImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit Softshrink(SoftshrinkOptions options = {}, Where where = Where::current())
      : ModuleHolder(std::make_shared<SoftshrinkImpl>(options, where)) {}
};

class Hardshrink : public ModuleHolder<HardshrinkImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit Hardshrink(HardshrinkOptions options = {}) : ModuleHolder(std::make_shared<HardshrinkImpl>(options)) {}
};

class RReLU : public ModuleHolder<RReLUImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit RReLU(RReLUOptions options = {}, Where where = Where::current())
      : ModuleHolder(std::make_shared<RReLUImpl>(options, where)) {}
};

class PReLU : public ModuleHolder<PReLUImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit PReLU(PReLUOptions options = {}, Where where = Where::current())
      : ModuleHolder(std::make_shared<PReLUImpl>(options, where)) {}
};

}  // namespace ember::nn
