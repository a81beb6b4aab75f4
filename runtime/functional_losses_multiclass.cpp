// The multi-class margin losses in PyTorch's formulas (aten/src/ATen/native/LossMultiMargin.cpp,
// LossMultiLabelMargin.cpp): multi_margin_loss and multilabel_margin_loss. Composites of registry
// ops.
#include "runtime/autocast_composites.h"
#include "runtime/dispatch.h"
#include "runtime/functional_losses_more.h"
#include "runtime/loss_reduction.h"
#include "runtime/ops/pointwise_common.h"

namespace ember {

namespace {

using detail::autocast_to_float32;
using ops::scalar_like;

// [N, C] of a 0-d, [C] or [N, C] input: the sample count and class count, with PyTorch's checks.
std::pair<int64_t, int64_t> samples_and_classes(const char* function, const Tensor& input) {
  check(input.defined() && is_floating(input.dtype()), "{}: input must be a floating-point tensor, got {}", function,
        input.defined() ? std::string(dtype_name(input.dtype())) : std::string("an undefined tensor"));
  check(input.dim() == 0 || (input.dim() <= 2 && input.size(input.dim() - 1) > 0),
        "{}: expected a 0-d, [C] or [N, C] input with C > 0, got shape {}", function, input.sizes());
  return {input.dim() == 2 ? input.size(0) : 1, input.dim() == 0 ? 1 : input.size(input.dim() - 1)};
}

void check_integer_target(const char* function, const Tensor& target) {
  check(target.defined() && (target.dtype() == kInt64 || target.dtype() == kInt32),
        "{}: target must hold class indices as int64 or int32, got {}", function,
        target.defined() ? std::string(dtype_name(target.dtype())) : std::string("an undefined tensor"));
}

// Whether reading the target's values costs nothing: a CPU tensor outside a capture (a read would
// wait for the device, or break the capture; there the indexing ops' own checks report).
bool can_read(const Tensor& target) {
  return target.numel() > 0 && target.device().is_cpu() && !dispatch_mode_active();
}

// A margin violation as the kernels count it, `if (z > 0) add z`: z where z > 0, else 0. A NaN z
// adds nothing (relu would pass it), and the gradient at z = 0 is 0.
Tensor violation(const Tensor& z) {
  const Tensor zero = scalar_like(0.0, z);
  return ember::where(gt(z, zero), z, zero);
}

// The per-sample losses [N] of [N, C] violations, each sample's sum over C divided by C, in the
// target's shape: 0-d when the target (multi_margin) or the input (multilabel) has one sample only.
Tensor mean_over_classes(const Tensor& violations, int64_t classes, bool zero_dim) {
  const Tensor losses = div(sum(violations, {1}), static_cast<double>(classes));
  return zero_dim ? losses.reshape({}) : losses;
}

}  // namespace

Tensor multi_margin_loss(const Tensor& input, const Tensor& target, MultiMarginLossOptions options, Where where) {
  CallSiteScope site(where);
  const char* function = "multi_margin_loss";
  check_reduction(function, options.reduction);
  const auto [samples, classes] = samples_and_classes(function, input);
  check(options.p == 1 || options.p == 2, "{}: only p = 1 and p = 2 are supported, got p = {}", function, options.p);
  check_integer_target(function, target);
  check(target.dim() <= 1 && target.numel() == samples,
        "{}: expected a target of {} class indices for an input of shape {}, got shape {}", function, samples,
        input.sizes(), target.sizes());
  if (options.weight.defined()) {
    check(is_floating(options.weight.dtype()) && options.weight.dim() == 1 && options.weight.numel() == classes,
          "{}: expected a floating weight of {} elements (one per class), got {} of shape {}", function, classes,
          options.weight.dtype(), options.weight.sizes());
  }
  if (can_read(target)) {
    for (const int64_t y : to_dtype(target, kInt64).contiguous().to_vector<int64_t>())
      check(y >= 0 && y < classes, "{}: target {} is out of range for {} classes", function, y, classes);
  }
  const Tensor x = autocast_to_float32(input).reshape({samples, classes});
  const Tensor y = to_dtype(target, kInt64).reshape({samples, 1});
  // margin - x[y] + x[i] for every class i but the target's own, counted where above 0 as the
  // kernel's `if (z > 0)`; the weight too is applied only there (an inf weight of a sample with no
  // violation adds 0, not 0 * inf), and so is the gradient.
  const Tensor z = add(sub(x, gather(x, 1, y)), options.margin);
  const Tensor classes_row = arange(static_cast<double>(classes), {.dtype = kInt64, .device = x.device()});
  const Tensor zero = scalar_like(0.0, z);
  const Tensor counted = logical_and(gt(z, zero), ne(classes_row.reshape({1, classes}), y));
  const Tensor base = ember::where(counted, z, zero);
  Tensor violations = options.p == 2 ? mul(base, base) : base;
  if (options.weight.defined()) {
    const Tensor weight = to_dtype(options.weight, violations.dtype());
    const Tensor target_weight = index_select(weight, 0, y.reshape({samples})).reshape({samples, 1});
    violations = mul(violations, ember::where(counted, target_weight, scalar_like(0.0, target_weight)));
  }
  return reduce_loss(mean_over_classes(violations, classes, target.dim() == 0), options.reduction);
}

Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target, MultilabelMarginLossOptions options,
                              Where where) {
  CallSiteScope site(where);
  const char* function = "multilabel_margin_loss";
  check_reduction(function, options.reduction);
  const auto [samples, classes] = samples_and_classes(function, input);
  check_integer_target(function, target);
  // PyTorch's shape rule: the input's shape for [N, C], any 0-d or 1-d target of C entries else.
  const bool shaped =
      input.dim() == 2 ? target.sizes() == input.sizes() : target.dim() <= 1 && target.numel() == classes;
  check(shaped, "{}: expected a target of the input's shape {}, got shape {}", function, input.sizes(),
        target.sizes());
  const Tensor t = to_dtype(target, kInt64).reshape({samples, classes});
  // PyTorch checks every entry, those after a row's -1 too.
  if (can_read(target)) {
    for (const int64_t entry : t.contiguous().to_vector<int64_t>())
      check(entry >= -1 && entry < classes, "{}: target {} is out of range for {} classes (-1 ends a row's list)",
            function, entry, classes);
  }
  const Tensor x = autocast_to_float32(input).reshape({samples, classes});
  const Tensor classes_row = arange(static_cast<double>(classes), {.dtype = kInt64, .device = x.device()});
  // A row's list ends at its first negative entry: entry k is listed when no negative comes at or
  // before k, i.e. when k is below the first negative's position (C where there is none).
  const Tensor negative = lt(t, scalar_like(0.0, t));
  const Tensor first_negative = ember::where(any(negative, 1, true), argmax(to_dtype(negative, kInt64), 1, true),
                                             scalar_like(static_cast<double>(classes), t));
  const Tensor listed = lt(classes_row.reshape({1, classes}), first_negative);      // [N, K]
  const Tensor listed_class = ember::where(listed, t, scalar_like(0.0, t));        // [N, K], safe to index
  // is_target[n, c]: class c appears in row n's list.
  const Tensor counts = sum(mul(one_hot(listed_class, classes), to_dtype(listed, kInt64).unsqueeze(2)), {1});
  const Tensor is_target = gt(counts, scalar_like(0.0, counts));                   // [N, C]
  // 1 - (x[j] - x[i]) for each listed j (dim 1) and each class i (dim 2), kept where i is unlisted.
  const Tensor x_listed = gather(x, 1, listed_class);
  const Tensor violations = violation(rsub(sub(x_listed.unsqueeze(2), x.unsqueeze(1)), 1.0));
  const Tensor keep = logical_and(listed.unsqueeze(2), logical_not(is_target).unsqueeze(1));
  const Tensor kept = ember::where(keep, violations, scalar_like(0.0, violations));
  return reduce_loss(mean_over_classes(sum(kept, {1}), classes, input.dim() <= 1), options.reduction);
}

}  // namespace ember
