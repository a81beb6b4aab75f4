// The reductions of runtime/functional_math_more.h against float64 references written here as plain
// loops (PyTorch's formulas, read from ATen): nansum, nanmean, var_mean, std_mean, aminmax, median,
// nanmedian, quantile and nanquantile; NaN, empty and strided inputs, integer and bool dtypes,
// gradients by central differences and every error message (the pointwise ones: test_math_more.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <numeric>
#include <string>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "host_read_recorder.h"
#include "math_more_reference.h"

namespace test_math_more_statistics {

using namespace ember;
using namespace ember::testing;
using namespace ember::testing::math_more;

namespace {

// A reduction of a row-major [rows, columns] matrix over dim 0 (per column), dim 1 (per row) or
// both (-1), by `fn` over the reduced values.
std::vector<double> reduce_reference(const std::vector<double>& values, int64_t rows, int64_t columns, int dim,
                                     const std::function<double(const std::vector<double>&)>& fn) {
  std::vector<double> result;
  if (dim < 0) return {fn(values)};
  const int64_t outer = dim == 0 ? columns : rows;
  const int64_t inner = dim == 0 ? rows : columns;
  for (int64_t o = 0; o < outer; ++o) {
    std::vector<double> group;
    for (int64_t i = 0; i < inner; ++i) group.push_back(dim == 0 ? values[i * columns + o] : values[o * columns + i]);
    result.push_back(fn(group));
  }
  return result;
}

double nansum_of(const std::vector<double>& values) {
  double total = 0.0;
  for (double v : values) total += std::isnan(v) ? 0.0 : v;
  return total;
}
double nanmean_of(const std::vector<double>& values) {
  double count = 0.0;
  for (double v : values) count += std::isnan(v) ? 0.0 : 1.0;
  return nansum_of(values) / count;
}
double mean_of(const std::vector<double>& values) {
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}
double var_of(const std::vector<double>& values, int64_t correction) {
  const double center = mean_of(values);
  double squares = 0.0;
  for (double v : values) squares += (v - center) * (v - center);
  return squares / std::max<double>(0.0, static_cast<double>(values.size()) - correction);
}

}  // namespace

TEST_CASE("nansum and nanmean skip NaN over every dim, keepdim, strided and empty inputs") {
  const Tensor base = doubles({1.5, kNaN, -2.0, 0.25, kNaN, kNaN, 3.0, -1.0, 4.0, kNaN, kInf, 0.5}, {4, 3});
  const Tensor input = base.t();  // [3, 4], not contiguous
  const std::vector<double> values = values_of(input);
  for (int dim : {-1, 0, 1}) {
    for (bool keepdim : {false, true}) {
      INFO("dim " << dim << " keepdim " << keepdim);
      const Dims dims = dim < 0 ? Dims{} : Dims{dim};
      const Tensor total = nansum(input, dims, keepdim);
      const Tensor average = nanmean(input, dims, keepdim);
      const Dims expected = dim < 0    ? (keepdim ? Dims{1, 1} : Dims{})
                            : dim == 0 ? (keepdim ? Dims{1, 4} : Dims{4})
                                       : (keepdim ? Dims{3, 1} : Dims{3});
      CHECK(total.sizes() == expected);
      CHECK(average.sizes() == expected);
      check_values(total, reduce_reference(values, 3, 4, dim, nansum_of), 1e-15);
      check_values(average, reduce_reference(values, 3, 4, dim, nanmean_of), 1e-15);
    }
  }
  // A row of NaN: nansum 0, nanmean NaN; an empty reduction: 0 and NaN.
  const Tensor all_nan = doubles({kNaN, kNaN, 1.0, 2.0}, {2, 2});
  check_values(nansum(all_nan, {1}), {0.0, 3.0});
  check_values(nanmean(all_nan, {1}), {kNaN, 1.5});
  check_values(nansum(doubles({}, {0, 3}), {0}), {0.0, 0.0, 0.0});
  check_values(nanmean(doubles({}, {0, 3}), {0}), {kNaN, kNaN, kNaN});
  const Tensor single = nanmean(floats({1.0, kNaN, 2.0}, {3}, kFloat32));
  CHECK(single.dtype() == kFloat32);
  check_values(single, {1.5});
}

TEST_CASE("nansum sums integers and bools to int64 like sum, nanmean refuses them") {
  const Tensor integers = from_vector<int32_t>({4, -1, 7, 2}, {2, 2});
  const Tensor total = nansum(integers, {0});
  CHECK(total.dtype() == kInt64);
  CHECK(total.to_vector<int64_t>() == std::vector<int64_t>{11, 1});
  CHECK(nansum(from_vector<bool>({true, true, false}, {3})).item<int64_t>() == 2);
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { nanmean(integers); });
  CHECK(message.find("nanmean: expected a floating-point input, got int32 (shape [2, 2])") != std::string::npos);
  CHECK(names_line(message, line));
  CHECK(error_of([&] { nansum(integers, {2}); }).find("nansum") != std::string::npos);
  CHECK(error_of([&] { nanmean(total.to(kFloat32), {0, 0}); }).find("nanmean") != std::string::npos);
}

TEST_CASE("nansum's and nanmean's gradients are 0 at NaN and by finite differences elsewhere") {
  const Tensor a = doubles({1.0, kNaN, 3.0, kNaN, 5.0, 6.0}, {2, 3}).requires_grad_();
  nansum(a, {1}).backward(doubles({2.0, 10.0}));
  check_values(a.grad(), {2.0, 0.0, 2.0, 0.0, 10.0, 10.0}, 1e-15);
  const Tensor b = doubles({1.0, kNaN, 3.0, kNaN, 5.0, 6.0}, {2, 3}).requires_grad_();
  nanmean(b, {1}).backward(doubles({2.0, 10.0}));
  check_values(b.grad(), {1.0, 0.0, 1.0, 0.0, 5.0, 5.0}, 1e-15);
  gradcheck_leaves([](const std::vector<Tensor>& x) { return nansum(x[0].t(), {1}, true); }, {leaf({3, 4}, 71)});
  gradcheck_leaves([](const std::vector<Tensor>& x) { return nanmean(x[0], {0}); }, {leaf({3, 4}, 72)});
}

TEST_CASE("var_mean and std_mean return (var, mean) and (std, mean) with var's corrections") {
  const Tensor input = small_tensor({4, 3}, 73).t();  // [3, 4]
  const std::vector<double> values = values_of(input);
  for (int64_t correction : {0, 1, 2}) {
    for (int dim : {-1, 0, 1}) {
      INFO("correction " << correction << " dim " << dim);
      const Dims dims = dim < 0 ? Dims{} : Dims{dim};
      const auto [variance, center] = var_mean(input, dims, correction, true);
      const auto [deviation, center_too] = std_mean(input, dims, correction);
      check_values(variance, reduce_reference(values, 3, 4, dim, [&](const auto& v) { return var_of(v, correction); }),
                   1e-14);
      check_values(deviation,
                   reduce_reference(values, 3, 4, dim, [&](const auto& v) { return std::sqrt(var_of(v, correction)); }),
                   1e-14);
      check_values(center, reduce_reference(values, 3, 4, dim, mean_of), 1e-15);
      check_values(center_too, reduce_reference(values, 3, 4, dim, mean_of), 1e-15);
      CHECK(variance.dim() == 2);
      CHECK(deviation.dim() == (dim < 0 ? 0 : 1));
    }
  }
  gradcheck_leaves(
      [](const std::vector<Tensor>& x) {
        const auto [variance, center] = var_mean(x[0], {1});
        return add(variance, mul(center, 3.0));
      },
      {leaf({3, 4}, 74)});
  gradcheck_leaves(
      [](const std::vector<Tensor>& x) {
        const auto [deviation, center] = std_mean(x[0], {0}, 0);
        return add(deviation, mul(center, -2.0));
      },
      {leaf({3, 4}, 75)});
  const Tensor integers = from_vector<int64_t>({1, 2}, {2});
  CHECK(error_of([&] { var_mean(integers); }).find("var_mean: expected a floating-point input, got int64") !=
        std::string::npos);
  CHECK(error_of([&] { std_mean(integers); }).find("std_mean: expected a floating-point input, got int64") !=
        std::string::npos);
  CHECK(error_of([&] { std_mean(input, {3}); }).find("std_mean") != std::string::npos);
}

TEST_CASE("aminmax returns (amin, amax) over a dim or all elements, for every dtype") {
  const Tensor input = doubles({2.0, -1.0, 7.0, -0.5, 3.0, 3.0, -4.0, 9.0, 0.25, 1.0, 8.0, -6.0}, {4, 3}).t();
  auto smallest = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
  auto largest = [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); };
  for (DType dtype : {kFloat64, kFloat32, kInt64, kInt32}) {
    const Tensor typed = input.to(dtype);
    const std::vector<double> values = values_of(typed);  // integers truncated
    for (int dim : {-1, 0, 1}) {
      INFO(dtype_name(dtype) << " dim " << dim);
      const auto [low, high] = dim < 0 ? aminmax(typed) : aminmax(typed, dim, true);
      CHECK(low.dtype() == dtype);
      check_values(low, reduce_reference(values, 3, 4, dim, smallest));
      check_values(high, reduce_reference(values, 3, 4, dim, largest));
      CHECK(low.dim() == (dim < 0 ? 0 : 2));
    }
  }
  const auto [low, high] = aminmax(doubles({1.0, kNaN, -3.0}));
  check_values(low, {kNaN});
  check_values(high, {kNaN});
  const auto [no, yes] = aminmax(from_vector<bool>({true, false, true}, {3}));
  CHECK_FALSE(no.item<bool>());
  CHECK(yes.item<bool>());
  const auto [kept_low, kept_high] = aminmax(input, std::nullopt, true);
  CHECK(kept_low.sizes() == Dims{1, 1});
  CHECK(std::get<0>(aminmax(doubles({}, {0, 3}), 1)).sizes() == Dims{0});
  const auto [scalar_low, scalar_high] = aminmax(scalar_tensor(2.5, {.dtype = kFloat64}), -1);
  check_values(scalar_high, {2.5});
  const int line = __LINE__ + 1;
  std::string message = error_of([&] { aminmax(doubles({}, {2, 0})); });
  CHECK(message.find("aminmax: cannot compute aminmax over an empty tensor (shape [2, 0])") != std::string::npos);
  CHECK(names_line(message, line));
  message = error_of([&] { aminmax(doubles({}, {2, 0}), 1); });
  CHECK(message.find("aminmax: expected reduction dim 1 to have non-zero size (input shape [2, 0])") !=
        std::string::npos);
  CHECK(error_of([&] { aminmax(input, 2); }).find("aminmax: dim 2 is out of range") != std::string::npos);
}

// ---- median, nanmedian ----

namespace {

struct Picked {
  double value;
  int64_t index;
};

// PyTorch's CPU median kernel along a row: with a NaN (median), the first NaN; else the element at
// position (n - 1) / 2 (nanmedian: (n - nans - 1) / 2, 0 when all are NaN) of the (value, index)
// order with NaN last.
Picked median_reference(const std::vector<double>& row, bool ignore_nan) {
  const int64_t n = static_cast<int64_t>(row.size());
  int64_t nans = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isnan(row[i])) continue;
    if (!ignore_nan) return {row[i], i};
    ++nans;
  }
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) {
    if (std::isnan(row[i]) || std::isnan(row[j])) return !std::isnan(row[i]) && std::isnan(row[j]);
    return row[i] < row[j] || (row[i] == row[j] && i < j);
  });
  const int64_t position = ignore_nan ? std::max<int64_t>(0, (n - nans - 1) / 2) : (n - 1) / 2;
  return {row[order[position]], order[position]};
}

}  // namespace

TEST_CASE("median and nanmedian along a dim pick PyTorch's value and index, ties and NaNs included") {
  // Rows with ties, NaNs, an even count (the lower median), infinities and signed zeros.
  const Tensor base = doubles({2.0,  1.0,  2.0,  2.0,  3.0,  5.0,    //
                               kNaN, 1.0,  kNaN, 0.5,  4.0,  -1.0,   //
                               0.0,  -0.0, 0.0,  -0.0, kInf, -kInf,  //
                               kNaN, kNaN, kNaN, kNaN, kNaN, kNaN},
                              {4, 6});
  for (bool ignore_nan : {false, true}) {
    for (int64_t dim : {1, 0, -1}) {
      for (bool keepdim : {false, true}) {
        INFO("ignore_nan " << ignore_nan << " dim " << dim << " keepdim " << keepdim);
        const Tensor input = dim == 0 ? base.t() : base;  // [6, 4] strided for dim 0
        const auto [values, indices] = ignore_nan ? nanmedian(input, dim, keepdim) : median(input, dim, keepdim);
        std::vector<double> expected_values;
        std::vector<double> expected_indices;
        const std::vector<double> all = values_of(base);
        for (int64_t r = 0; r < 4; ++r) {
          const std::vector<double> row(all.begin() + r * 6, all.begin() + r * 6 + 6);
          const Picked picked = median_reference(row, ignore_nan);
          expected_values.push_back(picked.value);
          expected_indices.push_back(static_cast<double>(picked.index));
        }
        CHECK(indices.dtype() == kInt64);
        CHECK(values.sizes() == (keepdim ? (dim == 0 ? Dims{1, 4} : Dims{4, 1}) : Dims{4}));
        check_values(values, expected_values);
        check_values(indices, expected_indices);
      }
    }
  }
}

TEST_CASE("median over all elements is the lower median, NaN with any NaN, nanmedian skips them") {
  auto reference = [](std::vector<double> values, bool ignore_nan) {
    std::vector<double> kept;
    for (double v : values)
      if (!std::isnan(v)) kept.push_back(v);
    if (kept.size() != values.size() && (!ignore_nan || kept.empty())) return kNaN;
    std::stable_sort(kept.begin(), kept.end());  // of equal values (0.0, -0.0) the input order
    return kept[(kept.size() - 1) / 2];
  };
  const std::vector<std::vector<double>> cases{{4.0, 1.0, 3.0, 2.0}, {5.0, kNaN, 1.0, 3.0},         {kNaN, kNaN},
                                               {-0.0, 0.0, -0.0},    {kInf, -kInf, kInf, 1.0, 2.0}, {7.0}};
  for (const std::vector<double>& values : cases) {
    const Tensor input = doubles(values, {static_cast<int64_t>(values.size()), 1}).t();
    for (bool ignore_nan : {false, true}) {
      INFO("values " << values.size() << " ignore_nan " << ignore_nan);
      const Tensor result = ignore_nan ? nanmedian(input) : median(input);
      CHECK(result.dim() == 0);
      check_values(result, {reference(values, ignore_nan)});
    }
  }
  // Integers and bools; an empty floating input gives NaN, an empty integer one is an error.
  const Tensor integers = from_vector<int64_t>({9, -3, 4, 4, 100, 2}, {2, 3});
  CHECK(median(integers).item<int64_t>() == 4);
  CHECK(std::get<1>(median(integers, 1)).to_vector<int64_t>() == std::vector<int64_t>{2, 0});
  CHECK_FALSE(median(from_vector<bool>({true, false, false, true}, {4})).item<bool>());
  check_values(median(doubles({}, {0, 2})), {kNaN});
  check_values(nanmedian(scalar_tensor(-2.5, {.dtype = kFloat64})), {-2.5});
  const auto [value, index] = median(scalar_tensor(1.5, {.dtype = kFloat32}), 0);
  check_values(value, {1.5});
  CHECK(index.item<int64_t>() == 0);
  CHECK(std::get<0>(median(doubles({}, {0, 3}), 1)).sizes() == Dims{0});
}

TEST_CASE("median's gradient: shared by every tie over all elements, to the picked index along a dim") {
  const Tensor a = leaf_of({1.0, 3.0, 3.0, 5.0, 3.0, 0.5});
  median(a).backward(scalar_tensor(6.0, {.dtype = kFloat64}));
  check_values(a.grad(), {0.0, 2.0, 2.0, 0.0, 2.0, 0.0}, 1e-15);
  const Tensor b = leaf_of({kNaN, 2.0, kNaN});
  median(b).backward();
  check_values(b.grad(), {0.5, 0.0, 0.5}, 1e-15);
  const Tensor c = leaf_of({kNaN, 2.0, -kInf, 4.0});
  nanmedian(c).backward();
  check_values(c.grad(), {0.0, 1.0, 0.0, 0.0}, 1e-15);
  const Tensor d = leaf_of({kInf, kInf, 1.0, kInf});
  const Tensor infinite = median(d);
  check_values(infinite, {kInf});
  infinite.backward();
  check_values(d.grad(), {1.0 / 3, 1.0 / 3, 0.0, 1.0 / 3}, 1e-15);
  // Along a dim the picked element (index 2, the middle of the three 2s) gets it all.
  const Tensor e = doubles({2.0, 1.0, 2.0, 2.0, 3.0, 5.0}, {1, 6}).requires_grad_();
  std::get<0>(median(e, 1)).backward(doubles({4.0}));
  check_values(e.grad(), {0.0, 0.0, 4.0, 0.0, 0.0, 0.0}, 1e-15);
  gradcheck_leaves([](const std::vector<Tensor>& x) { return std::get<0>(nanmedian(x[0].t(), 0, true)); },
                   {leaf({4, 5}, 81)});
  gradcheck_leaves([](const std::vector<Tensor>& x) { return median(x[0]); }, {leaf({3, 5}, 82)});
}

TEST_CASE("median and nanmedian refuse bool along a dim, empty dims and empty integer inputs") {
  const Tensor flags = from_vector<bool>({true, false}, {2});
  const int line = __LINE__ + 1;
  std::string message = error_of([&] { median(flags, 0); });
  CHECK(message.find("median: bool tensors are not supported along a dim (input shape [2])") != std::string::npos);
  CHECK(names_line(message, line));
  message = error_of([&] { nanmedian(doubles({}, {3, 0}), 1); });
  CHECK(message.find("nanmedian: expected reduction dim 1 to have non-zero size (input shape [3, 0])") !=
        std::string::npos);
  message = error_of([&] { median(from_vector<int64_t>({}, {0})); });
  CHECK(message.find("median: an empty int64 tensor (shape [0]) has no median") != std::string::npos);
  CHECK(error_of([&] { median(flags.to(kFloat32), 1); }).find("median: dim 1 is out of range") != std::string::npos);
}

// ---- quantile, nanquantile ----

namespace {

// PyTorch's quantile_compute on one row: rank q (n - 1) among the sorted values (any NaN: the last
// rank, a NaN; nanquantile: among the non-NaN values, rank 0 when there are none), then the
// interpolation.
double quantile_reference(std::vector<double> row, double q, QuantileInterpolation interpolation, bool ignore_nan) {
  std::vector<double> kept;
  for (double v : row)
    if (!std::isnan(v)) kept.push_back(v);
  if (kept.size() != row.size() && (!ignore_nan || kept.empty())) return kNaN;
  std::sort(kept.begin(), kept.end());
  const double rank = q * static_cast<double>(kept.size() - 1);
  const double below = kept[static_cast<size_t>(std::floor(rank))];
  const double above = kept[static_cast<size_t>(std::ceil(rank))];
  switch (interpolation) {
    case QuantileInterpolation::Lower:
      return below;
    case QuantileInterpolation::Higher:
      return above;
    case QuantileInterpolation::Nearest:
      return kept[static_cast<size_t>(std::nearbyint(rank))];
    case QuantileInterpolation::Midpoint:
      return lerp_reference(below, above, 0.5);
    case QuantileInterpolation::Linear:
      return lerp_reference(below, above, rank - std::floor(rank));
  }
  return kNaN;
}

}  // namespace

TEST_CASE("quantile and nanquantile follow PyTorch's ranks and interpolations, q scalar or 1-D") {
  const Tensor base = doubles({3.0,  1.0,  4.0,  1.5,  9.0,   //
                               2.0,  kNaN, 6.0,  5.0,  3.0,   //
                               kNaN, kNaN, kNaN, kNaN, kNaN,  //
                               -1.0, 8.0,  -1.0, 0.5,  7.0},
                              {4, 5});
  const std::vector<double> all = values_of(base);
  const std::vector<double> qs{0.0, 0.25, 0.375, 0.5, 0.625, 0.9, 1.0};
  for (bool ignore_nan : {false, true}) {
    for (auto interpolation :
         {QuantileInterpolation::Linear, QuantileInterpolation::Lower, QuantileInterpolation::Higher,
          QuantileInterpolation::Midpoint, QuantileInterpolation::Nearest}) {
      INFO("ignore_nan " << ignore_nan << " interpolation " << static_cast<int>(interpolation));
      const auto run = [&](const Tensor& input, const auto& q, std::optional<int64_t> dim, bool keepdim) {
        return ignore_nan ? nanquantile(input, q, dim, keepdim, interpolation)
                          : quantile(input, q, dim, keepdim, interpolation);
      };
      // Along dim 1 (and dim 0 of the transpose), q as a 1-D tensor: [Q, 4].
      std::vector<double> expected;
      for (double q : qs)
        for (int64_t r = 0; r < 4; ++r)
          expected.push_back(
              quantile_reference({all.begin() + r * 5, all.begin() + r * 5 + 5}, q, interpolation, ignore_nan));
      const Tensor q_tensor = doubles(qs);
      const Tensor rows = run(base, q_tensor, 1, false);
      CHECK(rows.sizes() == Dims{7, 4});
      check_values(rows, expected, 1e-15);
      const Tensor columns = run(base.t(), q_tensor, 0, true);
      CHECK(columns.sizes() == Dims{7, 1, 4});
      check_values(columns, expected, 1e-15);
      // Over all elements with a scalar q.
      const Tensor finite_rows = base.slice(0, 0, 2);
      const std::vector<double> finite(all.begin(), all.begin() + 10);
      const Tensor whole = run(finite_rows, 0.3, std::nullopt, false);
      CHECK(whole.dim() == 0);
      check_values(whole, {quantile_reference(finite, 0.3, interpolation, ignore_nan)}, 1e-15);
      CHECK(run(finite_rows, 0.3, std::nullopt, true).sizes() == Dims{1, 1});
    }
  }
  // float32 computes in float32; a 0-d input reduces to itself.
  const Tensor single = quantile(doubles({1.0, 2.0, 4.0}).to(kFloat32), 0.75);
  CHECK(single.dtype() == kFloat32);
  check_values(single, {3.0});
  check_values(quantile(scalar_tensor(2.5, {.dtype = kFloat64}), 0.5, 0), {2.5});
}

TEST_CASE("quantile's gradient reaches the two neighbouring ranks, by finite differences") {
  gradcheck_leaves(
      [](const std::vector<Tensor>& x) {
        return quantile(x[0], doubles({0.2, 0.5, 0.95}), 1);
      },
      {leaf({3, 6}, 91)});
  gradcheck_leaves([](const std::vector<Tensor>& x) { return nanquantile(x[0].t(), 0.4, 0, true); },
                   {leaf({4, 3}, 92)});
  const Tensor a = leaf_of({4.0, 1.0, 2.0, 3.0});
  quantile(a, 0.5).backward();  // rank 1.5: halfway between 2 and 3
  check_values(a.grad(), {0.0, 0.0, 0.5, 0.5}, 1e-15);
}

TEST_CASE("quantile with a double q checks it on the host and reads no tensor, a tensor q is read on the CPU") {
  const Tensor a = from_vector<double>({4.0, 1.0, 2.0, 3.0});
  HostReadRecorder recorder;
  {
    DispatchModeGuard guard(recorder);
    quantile(a, 0.5);
    nanquantile(a, 0.25);
  }
  CHECK(recorder.reads.empty());
  {
    DispatchModeGuard guard(recorder);
    quantile(a, from_vector<double>({0.5}));  // PyTorch's CPU range check reads q
  }
  CHECK(recorder.reads.size() == 1);
}

TEST_CASE("quantile refuses PyTorch's bad arguments") {
  const Tensor input = doubles({1.0, 2.0, 3.0});
  const int line = __LINE__ + 1;
  std::string message = error_of([&] { quantile(input, 1.5); });
  CHECK(message.find("quantile: q must be in the range [0, 1] but got 1.5") != std::string::npos);
  CHECK(names_line(message, line));
  message = error_of([&] { nanquantile(input, doubles({0.5, -0.1})); });
  CHECK(message.find("nanquantile: q values must be in the range [0, 1] (q of shape [2])") != std::string::npos);
  message = error_of([&] { quantile(input, doubles({0.5, 0.1}, {1, 2})); });
  CHECK(message.find("quantile: q must be a scalar or 1-D tensor, got shape [1, 2]") != std::string::npos);
  message = error_of([&] { quantile(input, doubles({0.5}).to(kFloat32)); });
  CHECK(message.find("quantile: the q tensor must have the input's dtype float64, got float32") != std::string::npos);
  message = error_of([&] { quantile(input.to(kInt64), 0.5); });
  CHECK(message.find("quantile: the input tensor must be either float32 or float64, got int64") != std::string::npos);
  message = error_of([&] { quantile(doubles({}, {0}), 0.5); });
  CHECK(message.find("quantile: the input tensor must be non-empty (shape [0])") != std::string::npos);
  CHECK(error_of([&] { quantile(input, 0.5, 1); }).find("quantile: dim 1 is out of range") != std::string::npos);
}

}  // namespace test_math_more_statistics
