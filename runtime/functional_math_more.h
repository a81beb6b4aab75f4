// Math composites of torch that libtorch users reach for: lerp, addcmul/addcdiv, isclose/allclose,
// nan_to_num, logaddexp/logaddexp2/hypot, the NaN-skipping and paired reductions, median and quantile.
// Included by runtime/functional.h.
//
// Every function here is a composite of registry ops (runtime/functional_math_pointwise.cpp,
// runtime/functional_math_statistics.cpp), so autograd, CUDA, autocast and capture come from the ops
// it calls; the formulas below are PyTorch's, and so are the gradients.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <tuple>

#include "runtime/tensor.h"

namespace ember {

// ---- pointwise (broadcasting) ----

// lerp: start + weight (end - start) where |weight| < 0.5, else end - (end - start) (1 - weight): the
// second form is exact at weight = 1 (PyTorch's Lerp.h). start, end and a tensor weight broadcast
// together and must share one floating dtype (PyTorch's "expected dtype ... for `end`"), but for a 0-d
// weight, taken in start's dtype; 16-bit ones are computed in float32 and rounded once. Gradients: (1 - weight), weight
// and (end - start).
Tensor lerp(const Tensor& start, const Tensor& end, double weight, Where where = Where::current());
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight, Where where = Where::current());

// addcmul: a + value t1 t2; addcdiv: a + value t1 / t2, computed as a + ((value t1) op t2) in the
// three inputs' result_type (16-bit in float32, rounded once), broadcasting. addcmul takes integer
// tensors (not bool), with an integral value: PyTorch would truncate a fractional one silently.
// addcdiv refuses t1 and t2 both integral, as PyTorch does (its historic integer division is gone).
Tensor addcmul(const Tensor& a, const Tensor& t1, const Tensor& t2, double value = 1.0, Where where = Where::current());
Tensor addcdiv(const Tensor& a, const Tensor& t1, const Tensor& t2, double value = 1.0, Where where = Where::current());

// isclose: a == b, or |a - b| <= atol + rtol |b| with |a - b| finite (so inf is close only to the
// same inf), or, with equal_nan, both NaN. a and b must have one dtype (PyTorch's "did not match");
// bool and integer inputs compare their differences in float32 (PyTorch's default dtype), and with
// rtol = atol = 0 it is exactly a == b. rtol and atol must be >= 0. Broadcasting, bool result, no
// gradient. allclose: isclose over every element, as a host bool (a device sync).
Tensor isclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false,
               Where where = Where::current());
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false,
              Where where = Where::current());

// nan_to_num: NaN becomes `nan`, +inf `posinf` and -inf `neginf`, each rounded to a's dtype; absent
// infinities become the dtype's largest and lowest finite values. Integer and bool inputs have no
// NaN or inf and come back as a copy. The gradient is 0 at the replaced elements. nan_to_num_
// writes the result into a.
Tensor nan_to_num(const Tensor& a, double nan = 0.0, std::optional<double> posinf = std::nullopt,
                  std::optional<double> neginf = std::nullopt, Where where = Where::current());
Tensor& nan_to_num_(Tensor& a, double nan = 0.0, std::optional<double> posinf = std::nullopt,
                    std::optional<double> neginf = std::nullopt, Where where = Where::current());

// logaddexp: log(e^a + e^b) as m + log1p(e^-|a - b|), m = max(a, b); logaddexp2: log2(2^a + 2^b) as
// m + log1p(2^-|a - b|) / log(2). Equal infinities give themselves (not inf - inf = NaN), a NaN gives
// NaN. Gradients: 1 / (1 + e^(b - a)) to a (2^(b - a) for logaddexp2), symmetrically to b; half each
// where a = b. hypot: sqrt(a^2 + b^2) without overflow or underflow, inf when either is infinite (a
// NaN beside it too), gradients a / hypot and b / hypot (0 at the origin and at infinities, where
// PyTorch's formula gives 0 / 0 or inf / inf = NaN). These broadcast and promote like add; an
// integral result type is refused (PyTorch has no integer kernel), 16-bit ones are computed in
// float32 and rounded once.
Tensor logaddexp(const Tensor& a, const Tensor& b, Where where = Where::current());
Tensor logaddexp2(const Tensor& a, const Tensor& b, Where where = Where::current());
Tensor hypot(const Tensor& a, const Tensor& b, Where where = Where::current());

// ---- reductions: dims (empty = all), keepdim ----

// nansum: the sum with NaN counted as 0 (an integer or bool input sums as sum does, to int64);
// nanmean: nansum / the count of non-NaN elements, floating inputs only (NaN where all are NaN).
// The gradient is 0 at NaNs (PyTorch's grad * ~isnan).
Tensor nansum(const Tensor& a, const Dims& dims = {}, bool keepdim = false, Where where = Where::current());
Tensor nanmean(const Tensor& a, const Dims& dims = {}, bool keepdim = false, Where where = Where::current());
// (var, mean) and (std, mean) over dims, with var's / std's correction (1 = unbiased).
std::tuple<Tensor, Tensor> var_mean(const Tensor& a, const Dims& dims = {}, int64_t correction = 1,
                                    bool keepdim = false, Where where = Where::current());
std::tuple<Tensor, Tensor> std_mean(const Tensor& a, const Dims& dims = {}, int64_t correction = 1,
                                    bool keepdim = false, Where where = Where::current());
// (amin, amax) over one dim, or every element when dim is absent; no empty reduction.
std::tuple<Tensor, Tensor> aminmax(const Tensor& a, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                                   Where where = Where::current());

// median: the lower median, element (n - 1) / 2 of the ascending order (no averaging of the two
// middle ones), or NaN when any element is NaN. nanmedian: the lower median of the non-NaN
// elements (NaN when all are NaN). Over every element (NaN for an empty floating input), the
// gradient is shared equally by the elements equal to the result (PyTorch's
// evenly_distribute_backward). Along a dim: (values, int64 indices), the index PyTorch's CPU kernel
// picks: of equal values the one in the middle of a stable sort, for median with NaNs the first
// NaN; the gradient reaches that element. Not for bool along a dim (PyTorch's kernel refuses it).
Tensor median(const Tensor& a, Where where = Where::current());
std::tuple<Tensor, Tensor> median(const Tensor& a, int64_t dim, bool keepdim = false, Where where = Where::current());
Tensor nanmedian(const Tensor& a, Where where = Where::current());
std::tuple<Tensor, Tensor> nanmedian(const Tensor& a, int64_t dim, bool keepdim = false,
                                     Where where = Where::current());

// quantile: the q-quantile along dim (of all elements, flattened, when absent), with q in [0, 1]
// placed at rank q (n - 1) of the ascending order and, between ranks i < rank < i + 1, values
// v_i and v_(i+1) combined by `interpolation`: linear v_i + (rank - i)(v_(i+1) - v_i) (lerp),
// lower v_i, higher v_(i+1), midpoint (v_i + v_(i+1)) / 2, nearest the value at the rank rounded
// half to even (PyTorch rounds so). Any NaN makes the result NaN; nanquantile uses only the non-NaN
// values (n their count; NaN where none). A 1-D q puts its dim first in the result. float32 and
// float64 inputs only, q of the input's dtype, as PyTorch requires.
enum class QuantileInterpolation { Linear, Lower, Higher, Midpoint, Nearest };
Tensor quantile(const Tensor& a, double q, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                QuantileInterpolation interpolation = QuantileInterpolation::Linear, Where where = Where::current());
Tensor quantile(const Tensor& a, const Tensor& q, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                QuantileInterpolation interpolation = QuantileInterpolation::Linear, Where where = Where::current());
Tensor nanquantile(const Tensor& a, double q, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                   QuantileInterpolation interpolation = QuantileInterpolation::Linear, Where where = Where::current());
Tensor nanquantile(const Tensor& a, const Tensor& q, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                   QuantileInterpolation interpolation = QuantileInterpolation::Linear, Where where = Where::current());

}  // namespace ember
