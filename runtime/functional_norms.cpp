// rms_norm and group_norm as composites of registry ops, in the order of PyTorch's composite
// forms (rms_norm_composite in aten/src/ATen/native/layer_norm.cpp, math_group_norm in
// group_norm.cpp): 16-bit inputs are lifted to float32, the statistics and the affine step are
// computed there, and the result is rounded once to the input's dtype. Both are on PyTorch's
// autocast float32 list, so under autocast 16-bit inputs stay in float32.
#include <limits>
#include <optional>

#include "runtime/autocast_composites.h"
#include "runtime/functional.h"

namespace ember {

namespace {

// float32 for bfloat16 and float16 (PyTorch's opmath type), else the dtype itself.
DType computing_dtype(DType dtype) { return dtype == kBFloat16 || dtype == kFloat16 ? kFloat32 : dtype; }

void check_floating(const char* function, const char* role, const Tensor& tensor) {
  check(tensor.defined(), "{}: {} must be defined", function, role);
  check(is_floating(tensor.dtype()), "{}: {} must be a floating tensor, got {} of shape {}", function, role,
        tensor.dtype(), tensor.sizes());
}

}  // namespace

Tensor rms_norm(const Tensor& input, const Dims& normalized_shape, const Tensor& weight, std::optional<double> eps,
                Where where) {
  CallSiteScope site(where);
  check_floating("rms_norm", "input", input);
  check(!normalized_shape.empty(),
        "rms_norm: expected normalized_shape to have at least one dim, got {} (input of shape {})", normalized_shape,
        input.sizes());
  const int lead = input.dim() - normalized_shape.size();
  bool matches = lead >= 0;
  for (int i = 0; matches && i < normalized_shape.size(); ++i) matches = input.size(lead + i) == normalized_shape[i];
  check(matches, "rms_norm: given normalized_shape={}, expected an input of shape [*, {}], but got input of shape {}",
        normalized_shape, fmt::join(normalized_shape, ", "), input.sizes());
  if (weight.defined()) {
    check_floating("rms_norm", "weight", weight);
    check(weight.sizes() == normalized_shape, "rms_norm: expected weight of shape normalized_shape={}, got {}",
          normalized_shape, weight.sizes());
  }
  const DType origin = input.dtype();
  const Tensor x = detail::autocast_to_float32(input), w = detail::autocast_to_float32(weight);
  const DType compute = computing_dtype(x.dtype());
  const double epsilon = eps.value_or(compute == kFloat64 ? std::numeric_limits<double>::epsilon()
                                                          : std::numeric_limits<float>::epsilon());
  check(epsilon >= 0.0, "rms_norm: eps must be non-negative, got {}", epsilon);
  Dims dims;
  for (int i = lead; i < input.dim(); ++i) dims.push_back(i);
  const Tensor lifted = to_dtype(x, compute);
  Tensor result = mul(lifted, rsqrt(add(mean(mul(lifted, lifted), dims, true), epsilon)));
  if (w.defined()) result = mul(result, w);
  // The input's dtype, unless autocast lifted it (then float32, as autocast's float32 policy).
  return to_dtype(result, x.dtype() == origin ? origin : x.dtype());
}

Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps,
                  Where where) {
  CallSiteScope site(where);
  check_floating("group_norm", "input", input);
  check(input.dim() >= 2, "group_norm: expected at least 2 dims ([N, C, *]) for the input, got shape {}",
        input.sizes());
  const int64_t N = input.size(0), C = input.size(1);
  check(num_groups > 0 && C % num_groups == 0,
        "group_norm: expected the number of channels in the input to be divisible by num_groups, but got input of "
        "shape {} and num_groups={}",
        input.sizes(), num_groups);
  for (const auto& [role, parameter] : {std::pair{"weight", &weight}, std::pair{"bias", &bias}}) {
    if (!parameter->defined()) continue;
    check_floating("group_norm", role, *parameter);
    check(parameter->dim() == 1 && parameter->size(0) == C,
          "group_norm: expected {} to be a vector of size equal to the number of channels in the input ({}), but "
          "got {} of shape {} and input of shape {}",
          role, C, role, parameter->sizes(), input.sizes());
  }
  check(eps >= 0.0, "group_norm: eps must be non-negative, got {}", eps);
  // F.group_norm's _verify_batch_size: a group of one value (its own mean) is refused.
  int64_t values_per_group = N * (C / num_groups);
  for (int i = 2; i < input.dim(); ++i) values_per_group *= input.size(i);
  check(values_per_group != 1, "group_norm: expected more than 1 value per channel when training, got input size {}",
        input.sizes());
  const DType origin = input.dtype();
  const Tensor x = detail::autocast_to_float32(input);
  const DType compute = computing_dtype(x.dtype());
  // [N, G, C / G * spatial]: each group's elements in one row (a copy when the input is strided).
  int64_t group_size = C / num_groups;
  for (int i = 2; i < input.dim(); ++i) group_size *= input.size(i);
  const Tensor grouped = to_dtype(x, compute).reshape({N, num_groups, group_size});
  const Tensor average = mean(grouped, {2}, true);
  const Tensor centered = sub(grouped, average);
  const Tensor variance = mean(mul(centered, centered), {2}, true);
  Tensor result = mul(centered, rsqrt(add(variance, eps))).reshape(input.sizes());
  // weight and bias [C] broadcast as [C, 1, ...] over the spatial dims.
  Dims per_channel{C};
  for (int i = 2; i < input.dim(); ++i) per_channel.push_back(1);
  const Tensor w = detail::autocast_to_float32(weight), b = detail::autocast_to_float32(bias);
  if (w.defined()) result = mul(result, w.reshape(per_channel));
  if (b.defined()) result = add(result, b.reshape(per_channel));
  return to_dtype(result, x.dtype() == origin ? origin : x.dtype());
}

}  // namespace ember
