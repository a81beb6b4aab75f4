// More pooling layers (torch.nn's MaxUnpool1d/2d/3d and LPPool1d/2d/3d): holders of the arguments of
// nn/functional_pool_more.h, checked where PyTorch checks them (MaxUnpool's sizes when built, the
// rest when they run); extra_repr prints them as torch.nn's modules do.
#pragma once

#include <optional>

#include "runtime/nn/functional_pool_more.h"
#include "runtime/nn/holder.h"

namespace ember::nn {

using functional::LPPoolOptions;
using functional::MaxUnpoolOptions;

// Spatial: 1, 2 or 3 (instantiated in pooling_more.cpp). Like PyTorch's _MaxUnpoolNd, it keeps
// kernel_size, stride (kernel_size when not given) and padding as one value per spatial dim.
template <int Spatial>
class MaxUnpoolImpl : public Module {
 public:
  explicit MaxUnpoolImpl(SpatialDims kernel_size, MaxUnpoolOptions options = {}, Where where = Where::current());
  // input and its max_pool indices -> the unpooled tensor, of the default output size.
  Tensor forward(const Tensor& input, const Tensor& indices, Where where = Where::current());
  // The same with PyTorch's output_size (spatial or spatial + 2 values), see F::max_unpool2d.
  Tensor forward(const Tensor& input, const Tensor& indices, std::optional<Dims> output_size,
                 Where where = Where::current());
  const Dims& kernel_size() const { return kernel_size_; }
  const Dims& stride() const { return stride_; }
  const Dims& padding() const { return padding_; }

 protected:
  std::string extra_repr() const override;

 private:
  Dims kernel_size_, stride_, padding_;
};

template <int Spatial>
class LPPoolImpl : public Module {
 public:
  LPPoolImpl(double norm_type, SpatialDims kernel_size, LPPoolOptions options = {});
  Tensor forward(const Tensor& input, Where where = Where::current());
  double norm_type() const { return norm_type_; }
  const SpatialDims& kernel_size() const { return kernel_size_; }
  const LPPoolOptions& options() const { return options_; }

 protected:
  std::string extra_repr() const override;

 private:
  double norm_type_;
  SpatialDims kernel_size_;
  LPPoolOptions options_;
};

using MaxUnpool1dImpl = MaxUnpoolImpl<1>;
using MaxUnpool2dImpl = MaxUnpoolImpl<2>;
using MaxUnpool3dImpl = MaxUnpoolImpl<3>;
using LPPool1dImpl = LPPoolImpl<1>;
using LPPool2dImpl = LPPoolImpl<2>;
using LPPool3dImpl = LPPoolImpl<3>;

// The holders: nn::MaxUnpool2d unpool(2); unpool(values, indices). nn::LPPool2d pool(2, 3, {.stride = 2}).
template <typename Impl>
class MaxUnpoolHolder : public ModuleHolder<Impl> {
 public:
  using ModuleHolder<Impl>::ModuleHolder;
  explicit MaxUnpoolHolder(SpatialDims kernel_size, MaxUnpoolOptions options = {}, Where where = Where::current())
      : ModuleHolder<Impl>(std::make_shared<Impl>(kernel_size, options, where)) {}
};

template <typename Impl>
class LPPoolHolder : public ModuleHolder<Impl> {
 public:
  using ModuleHolder<Impl>::ModuleHolder;
  LPPoolHolder(double norm_type, SpatialDims kernel_size, LPPoolOptions options = {})
      : ModuleHolder<Impl>(std::make_shared<Impl>(norm_type, kernel_size, options)) {}
};

class MaxUnpool1d : public MaxUnpoolHolder<MaxUnpool1dImpl> {
 public:
  using MaxUnpoolHolder::MaxUnpoolHolder;
};
class MaxUnpool2d : public MaxUnpoolHolder<MaxUnpool2dImpl> {
 public:
  using MaxUnpoolHolder::MaxUnpoolHolder;
};
class MaxUnpool3d : public MaxUnpoolHolder<MaxUnpool3dImpl> {
 public:
  using MaxUnpoolHolder::MaxUnpoolHolder;
};
class LPPool1d : public LPPoolHolder<LPPool1dImpl> {
 public:
  using LPPoolHolder::LPPoolHolder;
};
class LPPool2d : public LPPoolHolder<LPPool2dImpl> {
 public:
  using LPPoolHolder::LPPoolHolder;
};
class LPPool3d : public LPPoolHolder<LPPool3dImpl> {
 public:
  using LPPoolHolder::LPPoolHolder;
};

}  // namespace ember::nn
