// nn::BatchNorm1d: torch.nn.BatchNorm1d over inputs [N, C] or [N, C, L]. Each channel c is
// normalised, y = (x - mean_c) / sqrt(var_c + eps) * weight_c + bias_c, with the batch's mean and
// biased variance (over N, or N and L) while training, and the running estimates in eval mode.
// Training also updates the estimates (under no-grad), as PyTorch does:
//   running_mean = m * mean + (1 - m) * running_mean
//   running_var  = m * unbiased_var + (1 - m) * running_var      (unbiased: var * n / (n - 1))
// with m = momentum, or 1 / num_batches_tracked when momentum is nullopt (a cumulative average).
// A composite of registry ops (mean, var, rsqrt, sub, mul, add, copy_), so autograd, CUDA,
// autocast and the compile stage come with it; compiled, the estimates are state written back.
#pragma once

#include <concepts>
#include <optional>

#include "runtime/nn/holder.h"

namespace ember::nn {

// libtorch's BatchNormOptions, with PyTorch's defaults.
struct BatchNorm1dOptions {
  int64_t num_features = 0;  // C
  double eps = 1e-5;
  std::optional<double> momentum = 0.1;  // nullopt: the cumulative moving average (PyTorch's None)
  bool affine = true;                    // learnable weight (starts at 1) and bias (at 0)
  // false: no running estimates; the batch's statistics are used in eval mode too.
  bool track_running_stats = true;
  DType dtype = DType::Float32;
  std::optional<Device> device = std::nullopt;  // empty: the default device
};

class BatchNorm1dImpl : public Module {
 public:
  explicit BatchNorm1dImpl(BatchNorm1dOptions options, Where where = Where::current());
  explicit BatchNorm1dImpl(int64_t num_features, Where where = Where::current())
      : BatchNorm1dImpl(BatchNorm1dOptions{.num_features = num_features}, where) {}
  // A float16 or bfloat16 input with float32 parameters is normalised in float32 and returned in
  // its own dtype (PyTorch's mixed batch norm); other dtypes must match the module's.
  Tensor forward(const Tensor& input, Where where = Where::current());
  // running_mean to 0, running_var to 1, num_batches_tracked to 0.
  void reset_running_stats();
  // reset_running_stats(), and weight to 1, bias to 0.
  void reset_parameters();

  const BatchNorm1dOptions& options() const { return options_; }

  Tensor weight;  // [C] parameters, undefined without affine
  Tensor bias;
  Tensor running_mean;         // [C] buffers, undefined without track_running_stats
  Tensor running_var;
  Tensor num_batches_tracked;  // 0-d int64 buffer: training forwards so far

 protected:
  std::string extra_repr() const override;

 private:
  void check_input(const Tensor& input, bool batch_statistics) const;
  // Blends the batch's statistics into the running ones, in place and under no-grad.
  void update_running_stats(const Tensor& batch_mean, const Tensor& batch_var, int64_t count);

  BatchNorm1dOptions options_;
};

class BatchNorm1d : public ModuleHolder<BatchNorm1dImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  // A template, so that BatchNorm1d(0) is 0 features rather than an ambiguous null holder.
  template <std::integral Count>
  explicit BatchNorm1d(Count num_features, Where where = Where::current())
      : ModuleHolder(std::make_shared<BatchNorm1dImpl>(static_cast<int64_t>(num_features), where)) {}
  explicit BatchNorm1d(BatchNorm1dOptions options, Where where = Where::current())
      : ModuleHolder(std::make_shared<BatchNorm1dImpl>(options, where)) {}
};

}  // namespace ember::nn
