// nn::BatchNorm1d, BatchNorm2d and BatchNorm3d: torch.nn's, over inputs [N, C] or [N, C, L]
// (1d), [N, C, H, W] (2d) and [N, C, D, H, W] (3d). Each channel c is normalised,
// y = (x - mean_c) / sqrt(var_c + eps) * weight_c + bias_c, with the batch's mean and biased
// variance (over every dim but C) while training, and the running estimates in eval mode.
// Training also updates the estimates (under no-grad), as PyTorch does:
//   running_mean = m * mean + (1 - m) * running_mean
//   running_var  = m * unbiased_var + (1 - m) * running_var      (unbiased: var * n / (n - 1))
// with m = momentum, or 1 / num_batches_tracked when momentum is nullopt (a cumulative average).
// A composite of registry ops (mean, var, rsqrt, sub, mul, add, copy_), so autograd, CUDA,
// autocast and the compile stage come with it; compiled, the estimates are state written back.
#pragma once

#include <concepts>
#include <initializer_list>
#include <optional>
#include <vector>

#include "runtime/nn/holder.h"
#include "runtime/nn/modules/norm_base.h"

namespace ember::nn {

// libtorch's BatchNormOptions, with PyTorch's defaults.
struct BatchNormOptions {
  int64_t num_features = 0;  // C
  double eps = 1e-5;
  std::optional<double> momentum = 0.1;  // nullopt: the cumulative moving average (PyTorch's None)
  bool affine = true;                    // learnable weight (starts at 1) and bias (at 0)
  // false: no running estimates; the batch's statistics are used in eval mode too.
  bool track_running_stats = true;
  DType dtype = DType::Float32;
  std::optional<Device> device = std::nullopt;  // empty: the default device
};
using BatchNorm1dOptions = BatchNormOptions;
using BatchNorm2dOptions = BatchNormOptions;
using BatchNorm3dOptions = BatchNormOptions;

// The layer behind BatchNorm1d, 2d and 3d, which differ only in the input ranks they take.
class BatchNormImpl : public NormBaseImpl {
 public:
  // A float16 or bfloat16 input is normalised in float32 and returned in its own dtype, rounded
  // once, with float32 or 16-bit parameters alike (PyTorch's kernels keep the statistics in
  // float32); other dtypes must match the module's. With eps = 0, a channel whose batch variance is
  // 0 normalises to 0, as PyTorch's, not NaN.
  // weight, bias, the running estimates and their resets: NormBaseImpl's.
  Tensor forward(const Tensor& input, Where where = Where::current());

  const BatchNormOptions& options() const { return options_; }
  // Sets the momentum (nullopt: the cumulative average), as assigning PyTorch's module.momentum
  // does; optim::update_bn sets it for its pass. A compiled training forward guards the value it
  // used, so a change recompiles.
  void set_momentum(std::optional<double> momentum) { options_.momentum = momentum; }

 protected:
  // `ranks`: the input ranks the layer takes (1d: 2 or 3; 2d: 4; 3d: 5).
  BatchNormImpl(const char* name, std::initializer_list<int> ranks, BatchNormOptions options, Where where);
  std::string extra_repr() const override;

 private:
  void check_input(const Tensor& input, bool batch_statistics) const;
  // Blends the batch's statistics into the running ones, in place and under no-grad.
  void update_running_stats(const Tensor& batch_mean, const Tensor& batch_var, int64_t count);

  BatchNormOptions options_;
  std::vector<int> ranks_;
};

class BatchNorm1dImpl : public BatchNormImpl {
 public:
  explicit BatchNorm1dImpl(BatchNormOptions options, Where where = Where::current())
      : BatchNormImpl("BatchNorm1d", {2, 3}, options, where) {}
  explicit BatchNorm1dImpl(int64_t num_features, Where where = Where::current())
      : BatchNorm1dImpl(BatchNormOptions{.num_features = num_features}, where) {}
};
class BatchNorm2dImpl : public BatchNormImpl {
 public:
  explicit BatchNorm2dImpl(BatchNormOptions options, Where where = Where::current())
      : BatchNormImpl("BatchNorm2d", {4}, options, where) {}
  explicit BatchNorm2dImpl(int64_t num_features, Where where = Where::current())
      : BatchNorm2dImpl(BatchNormOptions{.num_features = num_features}, where) {}
};
class BatchNorm3dImpl : public BatchNormImpl {
 public:
  explicit BatchNorm3dImpl(BatchNormOptions options, Where where = Where::current())
      : BatchNormImpl("BatchNorm3d", {5}, options, where) {}
  explicit BatchNorm3dImpl(int64_t num_features, Where where = Where::current())
      : BatchNorm3dImpl(BatchNormOptions{.num_features = num_features}, where) {}
};

template <typename Impl>
class BatchNormHolder : public ModuleHolder<Impl> {
 public:
  using ModuleHolder<Impl>::ModuleHolder;
  // A template, so that BatchNorm1d(0) is 0 features rather than an ambiguous null holder.
  template <std::integral Count>
  explicit BatchNormHolder(Count num_features, Where where = Where::current())
      : ModuleHolder<Impl>(std::make_shared<Impl>(static_cast<int64_t>(num_features), where)) {}
  explicit BatchNormHolder(BatchNormOptions options, Where where = Where::current())
      : ModuleHolder<Impl>(std::make_shared<Impl>(options, where)) {}
};
using BatchNorm1d = BatchNormHolder<BatchNorm1dImpl>;
using BatchNorm2d = BatchNormHolder<BatchNorm2dImpl>;
using BatchNorm3d = BatchNormHolder<BatchNorm3dImpl>;

}  // namespace ember::nn
