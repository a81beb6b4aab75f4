// nn::BatchNorm1d/2d/3d: the checks, the normalisation and the update of the running estimates.
#include "runtime/nn/modules/batch_norm.h"

#include <algorithm>
#include <string>

#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/nn/python_repr.h"
#include "runtime/nn/training_guard.h"

namespace ember::nn {

namespace {

bool is_16_bit_float(DType dtype) { return dtype == DType::Float16 || dtype == DType::BFloat16; }

// A [C] tensor shaped to broadcast along dim 1 of an input of `input_dim` dims: [C, 1, ...].
Tensor per_channel(const Tensor& values, int64_t input_dim) {
  Dims shape = Dims::filled(static_cast<int>(input_dim) - 1, 1);
  shape[0] = values.size(0);
  return values.reshape(shape);
}

// How many values each channel's statistics are taken over: the product of every dim but C.
int64_t values_per_channel(const Tensor& input) {
  int64_t count = 1;
  for (int d = 0; d < input.dim(); ++d)
    if (d != 1) count *= input.sizes()[d];
  return count;
}

// "2D or 3D", "4D": PyTorch's words for the ranks a layer takes.
std::string ranks_text(const std::vector<int>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size(); ++i) text += fmt::format("{}{}D", i == 0 ? "" : " or ", ranks[i]);
  return text;
}

// 1 / sqrt(var + eps) of the batch's variance as PyTorch's InvStd takes it: 0 where var and eps are
// both 0, so a constant channel normalises to 0 rather than 0 * inf = NaN (the rsqrt reads 1
// there, so its gradient stays finite too). F.batch_norm (functional_batch_norm.cpp) does the same.
Tensor batch_inverse_std(const Tensor& var, double eps) {
  if (eps != 0.0) return rsqrt(var + eps);
  const Tensor constant = eq(var, zeros_like(var));
  return where(constant, zeros_like(var), rsqrt(where(constant, ones_like(var), var)));
}

}  // namespace

BatchNormImpl::BatchNormImpl(const char* name, std::initializer_list<int> ranks, BatchNormOptions options, Where where)
    : NormBaseImpl(name, state_options(options), where), options_(options), ranks_(ranks) {}

void BatchNormImpl::check_input(const Tensor& input, bool batch_statistics) const {
  check(input.defined(), "{}: the input is an undefined tensor", name());
  check(std::find(ranks_.begin(), ranks_.end(), input.dim()) != ranks_.end(),
        "{}: expected {} input (got {}D input of shape {})", name(), ranks_text(ranks_), input.dim(), input.sizes());
  // PyTorch says "running_mean should contain 4 elements not 3"; this names the input's dim instead.
  check(input.sizes()[1] == options_.num_features,
        "{}: expected input with {} channels (num_features) in dim 1, got {} (input shape {})", name(),
        options_.num_features, input.sizes()[1], input.sizes());
  check(input.is_floating_point(), "{}: expected a floating-point input, got dtype {}", name(), input.dtype());
  const Tensor& own = weight.defined() ? weight : running_mean;
  if (own.defined()) {
    // Checked here, before a training forward counts the batch: the update would throw midway.
    check(input.device() == own.device(),
          "{}: input on {} but the module's parameters and buffers are on {} (move one with to())", name(),
          input.device(), own.device());
    check(input.dtype() == own.dtype() || (is_16_bit_float(input.dtype()) && own.dtype() == kFloat32),
          "{}: input of dtype {} does not match the module's dtype {} (only a float16 or bfloat16 input "
          "may meet float32 parameters; convert one with to())",
          name(), input.dtype(), own.dtype());
  }
  // One value per channel has no variance to normalise by (PyTorch's _verify_batch_size).
  check(!batch_statistics || values_per_channel(input) != 1,
        "{}: Expected more than 1 value per channel when training, got input size {}", name(), input.sizes());
}

Tensor BatchNormImpl::forward(const Tensor& input, Where where) {
  CallSiteScope site(where);
  // The flag chooses the statistics only when there are running ones; only then is it guarded.
  const bool training = options_.track_running_stats ? training_for_forward(*this) : is_training();
  const bool batch_statistics = training || !options_.track_running_stats;
  check_input(input, batch_statistics);
  // A float16 or bfloat16 input is normalised in float32 and rounded once, with float32 or 16-bit
  // parameters alike, as PyTorch's kernels accumulate and transform in float32.
  const bool upcast = is_16_bit_float(input.dtype());
  const Tensor x = upcast ? input.to(DType::Float32) : input;
  const int64_t dim = x.dim();
  Tensor channel_mean = running_mean;
  Tensor channel_var = running_var;
  if (batch_statistics) {
    Dims over = {0};
    for (int d = 2; d < dim; ++d) over.push_back(d);
    channel_mean = mean(x, over);
    channel_var = var(x, over, /*correction=*/0);
    if (training && options_.track_running_stats)
      update_running_stats(channel_mean, channel_var, values_per_channel(x));
  }
  // The running variance is read as it is, as PyTorch's eval (inf for a 0 with eps = 0).
  const Tensor inverse_std =
      batch_statistics ? batch_inverse_std(channel_var, options_.eps) : rsqrt(channel_var + options_.eps);
  Tensor y = (x - per_channel(channel_mean, dim)) * per_channel(inverse_std, dim);
  if (weight.defined()) y = y * per_channel(weight, dim) + per_channel(bias, dim);
  return upcast ? y.to(input.dtype()) : y;
}

void BatchNormImpl::update_running_stats(const Tensor& batch_mean, const Tensor& batch_var, int64_t count) {
  NoGradGuard no_grad;
  if (dispatch_mode_active()) [[unlikely]] {
    // A compiled step bakes the momentum in (or the cumulative form): one set since (set_momentum,
    // update_bn) must recompile rather than replay the old blend.
    const std::string value = options_.momentum ? python_float(*options_.momentum) : "None";
    guard_host_state(fmt::format("{}.momentum == {}", name(), value), [momentum = options_.momentum](const Module& self) {
      return static_cast<const BatchNormImpl&>(self).options().momentum == momentum;
    });
  }
  num_batches_tracked.copy_(add(num_batches_tracked, 1.0));
  // An empty batch leaves the estimates as they are, as PyTorch's batch_norm returns before its
  // update (its mean would be NaN); the count above still advances, as PyTorch's does.
  if (count == 0) return;
  const Tensor unbiased_var = batch_var * (static_cast<double>(count) / static_cast<double>(count - 1));
  // PyTorch's order: factor * batch + (1 - factor) * running.
  const auto blend = [](Tensor& running, const Tensor& batch, const auto& factor) {
    running.copy_(batch * factor + running * (1.0 - factor));
  };
  if (options_.momentum.has_value()) {
    blend(running_mean, batch_mean, *options_.momentum);
    blend(running_var, unbiased_var, *options_.momentum);
    return;
  }
  // The cumulative average: 1 / num_batches_tracked, taken in float64 and rounded once to the
  // estimates' dtype as PyTorch's 1.0 / float(num_batches_tracked) is; a tensor, not a host
  // number, so a compiled step reads the count of each replay.
  const Tensor factor = reciprocal(num_batches_tracked.to(DType::Float64)).to(running_mean.dtype());
  blend(running_mean, batch_mean, factor);
  blend(running_var, unbiased_var, factor);
}

std::string BatchNormImpl::extra_repr() const {
  return fmt::format("{}, eps={}, momentum={}, affine={}, track_running_stats={}", options_.num_features,
                     python_float(options_.eps), options_.momentum ? python_float(*options_.momentum) : "None",
                     python_bool(options_.affine), python_bool(options_.track_running_stats));
}

}  // namespace ember::nn
