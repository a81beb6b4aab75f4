// bincount, histc, searchsorted and bucketize (runtime/functional_select.h): counts and bucket indices
// computed on the host from values read through host_values, in PyTorch's CPU kernels' arithmetic.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "runtime/functional.h"
#include "runtime/host_elements.h"

namespace ember {

namespace {

TensorOptions options_of(DType dtype, Device device) {
  TensorOptions options;
  options.dtype = dtype;
  options.device = device;
  return options;
}

// Accumulates `weights` per value of `values` into `bins` sums of type W (PyTorch sums float32 weights in
// float and every other dtype in double).
template <typename W>
Tensor weighted_bins(const std::vector<int64_t>& values, const Tensor& weights, int64_t bins, Device device) {
  const std::vector<W> weight = detail::host_elements<W>("bincount", weights);
  std::vector<W> sums(static_cast<size_t>(bins), W{0});
  for (size_t i = 0; i < values.size(); ++i) sums[values[i]] += weight[i];
  return from_vector<W>(sums, Dims{bins}, options_of(dtype_of<W>(), device));
}

}  // namespace

Tensor bincount(const Tensor& a, const Tensor& weights, int64_t minlength, Where where) {
  CallSiteScope site(where);
  NoGradGuard no_grad;  // counts have no gradient
  check(a.dtype() == kInt32 || a.dtype() == kInt64, "bincount: expected an int32 or int64 input, got {} (shape {})",
        a.dtype(), a.sizes());
  check(minlength >= 0, "bincount: minlength should be >= 0, got {}", minlength);
  check(a.dim() == 1, "bincount: expected a 1-D input of non-negative integers, got shape {}", a.sizes());
  // PyTorch's kernel returns here before looking at the weights: int64 zeros, whatever they are.
  if (a.numel() == 0) return zeros({minlength}, options_of(kInt64, a.device()));
  const std::vector<int64_t> values = detail::host_int64("bincount", a);
  int64_t largest = 0;
  for (const int64_t value : values) {
    check(value >= 0, "bincount: expected a 1-D input of non-negative integers, got the value {}", value);
    // Its count sits at index value, in a result of value + 1 bins: that length must fit int64.
    check(value < std::numeric_limits<int64_t>::max(),
          "bincount: the value {} would need {} + 1 bins, more than an int64 counts", value, value);
    largest = std::max(largest, value);
  }
  const int64_t bins = std::max(largest + 1, minlength);
  if (!weights.defined()) {
    std::vector<int64_t> counts(static_cast<size_t>(bins), 0);
    for (const int64_t value : values) ++counts[value];
    return from_vector<int64_t>(counts, Dims{bins}, options_of(kInt64, a.device()));
  }
  check(weights.dim() == 1 && weights.size(0) == a.size(0),
        "bincount: weights must be 1-D with the input's length {}, got shape {}", a.size(0), weights.sizes());
  check(weights.device() == a.device(), "bincount: input and weights must be on one device, got {} and {}",
        a.device().str(), weights.device().str());
  if (weights.dtype() == kFloat32) return weighted_bins<float>(values, weights, bins, a.device());
  return weighted_bins<double>(values, to_dtype(weights, kFloat64), bins, a.device());
}

Tensor histc(const Tensor& a, int64_t bins, double min, double max, Where where) {
  CallSiteScope site(where);
  NoGradGuard no_grad;
  check(is_floating(a.dtype()), "histc: expected a floating-point input, got {} (shape {})", a.dtype(), a.sizes());
  check(bins > 0, "histc: bins must be > 0, got {}", bins);
  return dispatch_floating(a.dtype(), "histc", [&](auto zero) {
    using T = decltype(zero);
    using C = compute_t<T>;
    const std::vector<T> values = detail::host_elements<T>("histc", a);
    double low = min, high = max;
    if (low == high && !values.empty()) {  // the data's range; a NaN in the data makes it NaN (aminmax's)
      low = std::numeric_limits<double>::infinity();
      high = -low;
      for (const T value : values) {
        const double x = static_cast<double>(static_cast<C>(value));
        low = std::isnan(low) || std::isnan(x) ? std::nan("") : std::min(low, x);
        high = std::isnan(high) || std::isnan(x) ? std::nan("") : std::max(high, x);
      }
    }
    if (low == high) {
      low -= 1;
      high += 1;
    }
    check(std::isfinite(low) && std::isfinite(high), "histc: the range [{}, {}] is not finite", low, high);
    check(low < high, "histc: max must be larger than min, got min {} and max {}", low, high);
    // PyTorch's kernel works in the input's dtype: the edges are rounded to it, and with 16-bit
    // inputs each step of (x - left) * bins / (right - left) is rounded to it too (c10::Half math).
    const auto round = [](C value) { return static_cast<C>(static_cast<T>(value)); };
    const C left = round(static_cast<C>(low)), right = round(static_cast<C>(high));
    const C width = round(right - left), scale = round(static_cast<C>(bins));
    // A range narrower than the dtype resolves has no bins to tell apart (PyTorch divides by 0 there).
    check(width > 0, "histc: the range [{}, {}] collapses to one {} value", low, high, a.dtype());
    std::vector<int64_t> counts(static_cast<size_t>(bins), 0);
    for (const T value : values) {
      const C x = static_cast<C>(value);
      if (!(x >= left && x <= right)) continue;  // outside the range, or NaN
      double step = static_cast<double>(round(round(round(x - left) * scale) / width));
      // That step overflows to inf where (x - left) * bins passes the dtype's largest value (soon in
      // float16; near the limits in float32 and float64), as may x - left and the width themselves.
      // PyTorch then casts inf or NaN to an index (undefined); here it is the element's fraction of
      // the range times bins, in double over halved values, which cannot overflow.
      if (!std::isfinite(step) || !std::isfinite(static_cast<double>(width))) {
        const double offset = static_cast<double>(x) / 2 - static_cast<double>(left) / 2;
        const double span = static_cast<double>(right) / 2 - static_cast<double>(left) / 2;
        step = span > 0 ? offset / span * static_cast<double>(bins) : 0.0;
      }
      const int64_t bin = std::min(static_cast<int64_t>(step), bins - 1);  // the last bin holds its right edge too
      ++counts[bin];
    }
    std::vector<T> result(counts.begin(), counts.end());  // each count rounded once to the dtype
    return from_vector<T>(result, Dims{bins}, options_of(a.dtype(), a.device()));
  });
}

}  // namespace ember
