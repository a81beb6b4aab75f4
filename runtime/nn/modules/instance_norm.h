// nn::InstanceNorm1d, InstanceNorm2d and InstanceNorm3d: torch.nn's, over [N, C, L] or [C, L] (1d),
// [N, C, H, W] or [C, H, W] (2d), [N, C, D, H, W] or [C, D, H, W] (3d). Each sample's channel is
// normalised over its spatial dims (F::instance_norm). Without running estimates (the default)
// the input's statistics are used in eval mode too; with track_running_stats, training blends the
// batch mean of the per-instance statistics into them and eval uses them.
#pragma once

#include <concepts>
#include <optional>

#include "runtime/nn/holder.h"
#include "runtime/nn/modules/norm_base.h"

namespace ember::nn {

// libtorch's InstanceNormOptions, with PyTorch's defaults (no affine, no running estimates).
struct InstanceNormOptions {
  int64_t num_features = 0;  // C
  double eps = 1e-5;
  std::optional<double> momentum = 0.1;  // nullopt (PyTorch's None) blends with 0: the estimates stay
  bool affine = false;                   // learnable weight (starts at 1) and bias (at 0)
  bool track_running_stats = false;
  DType dtype = DType::Float32;
  std::optional<Device> device = std::nullopt;  // empty: the default device
};
using InstanceNorm1dOptions = InstanceNormOptions;
using InstanceNorm2dOptions = InstanceNormOptions;
using InstanceNorm3dOptions = InstanceNormOptions;

// The layer behind InstanceNorm1d, 2d and 3d, which differ only in their number of spatial dims.
class InstanceNormImpl : public NormBaseImpl {
 public:
  // weight, bias, the running estimates and their resets: NormBaseImpl's. num_batches_tracked is
  // kept for state_dict compatibility with PyTorch's _NormBase; instance norm never counts.
  Tensor forward(const Tensor& input, Where where = Where::current());

  const InstanceNormOptions& options() const { return options_; }

 protected:
  InstanceNormImpl(const char* name, int spatial_dims, InstanceNormOptions options, Where where);
  std::string extra_repr() const override;

 private:
  InstanceNormOptions options_;
  int spatial_dims_;
};

class InstanceNorm1dImpl : public InstanceNormImpl {
 public:
  explicit InstanceNorm1dImpl(InstanceNormOptions options, Where where = Where::current())
      : InstanceNormImpl("InstanceNorm1d", 1, options, where) {}
  explicit InstanceNorm1dImpl(int64_t num_features, Where where = Where::current())
      : InstanceNorm1dImpl(InstanceNormOptions{.num_features = num_features}, where) {}
};
class InstanceNorm2dImpl : public InstanceNormImpl {
 public:
  explicit InstanceNorm2dImpl(InstanceNormOptions options, Where where = Where::current())
      : InstanceNormImpl("InstanceNorm2d", 2, options, where) {}
  explicit InstanceNorm2dImpl(int64_t num_features, Where where = Where::current())
      : InstanceNorm2dImpl(InstanceNormOptions{.num_features = num_features}, where) {}
};
class InstanceNorm3dImpl : public InstanceNormImpl {
 public:
  explicit InstanceNorm3dImpl(InstanceNormOptions options, Where where = Where::current())
      : InstanceNormImpl("InstanceNorm3d", 3, options, where) {}
  explicit InstanceNorm3dImpl(int64_t num_features, Where where = Where::current())
      : InstanceNorm3dImpl(InstanceNormOptions{.num_features = num_features}, where) {}
};

template <typename Impl>
class InstanceNormHolder : public ModuleHolder<Impl> {
 public:
  using ModuleHolder<Impl>::ModuleHolder;
  // A template, so that InstanceNorm1d(0) is 0 features rather than an ambiguous null holder.
  template <std::integral Count>
  explicit InstanceNormHolder(Count num_features, Where where = Where::current())
      : ModuleHolder<Impl>(std::make_shared<Impl>(static_cast<int64_t>(num_features), where)) {}
  explicit InstanceNormHolder(InstanceNormOptions options, Where where = Where::current())
      : ModuleHolder<Impl>(std::make_shared<Impl>(options, where)) {}
};
using InstanceNorm1d = InstanceNormHolder<InstanceNorm1dImpl>;
using InstanceNorm2d = InstanceNormHolder<InstanceNorm2dImpl>;
using InstanceNorm3d = InstanceNormHolder<InstanceNorm3dImpl>;

}  // namespace ember::nn
