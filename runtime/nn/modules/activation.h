// Activation modules: ReLU, GELU, SiLU, Tanh, Sigmoid, LeakyReLU, ELU, Softplus, Softmax,
// LogSoftmax. Stateless wrappers of the ops of the same name, so they can sit in a Sequential.
#pragma once

#include <concepts>

#include "runtime/nn/holder.h"

namespace ember::nn {

class ReLUImpl : public Module {
 public:
  ReLUImpl() : Module("ReLU") {}
  Tensor forward(const Tensor& input, Where where = Where::current());
};

// approximate = "tanh" in PyTorch: the tanh approximation instead of the exact erf form.
struct GELUOptions {
  bool tanh_approximation = false;
};

class GELUImpl : public Module {
 public:
  explicit GELUImpl(GELUOptions options = {}) : Module("GELU"), options_(options) {}
  Tensor forward(const Tensor& input, Where where = Where::current());

 protected:
  std::string extra_repr() const override;

 private:
  GELUOptions options_;
};

class SiLUImpl : public Module {
 public:
  SiLUImpl() : Module("SiLU") {}
  Tensor forward(const Tensor& input, Where where = Where::current());
};

class TanhImpl : public Module {
 public:
  TanhImpl() : Module("Tanh") {}
  Tensor forward(const Tensor& input, Where where = Where::current());
};

class SigmoidImpl : public Module {
 public:
  SigmoidImpl() : Module("Sigmoid") {}
  Tensor forward(const Tensor& input, Where where = Where::current());
};

// PyTorch's defaults. PyTorch's inplace=True forms have no counterpart: ember has no in-place
// activations, so these print without `, inplace=False` as PyTorch's defaults do anyway.
struct LeakyReLUOptions {
  double negative_slope = 0.01;
};
struct ELUOptions {
  double alpha = 1.0;
};
struct SoftplusOptions {
  double beta = 1.0;
  double threshold = 20.0;
};

class LeakyReLUImpl : public Module {
 public:
  explicit LeakyReLUImpl(LeakyReLUOptions options = {}) : Module("LeakyReLU"), options_(options) {}
  Tensor forward(const Tensor& input, Where where = Where::current());

 protected:
  std::string extra_repr() const override;

 private:
  LeakyReLUOptions options_;
};

class ELUImpl : public Module {
 public:
  explicit ELUImpl(ELUOptions options = {}) : Module("ELU"), options_(options) {}
  Tensor forward(const Tensor& input, Where where = Where::current());

 protected:
  std::string extra_repr() const override;

 private:
  ELUOptions options_;
};

class SoftplusImpl : public Module {
 public:
  explicit SoftplusImpl(SoftplusOptions options = {}) : Module("Softplus"), options_(options) {}
  Tensor forward(const Tensor& input, Where where = Where::current());

 protected:
  std::string extra_repr() const override;

 private:
  SoftplusOptions options_;
};

// Softmax and LogSoftmax along `dim` (negative counts from the end). libtorch's options; like
// libtorch's (and unlike Python's deprecated implicit dim) the dim must be given.
struct SoftmaxOptions {
  int64_t dim;
};
struct LogSoftmaxOptions {
  int64_t dim;
};

class SoftmaxImpl : public Module {
 public:
  explicit SoftmaxImpl(SoftmaxOptions options) : Module("Softmax"), options_(options) {}
  explicit SoftmaxImpl(int64_t dim) : SoftmaxImpl(SoftmaxOptions{.dim = dim}) {}
  Tensor forward(const Tensor& input, Where where = Where::current());
  const SoftmaxOptions& options() const { return options_; }

 protected:
  std::string extra_repr() const override;

 private:
  SoftmaxOptions options_;
};

class LogSoftmaxImpl : public Module {
 public:
  explicit LogSoftmaxImpl(LogSoftmaxOptions options) : Module("LogSoftmax"), options_(options) {}
  explicit LogSoftmaxImpl(int64_t dim) : LogSoftmaxImpl(LogSoftmaxOptions{.dim = dim}) {}
  Tensor forward(const Tensor& input, Where where = Where::current());
  const LogSoftmaxOptions& options() const { return options_; }

 protected:
  std::string extra_repr() const override;

 private:
  LogSoftmaxOptions options_;
};

class ReLU : public ModuleHolder<ReLUImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  ReLU() : ModuleHolder(std::make_shared<ReLUImpl>()) {}
};

class GELU : public ModuleHolder<GELUImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit GELU(GELUOptions options = {}) : ModuleHolder(std::make_shared<GELUImpl>(options)) {}
};

class SiLU : public ModuleHolder<SiLUImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  SiLU() : ModuleHolder(std::make_shared<SiLUImpl>()) {}
};

class Tanh : public ModuleHolder<TanhImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  Tanh() : ModuleHolder(std::make_shared<TanhImpl>()) {}
};

class Sigmoid : public ModuleHolder<SigmoidImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  Sigmoid() : ModuleHolder(std::make_shared<SigmoidImpl>()) {}
};

class LeakyReLU : public ModuleHolder<LeakyReLUImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit LeakyReLU(LeakyReLUOptions options = {}) : ModuleHolder(std::make_shared<LeakyReLUImpl>(options)) {}
};

class ELU : public ModuleHolder<ELUImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit ELU(ELUOptions options = {}) : ModuleHolder(std::make_shared<ELUImpl>(options)) {}
};

class Softplus : public ModuleHolder<SoftplusImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit Softplus(SoftplusOptions options = {}) : ModuleHolder(std::make_shared<SoftplusImpl>(options)) {}
};

class Softmax : public ModuleHolder<SoftmaxImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  // A template, so that Softmax(0) is the dim 0 rather than an ambiguous null holder.
  template <std::integral Dim>
  explicit Softmax(Dim dim) : ModuleHolder(std::make_shared<SoftmaxImpl>(static_cast<int64_t>(dim))) {}
  explicit Softmax(SoftmaxOptions options) : ModuleHolder(std::make_shared<SoftmaxImpl>(options)) {}
};

class LogSoftmax : public ModuleHolder<LogSoftmaxImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  // A template, so that LogSoftmax(0) is the dim 0 rather than an ambiguous null holder.
  template <std::integral Dim>
  explicit LogSoftmax(Dim dim) : ModuleHolder(std::make_shared<LogSoftmaxImpl>(static_cast<int64_t>(dim))) {}
  explicit LogSoftmax(LogSoftmaxOptions options) : ModuleHolder(std::make_shared<LogSoftmaxImpl>(options)) {}
};

}  // namespace ember::nn
