// nn::Bilinear: y = x1^T A x2 + b per output feature (torch.nn.Bilinear), weight
// [out, in1, in2] and bias [out] initialised, as PyTorch's, from U(-1/sqrt(in1), 1/sqrt(in1)).
#pragma once

#include <optional>

#include "runtime/nn/holder.h"
#include "runtime/random/generator.h"

namespace ember::nn {

struct BilinearOptions {
  bool bias = true;
  DType dtype = DType::Float32;
  std::optional<Device> device = std::nullopt;  // empty: the default device
  Generator* generator = nullptr;               // initialisation draws; null: the device's default generator
};

class BilinearImpl : public Module {
 public:
  BilinearImpl(int64_t in1_features, int64_t in2_features, int64_t out_features, BilinearOptions options = {},
               Where where = Where::current());
  // input1 [*, in1_features], input2 [*, in2_features] -> [*, out_features]
  Tensor forward(const Tensor& input1, const Tensor& input2, Where where = Where::current());
  // Redraws weight and bias from U(-1/sqrt(in1_features), 1/sqrt(in1_features)).
  void reset_parameters(Generator* generator = nullptr);

  int64_t in1_features() const { return in1_features_; }
  int64_t in2_features() const { return in2_features_; }
  int64_t out_features() const { return out_features_; }

  Tensor weight;  // [out_features, in1_features, in2_features]
  Tensor bias;    // [out_features], undefined without bias

 protected:
  std::string extra_repr() const override;

 private:
  int64_t in1_features_;
  int64_t in2_features_;
  int64_t out_features_;
};

class Bilinear : public ModuleHolder<BilinearImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  Bilinear(int64_t in1_features, int64_t in2_features, int64_t out_features, BilinearOptions options = {},
           Where where = Where::current())
      : ModuleHolder(std::make_shared<BilinearImpl>(in1_features, in2_features, out_features, options, where)) {}
};

}  // namespace ember::nn
