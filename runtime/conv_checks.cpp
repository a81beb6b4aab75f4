// Checks shared by the convolutions: their messages follow PyTorch's, with ember's op names.
#include "runtime/conv_checks.h"

#include "runtime/autocast.h"
#include "runtime/functional.h"

namespace ember::detail {

Tensor conv_autocast_lowered(const Tensor& tensor) {
  if (!autocast_enabled() || !tensor.defined()) return tensor;
  const DType dtype = tensor.dtype();
  const bool eligible = dtype == kFloat32 || dtype == kBFloat16 || dtype == kFloat16;
  return eligible && dtype != autocast_dtype() ? to_dtype(tensor, autocast_dtype()) : tensor;
}

void check_conv_operands(const char* op, const Tensor& input, const Tensor& weight, const Tensor& bias, int spatial) {
  check(input.defined() && weight.defined(), "{}: the input and the weight must be defined", op);
  check(is_floating(input.dtype()), "{}: the input must be floating, got {}", op, input.dtype());
  check(weight.dtype() == input.dtype(),
        "{}: the input type ({}) and the weight type ({}) should be the same (outside autocast)", op, input.dtype(),
        weight.dtype());
  check(weight.device() == input.device(), "{}: the input is on {} but the weight is on {}", op, input.device(),
        weight.device());
  check(weight.dim() == spatial + 2, "{}: expected a {}-D weight [out, in / groups, kernel...], got weight of shape {}",
        op, spatial + 2, weight.sizes());
  if (!bias.defined()) return;
  check(bias.dtype() == input.dtype(), "{}: the input type ({}) and the bias type ({}) should be the same", op,
        input.dtype(), bias.dtype());
  check(bias.device() == input.device(), "{}: the input is on {} but the bias is on {}", op, input.device(),
        bias.device());
  check(bias.dim() == 1, "{}: expected a 1-D bias, got bias of shape {}", op, bias.sizes());
}

void check_conv_groups(const char* op, const Tensor& weight, int64_t groups) {
  check(groups > 0, "{}: groups must be positive, got {}", op, groups);
  check(weight.size(0) >= groups,
        "{}: given groups={}, expected the weight to have at least {} row{} at dimension 0, but got weight of shape {}",
        op, groups, groups, groups == 1 ? "" : "s", weight.sizes());
}

void check_conv_not_degenerate(const char* op, const Tensor& batched, const Tensor& weight) {
  for (int d = 2; d < weight.dim(); ++d)
    check(weight.size(d) > 0, "{}: the kernel size must be greater than zero, got weight of shape {}", op,
          weight.sizes());
  check(batched.numel() > 0 || batched.size(0) == 0 || batched.size(1) == 0,
        "{}: only zero batch or zero channel inputs are supported, but got input of shape {}", op, batched.sizes());
}

Tensor conv_batched_input(const char* op, const Tensor& input, int spatial, bool& unbatched) {
  check(input.dim() == spatial + 1 || input.dim() == spatial + 2,
        "{}: expected a {}-D (unbatched) or {}-D (batched) input, but got input of shape {}", op, spatial + 1,
        spatial + 2, input.sizes());
  unbatched = input.dim() == spatial + 1;
  return unbatched ? unsqueeze(input, 0) : input;
}

Dims conv_sizes(const char* op, const char* what, const SpatialDims& values, int spatial, bool positive) {
  const Dims sizes = values.expand(spatial, op, what);
  for (const int64_t size : sizes)
    check(positive ? size > 0 : size >= 0, "{}: {} must be {}, got {}", op, what,
          positive ? "positive" : "non-negative", sizes);
  return sizes;
}

ConvOperands conv_operands(const char* op, int spatial, const Tensor& input, const Tensor& weight, const Tensor& bias) {
  ConvOperands operands{.input = conv_autocast_lowered(input),
                        .weight = conv_autocast_lowered(weight),
                        .bias = conv_autocast_lowered(bias)};
  check_conv_operands(op, operands.input, operands.weight, operands.bias, spatial);
  operands.batched = conv_batched_input(op, operands.input, spatial, operands.unbatched);
  return operands;
}

Dims channels_last_order(int spatial) {
  Dims order = {0};
  for (int d = 0; d < spatial; ++d) order.push_back(2 + d);
  order.push_back(1);
  return order;
}

void same_padding(const Dims& kernel, const Dims& dilation, Dims& before, Dims& after) {
  before = after = Dims::filled(kernel.size(), 0);
  for (int d = 0; d < kernel.size(); ++d) {
    const int64_t total = dilation[d] * (kernel[d] - 1);
    before[d] = total / 2;
    after[d] = total - before[d];
  }
}

int64_t trailing_product(const Dims& dims, int from) {
  int64_t product = 1;
  for (int i = from; i < dims.size(); ++i) product *= dims[i];
  return product;
}

}  // namespace ember::detail
