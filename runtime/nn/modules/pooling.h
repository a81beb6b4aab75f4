// Pooling layers (torch.nn's MaxPool1d/2d/3d, AvgPool1d/2d/3d, AdaptiveAvgPool1d/2d/3d,
// AdaptiveMaxPool1d/2d/3d): holders of the functional pools' arguments (runtime/functional_pool.h),
// checked when they run. PyTorch's return_indices is a second method here, forward_with_indices,
// so that forward always returns one tensor.
#pragma once

#include <tuple>

#include "runtime/functional_pool.h"
#include "runtime/nn/holder.h"

namespace ember::nn {

// Spatial: 1, 2 or 3 (instantiated in pooling.cpp).
template <int Spatial>
class MaxPoolImpl : public Module {
 public:
  explicit MaxPoolImpl(SpatialDims kernel_size, MaxPoolOptions options = {});
  Tensor forward(const Tensor& input, Where where = Where::current());
  // (values, int64 indices within each input plane): PyTorch's return_indices=True.
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input, Where where = Where::current());
  const SpatialDims& kernel_size() const { return kernel_size_; }
  const MaxPoolOptions& options() const { return options_; }

 protected:
  std::string extra_repr() const override;

 private:
  SpatialDims kernel_size_;
  MaxPoolOptions options_;
};

template <int Spatial>
class AvgPoolImpl : public Module {
 public:
  explicit AvgPoolImpl(SpatialDims kernel_size, AvgPoolOptions options = {});
  Tensor forward(const Tensor& input, Where where = Where::current());
  const SpatialDims& kernel_size() const { return kernel_size_; }
  const AvgPoolOptions& options() const { return options_; }

 protected:
  std::string extra_repr() const override;

 private:
  SpatialDims kernel_size_;
  AvgPoolOptions options_;
};

template <int Spatial>
class AdaptiveAvgPoolImpl : public Module {
 public:
  explicit AdaptiveAvgPoolImpl(SpatialDims output_size);
  Tensor forward(const Tensor& input, Where where = Where::current());
  const SpatialDims& output_size() const { return output_size_; }

 protected:
  std::string extra_repr() const override;

 private:
  SpatialDims output_size_;
};

template <int Spatial>
class AdaptiveMaxPoolImpl : public Module {
 public:
  explicit AdaptiveMaxPoolImpl(SpatialDims output_size);
  Tensor forward(const Tensor& input, Where where = Where::current());
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input, Where where = Where::current());
  const SpatialDims& output_size() const { return output_size_; }

 protected:
  std::string extra_repr() const override;

 private:
  SpatialDims output_size_;
};

using MaxPool1dImpl = MaxPoolImpl<1>;
using MaxPool2dImpl = MaxPoolImpl<2>;
using MaxPool3dImpl = MaxPoolImpl<3>;
using AvgPool1dImpl = AvgPoolImpl<1>;
using AvgPool2dImpl = AvgPoolImpl<2>;
using AvgPool3dImpl = AvgPoolImpl<3>;
using AdaptiveAvgPool1dImpl = AdaptiveAvgPoolImpl<1>;
using AdaptiveAvgPool2dImpl = AdaptiveAvgPoolImpl<2>;
using AdaptiveAvgPool3dImpl = AdaptiveAvgPoolImpl<3>;
using AdaptiveMaxPool1dImpl = AdaptiveMaxPoolImpl<1>;
using AdaptiveMaxPool2dImpl = AdaptiveMaxPoolImpl<2>;
using AdaptiveMaxPool3dImpl = AdaptiveMaxPoolImpl<3>;

// The holders: nn::MaxPool2d pool(3, {.stride = 2}); pool(x).
template <typename Impl, typename Options>
class PoolHolder : public ModuleHolder<Impl> {
 public:
  using ModuleHolder<Impl>::ModuleHolder;
  explicit PoolHolder(SpatialDims kernel_size, Options options = {})
      : ModuleHolder<Impl>(std::make_shared<Impl>(kernel_size, options)) {}
};

template <typename Impl>
class AdaptivePoolHolder : public ModuleHolder<Impl> {
 public:
  using ModuleHolder<Impl>::ModuleHolder;
  explicit AdaptivePoolHolder(SpatialDims output_size) : ModuleHolder<Impl>(std::make_shared<Impl>(output_size)) {}
};

class MaxPool1d : public PoolHolder<MaxPool1dImpl, MaxPoolOptions> {
 public:
  using PoolHolder::PoolHolder;
};
class MaxPool2d : public PoolHolder<MaxPool2dImpl, MaxPoolOptions> {
 public:
  using PoolHolder::PoolHolder;
};
class MaxPool3d : public PoolHolder<MaxPool3dImpl, MaxPoolOptions> {
 public:
  using PoolHolder::PoolHolder;
};
class AvgPool1d : public PoolHolder<AvgPool1dImpl, AvgPoolOptions> {
 public:
  using PoolHolder::PoolHolder;
};
class AvgPool2d : public PoolHolder<AvgPool2dImpl, AvgPoolOptions> {
 public:
  using PoolHolder::PoolHolder;
};
class AvgPool3d : public PoolHolder<AvgPool3dImpl, AvgPoolOptions> {
 public:
  using PoolHolder::PoolHolder;
};
class AdaptiveAvgPool1d : public AdaptivePoolHolder<AdaptiveAvgPool1dImpl> {
 public:
  using AdaptivePoolHolder::AdaptivePoolHolder;
};
class AdaptiveAvgPool2d : public AdaptivePoolHolder<AdaptiveAvgPool2dImpl> {
 public:
  using AdaptivePoolHolder::AdaptivePoolHolder;
};
class AdaptiveAvgPool3d : public AdaptivePoolHolder<AdaptiveAvgPool3dImpl> {
 public:
  using AdaptivePoolHolder::AdaptivePoolHolder;
};
class AdaptiveMaxPool1d : public AdaptivePoolHolder<AdaptiveMaxPool1dImpl> {
 public:
  using AdaptivePoolHolder::AdaptivePoolHolder;
};
class AdaptiveMaxPool2d : public AdaptivePoolHolder<AdaptiveMaxPool2dImpl> {
 public:
  using AdaptivePoolHolder::AdaptivePoolHolder;
};
class AdaptiveMaxPool3d : public AdaptivePoolHolder<AdaptiveMaxPool3dImpl> {
 public:
  using AdaptivePoolHolder::AdaptivePoolHolder;
};

}  // namespace ember::nn
