// instance_norm and bilinear of nn::functional (functional_layers_more.h): instance_norm as
// batch_norm over [1, N * C, *] (ATen's instance_norm), bilinear through one matmul.
#include "runtime/nn/functional_layers_more.h"

#include "runtime/dispatch.h"

namespace ember::nn::functional {

namespace {

// A per-channel tensor [C] repeated for each of the batch's samples: [N * C] (ATen's repeat_if_defined).
Tensor repeat_for_batch(const Tensor& values, int64_t batch) {
  return values.defined() ? values.repeat({batch}) : values;
}

void check_per_channel(const Tensor& values, const char* role, const Tensor& input) {
  if (!values.defined()) return;
  check(values.dim() == 1 && values.size(0) == input.size(1),
        "instance_norm: {} must be 1-D with the input's {} channels (dim 1), got shape {} for input of shape {}", role,
        input.size(1), values.sizes(), input.sizes());
}

}  // namespace

Tensor instance_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                     const Tensor& bias, bool use_input_stats, double momentum, double eps, Where where) {
  CallSiteScope site(where);
  check(input.defined(), "instance_norm: the input must be defined");
  check(input.dim() >= 2, "instance_norm: expected an input of at least 2 dims [N, C, *], got shape {}", input.sizes());
  check(running_mean.defined() == running_var.defined(),
        "instance_norm: running_mean and running_var must be given together");
  check(use_input_stats || running_mean.defined(),
        "instance_norm: Expected running_mean and running_var to be defined when use_input_stats is false");
  check_per_channel(running_mean, "running_mean", input);
  check_per_channel(running_var, "running_var", input);
  check_per_channel(weight, "weight", input);
  check_per_channel(bias, "bias", input);
  int64_t spatial = 1;
  for (int d = 2; d < input.dim(); ++d) spatial *= input.size(d);
  // PyTorch's _verify_spatial_size: one value per instance has no variance.
  check(!use_input_stats || spatial != 1,
        "instance_norm: Expected more than 1 spatial element when training, got input size {}", input.sizes());

  const int64_t batch = input.size(0);
  const int64_t channels = input.size(1);
  Dims folded = input.sizes();
  folded[1] = batch * channels;
  folded[0] = 1;
  // The estimates are repeated into fresh tensors, which batch_norm blends in place; each real
  // estimate then takes the mean of its N copies (every copy starts from the same running value,
  // so this is momentum * mean_n(stat_n) + (1 - momentum) * running).
  const Tensor repeated_mean = repeat_for_batch(running_mean, batch);
  const Tensor repeated_var = repeat_for_batch(running_var, batch);
  const Tensor output = batch_norm(input.reshape(folded), repeated_mean, repeated_var, repeat_for_batch(weight, batch),
                                   repeat_for_batch(bias, batch), use_input_stats, momentum, eps);
  // An empty batch leaves the estimates as they are: ATen's mean over 0 copies would write NaN.
  if (use_input_stats && running_mean.defined() && batch > 0) {
    NoGradGuard no_grad;
    Tensor mean_target = running_mean, var_target = running_var;
    mean_target.copy_(mean(repeated_mean.reshape({batch, channels}), {0}));
    var_target.copy_(mean(repeated_var.reshape({batch, channels}), {0}));
  }
  return output.reshape(input.sizes());
}

Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight, const Tensor& bias, Where where) {
  CallSiteScope site(where);
  check(input1.defined() && input2.defined() && weight.defined(),
        "bilinear(): input1, input2 and weight must be defined");
  check(weight.dim() == 3, "bilinear(): weight must be 3-D [out, in1, in2], got shape {}", weight.sizes());
  check(input1.dim() >= 1, "bilinear(): inputs must have at least 1 dim [*, in], got a 0-d input1");
  check(input1.dim() == input2.dim(), "bilinear(): input dimensions do not match: got {} and {} (shapes {} and {})",
        input1.dim(), input2.dim(), input1.sizes(), input2.sizes());
  for (int d = 0; d + 1 < input1.dim(); ++d)
    check(input1.size(d) == input2.size(d),
          "bilinear(): input batch dimensions do not match: got {} and {} at dim {} (shapes {} and {})", input1.size(d),
          input2.size(d), d, input1.sizes(), input2.sizes());
  const int64_t out = weight.size(0), in1 = weight.size(1), in2 = weight.size(2);
  check(input1.size(-1) == in1, "bilinear(): input1 size does not match weight size: got {} but expected {}",
        input1.size(-1), in1);
  check(input2.size(-1) == in2, "bilinear(): input2 size does not match weight size: got {} but expected {}",
        input2.size(-1), in2);
  if (bias.defined())
    check(bias.dim() == 1 && bias.size(0) == out,
          "bilinear(): bias size does not match weight size: got shape {} but expected [{}]", bias.sizes(), out);

  int64_t rows = 1;
  for (int d = 0; d + 1 < input1.dim(); ++d) rows *= input1.size(d);
  // x1 [rows, in1] @ W viewed as [in1, out * in2] gives, per row, sum_i x1_i W[o, i, :]; the
  // product with x2 summed over in2 finishes the form.
  const Tensor weight_by_in1 = weight.permute({1, 0, 2}).reshape({in1, out * in2});
  const Tensor partial = matmul(input1.reshape({rows, in1}), weight_by_in1).reshape({rows, out, in2});
  Tensor output = sum(mul(partial, input2.reshape({rows, 1, in2})), {2});
  if (bias.defined()) output = add(output, bias);
  Dims output_shape = input1.sizes();
  output_shape[input1.dim() - 1] = out;
  return output.reshape(output_shape);
}

}  // namespace ember::nn::functional
