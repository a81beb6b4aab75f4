// nn::GroupNorm and nn::RMSNorm (torch.nn's, beside LayerNorm in PyTorch's normalization.py): they
// hold PyTorch's parameters (weight 1, bias 0) and call group_norm and rms_norm
// (runtime/functional.h; runtime/nn/modules/normalization.cpp).
#pragma once

#include <optional>

#include "runtime/nn/holder.h"

namespace ember::nn {

struct GroupNormOptions {
  double eps = 1e-5;
  bool affine = true;  // weight and bias [num_channels]
  DType dtype = DType::Float32;
  std::optional<Device> device = std::nullopt;  // empty: the default device
};

class GroupNormImpl : public Module {
 public:
  GroupNormImpl(int64_t num_groups, int64_t num_channels, GroupNormOptions options = {},
                Where where = Where::current());
  // input [N, C, *] -> the same shape; C is num_channels with affine parameters, else any multiple of
  // num_groups (PyTorch's forward checks nothing more than group_norm).
  Tensor forward(const Tensor& input, Where where = Where::current());
  void reset_parameters();  // weight 1, bias 0

  int64_t num_groups() const { return num_groups_; }
  int64_t num_channels() const { return num_channels_; }

  Tensor weight;  // [num_channels], undefined without affine
  Tensor bias;

 protected:
  std::string extra_repr() const override;

 private:
  int64_t num_groups_, num_channels_;
  GroupNormOptions options_;
};

class GroupNorm : public ModuleHolder<GroupNormImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  GroupNorm(int64_t num_groups, int64_t num_channels, GroupNormOptions options = {}, Where where = Where::current())
      : ModuleHolder(std::make_shared<GroupNormImpl>(num_groups, num_channels, options, where)) {}
};

struct RMSNormOptions {
  std::optional<double> eps = std::nullopt;  // empty: the computing dtype's machine epsilon
  bool elementwise_affine = true;            // a weight of normalized_shape
  DType dtype = DType::Float32;
  std::optional<Device> device = std::nullopt;
};

class RMSNormImpl : public Module {
 public:
  explicit RMSNormImpl(Dims normalized_shape, RMSNormOptions options = {}, Where where = Where::current());
  Tensor forward(const Tensor& input, Where where = Where::current());
  void reset_parameters();  // weight 1

  const Dims& normalized_shape() const { return normalized_shape_; }

  Tensor weight;  // normalized_shape, undefined without elementwise_affine

 protected:
  std::string extra_repr() const override;

 private:
  Dims normalized_shape_;
  RMSNormOptions options_;
};

class RMSNorm : public ModuleHolder<RMSNormImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit RMSNorm(Dims normalized_shape, RMSNormOptions options = {}, Where where = Where::current())
      : ModuleHolder(std::make_shared<RMSNormImpl>(normalized_shape, options, where)) {}
  explicit RMSNorm(int64_t features, RMSNormOptions options = {}, Where where = Where::current())
      : RMSNorm(Dims{features}, options, where) {}
};

}  // namespace ember::nn
