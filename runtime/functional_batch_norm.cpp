// batch_norm (torch.nn.functional.batch_norm) as a composite of registry ops: mean and var over
// every dim but the channels, rsqrt, and the per-channel affine step; the running estimates are
// blended in place under no-grad, so a compiled step writes them back as state.
#include <string>
#include <vector>

#include "runtime/dispatch.h"
#include "runtime/functional.h"

namespace ember {

namespace {

bool is_16_bit(DType dtype) { return dtype == kFloat16 || dtype == kBFloat16; }

// A [C] tensor shaped to broadcast along dim 1 of an input of `rank` dims: [C, 1, ...].
Tensor per_channel(const Tensor& values, int rank) {
  Dims shape = Dims::filled(rank - 1, 1);
  shape[0] = values.size(0);
  return reshape(values, shape);
}

void check_channel_tensor(const Tensor& tensor, const char* role, const Tensor& input) {
  if (!tensor.defined()) return;
  check(tensor.dim() == 1 && tensor.size(0) == input.size(1),
        "batch_norm: {} must be 1-D with the input's {} channels (dim 1), got shape {} for input of shape {}", role,
        input.size(1), tensor.sizes(), input.sizes());
  check(tensor.device() == input.device(), "batch_norm: {} is on {} but the input is on {}", role, tensor.device(),
        input.device());
  check(tensor.dtype() == input.dtype() || (is_16_bit(input.dtype()) && tensor.dtype() == kFloat32),
        "batch_norm: {} has dtype {} but the input has {} (only a 16-bit input may meet float32)", role, tensor.dtype(),
        input.dtype());
}

// 1 / sqrt(var + eps) of the batch's variance as PyTorch's InvStd takes it: 0 where var and eps are
// both 0, so a constant channel normalises to 0 rather than 0 * inf = NaN. The rsqrt reads 1 there,
// so its gradient stays finite as well.
Tensor batch_inverse_std(const Tensor& var, double eps) {
  if (eps != 0.0) return rsqrt(add(var, eps));
  const Tensor constant = eq(var, zeros_like(var));
  return where(constant, zeros_like(var), rsqrt(where(constant, ones_like(var), var)));
}

}  // namespace

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps, Where where) {
  CallSiteScope site(where);
  check(input.defined(), "batch_norm: the input must be defined");
  check(input.dim() >= 2, "batch_norm: expected an input of at least 2 dims [N, C, *], got shape {}", input.sizes());
  check(is_floating(input.dtype()), "batch_norm: expected a floating-point input, got {}", input.dtype());
  check(running_mean.defined() == running_var.defined(),
        "batch_norm: running_mean and running_var must be given together");
  check(training || running_mean.defined(), "batch_norm: running_mean must be defined in evaluation mode");
  check_channel_tensor(running_mean, "running_mean", input);
  check_channel_tensor(running_var, "running_var", input);
  check_channel_tensor(weight, "weight", input);
  check_channel_tensor(bias, "bias", input);
  const int rank = input.dim();
  int64_t count = 1;  // values per channel
  Dims over = {0};
  for (int d = 0; d < rank; ++d) {
    if (d != 1) count *= input.size(d);
    if (d >= 2) over.push_back(d);
  }
  // PyTorch's _verify_batch_size: one value per channel has no variance.
  check(!training || count != 1, "batch_norm: Expected more than 1 value per channel when training, got input size {}",
        input.sizes());

  // A 16-bit input is computed in float32 and rounded once, beside 16-bit or float32 tensors alike,
  // as PyTorch's kernels accumulate and transform in float32 (its mixed batch norm included).
  const bool lifted = is_16_bit(input.dtype());
  const Tensor x = lifted ? to_dtype(input, kFloat32) : input;
  Tensor channel_mean = running_mean, channel_var = running_var;
  Tensor inverse_std;
  if (training) {
    channel_mean = mean(x, over);
    channel_var = var(x, over, /*correction=*/0);
    inverse_std = batch_inverse_std(channel_var, eps);
    if (running_mean.defined() && count > 0) {
      NoGradGuard no_grad;
      const Tensor unbiased = mul(channel_var, static_cast<double>(count) / static_cast<double>(count - 1));
      // PyTorch's order: momentum * batch + (1 - momentum) * running.
      Tensor mean_target = running_mean, var_target = running_var;
      mean_target.copy_(add(mul(channel_mean, momentum), mul(running_mean, 1.0 - momentum)));
      var_target.copy_(add(mul(unbiased, momentum), mul(running_var, 1.0 - momentum)));
    }
  }
  // Eval reads 1 / sqrt(running_var + eps) as it is, as PyTorch's (inf for a 0 with eps = 0).
  if (!training) inverse_std = rsqrt(add(channel_var, eps));
  Tensor y = mul(sub(x, per_channel(channel_mean, rank)), per_channel(inverse_std, rank));
  if (weight.defined()) y = mul(y, per_channel(weight, rank));
  if (bias.defined()) y = add(y, per_channel(bias, rank));
  return lifted ? to_dtype(y, input.dtype()) : y;
}

}  // namespace ember
