// nn::LayerNorm: normalises over the trailing `normalized_shape` dims, then applies an elementwise
// affine transform (weight starts at 1, bias at 0), like torch.nn.LayerNorm. bias = false (PyTorch
// 2.1's option) keeps the weight and has no bias parameter.
#pragma once

#include <optional>

#include "runtime/nn/holder.h"

namespace ember::nn {

struct LayerNormOptions {
  double eps = 1e-5;
  bool elementwise_affine = true;
  bool bias = true;  // only with elementwise_affine
  DType dtype = DType::Float32;
  std::optional<Device> device = std::nullopt;  // empty: the default device
};

class LayerNormImpl : public Module {
 public:
  explicit LayerNormImpl(Dims normalized_shape, LayerNormOptions options = {}, Where where = Where::current());
  Tensor forward(const Tensor& input, Where where = Where::current());
  void reset_parameters();

  const Dims& normalized_shape() const { return normalized_shape_; }

  Tensor weight;  // normalized_shape, undefined without elementwise_affine
  Tensor bias;    // undefined without elementwise_affine or with bias = false

 protected:
  std::string extra_repr() const override;

 private:
  Dims normalized_shape_;
  LayerNormOptions options_;
};

class LayerNorm : public ModuleHolder<LayerNormImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit LayerNorm(Dims normalized_shape, LayerNormOptions options = {}, Where where = Where::current())
      : ModuleHolder(std::make_shared<LayerNormImpl>(normalized_shape, options, where)) {}
  explicit LayerNorm(int64_t features, LayerNormOptions options = {}, Where where = Where::current())
      : LayerNorm(Dims{features}, options, where) {}
};

}  // namespace ember::nn
