// nn::Linear: y = x W^T + b, initialised like PyTorch: W and b ~ U(-1/sqrt(in), 1/sqrt(in)); and
// nn::Identity.
#pragma once

#include <optional>

#include "runtime/nn/holder.h"
#include "runtime/random/generator.h"

namespace ember::nn {

struct LinearOptions {
  bool bias = true;
  DType dtype = DType::Float32;
  std::optional<Device> device = std::nullopt;    // empty: the default device
  Generator* generator = nullptr;  // initialisation draws; null: the device's default generator
};

class LinearImpl : public Module {
 public:
  // `where`: the user's line, which errors in the constructor name (the holder forwards its own).
  LinearImpl(int64_t in_features, int64_t out_features, LinearOptions options = {}, Where where = Where::current());

  // input [*, in_features] -> [*, out_features]
  Tensor forward(const Tensor& input, Where where = Where::current());
  // Redraws weight and bias (kaiming_uniform_ with a = sqrt(5), then the bias bound 1/sqrt(in)).
  void reset_parameters(Generator* generator = nullptr);

  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }

  Tensor weight;  // [out_features, in_features]
  Tensor bias;    // [out_features], undefined without bias

 protected:
  std::string extra_repr() const override;

 private:
  int64_t in_features_;
  int64_t out_features_;
};

class Linear : public ModuleHolder<LinearImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  Linear(int64_t in_features, int64_t out_features, LinearOptions options = {}, Where where = Where::current())
      : ModuleHolder(std::make_shared<LinearImpl>(in_features, out_features, options, where)) {}
};

// nn::Identity: returns its input itself (the same tensor, no copy), a placeholder that keeps a
// model's structure when a layer is switched off (torch.nn.Identity, which also sits in linear.py).
class IdentityImpl : public Module {
 public:
  IdentityImpl() : Module("Identity") {}
  Tensor forward(const Tensor& input, Where where = Where::current()) { return input; }
};

class Identity : public ModuleHolder<IdentityImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  Identity() : ModuleHolder(std::make_shared<IdentityImpl>()) {}
};

}  // namespace ember::nn
