// Review of the new shape, einsum and select ops against PyTorch 2.x: the edge cases their own tests
// (test_shape_more, test_einsum, test_select_ops) leave out, each checked against a reference computed here.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_new_ops_review {

using namespace ember;
using ember::testing::error_of;
using ember::testing::values_of;

TEST_CASE("histc: a float16 step past 65504 still bins each element inside [min, max]") {
  // (x - min) * bins rounded to float16 overflows to inf for x - min > 655: PyTorch's kernel then
  // casts inf to int64 (undefined) and indexes its histogram with it. Here each element lands in
  // the bin floor((x - min) * bins / (max - min)) a float64 computation gives, the top edge in the last.
  // 250 * 100 = 25000 is within float16 (rounded to 24992: still bin 12); the others overflow.
  const std::vector<double> data{0.0, 250.0, 1000.0, 1999.0, 2000.0};
  const Tensor a = from_vector<double>(data, Dims{5}, TensorOptions{.dtype = kFloat64}).to(kFloat16);
  const int64_t bins = 100;
  std::vector<double> expected(bins, 0.0);
  for (const double x : data)
    expected[std::min<int64_t>(static_cast<int64_t>(std::floor(x * bins / 2000.0)), bins - 1)] += 1;
  const Tensor counts = histc(a, bins, 0.0, 2000.0);
  CHECK(counts.dtype() == kFloat16);
  CHECK(values_of(counts.to(kFloat64)) == expected);
  // A range wider than 65504 makes max - min itself inf in float16.
  const std::vector<double> wide_data{-40000.0, -20000.0, 0.0, 39000.0};
  const Tensor wide = from_vector<double>(wide_data, Dims{4}, TensorOptions{.dtype = kFloat64}).to(kFloat16);
  std::vector<double> wide_expected(4, 0.0);
  for (const double x : wide_data) wide_expected[static_cast<int64_t>(std::floor((x + 40000.0) * 4 / 80000.0))] += 1;
  CHECK(values_of(histc(wide, 4, -40000.0, 40000.0).to(kFloat64)) == wide_expected);
}

TEST_CASE("histc: float32 and float64 steps past the dtype's largest value still bin each element") {
  // (x - min) * bins overflows float32 for x - min > 3.4e38 / bins, and x - min itself for a range
  // wider than 3.4e38 (float64: 1.8e308): the step was inf or NaN, cast to an index. The reference
  // is floor((x - min) / (max - min) * bins) in float64 (long double for the float64 input).
  const auto expected_bins = [](const std::vector<long double>& data, long double low, long double high, int64_t bins) {
    std::vector<double> counts(static_cast<size_t>(bins), 0.0);
    for (const long double x : data) {
      const auto bin = static_cast<int64_t>(std::floor((x - low) / (high - low) * bins));
      counts[static_cast<size_t>(std::min(bin, bins - 1))] += 1;
    }
    return counts;
  };
  const std::vector<double> near_limit_data{0.0, 3.05e37, 1.55e38, 3e38};
  const Tensor near_limit =
      from_vector<double>(near_limit_data, Dims{4}, TensorOptions{.dtype = kFloat64}).to(kFloat32);
  std::vector<long double> near_limit_rounded;
  for (const double x : values_of(near_limit)) near_limit_rounded.push_back(x);
  const auto float_edge = static_cast<long double>(static_cast<float>(3e38));
  CHECK(values_of(histc(near_limit, 100, 0.0, 3e38).to(kFloat64)) ==
        expected_bins(near_limit_rounded, 0.0L, float_edge, 100));
  const std::vector<double> wide_data{-3e38, -1e38, 0.0, 2e38, 3e38};
  const Tensor wide = from_vector<double>(wide_data, Dims{5}, TensorOptions{.dtype = kFloat64}).to(kFloat32);
  std::vector<long double> wide_rounded;
  for (const double x : values_of(wide)) wide_rounded.push_back(x);
  CHECK(values_of(histc(wide, 4, -3e38, 3e38).to(kFloat64)) == expected_bins(wide_rounded, -float_edge, float_edge, 4));
  const std::vector<double> double_data{-1.5e308, -1e308, 0.0, 1.2e308, 1.5e308};
  const Tensor doubles = from_vector<double>(double_data, Dims{5}, TensorOptions{.dtype = kFloat64});
  const std::vector<long double> double_wide(double_data.begin(), double_data.end());
  CHECK(values_of(histc(doubles, 4, -1.5e308, 1.5e308)) ==
        expected_bins(double_wide, double_wide.front(), double_wide.back(), 4));
}

TEST_CASE("histc: a range that rounds to one value of the dtype is refused, not divided by") {
  // 1e8 - 1 and 1e8 + 1 (the widened range of constant data) are both 1e8 in float32: PyTorch's
  // kernel computes 0 / 0 and casts the NaN to an index. float64 tells them apart.
  const Tensor constant = full({3}, 1e8, TensorOptions{.dtype = kFloat32});
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { histc(constant, 4); });
  INFO(message);
  CHECK(message.find("histc") != std::string::npos);
  CHECK(ember::testing::names_line(message, line));
  const Tensor wide = histc(constant.to(kFloat64), 4);
  CHECK(values_of(wide) == std::vector<double>{0.0, 0.0, 3.0, 0.0});
}

TEST_CASE("bincount: a value of INT64_MAX, whose count would need INT64_MAX + 1 bins, is refused") {
  // max + 1 overflowed to INT64_MIN, so the counts got max(INT64_MIN, minlength) = 0 bins and the
  // value was counted past their end (a heap overwrite). PyTorch's max + 1 overflows the same way.
  const Tensor largest =
      from_vector<int64_t>({0, std::numeric_limits<int64_t>::max()}, Dims{2}, TensorOptions{.dtype = kInt64});
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { bincount(largest); });
  INFO(message);
  CHECK(message.find("bincount") != std::string::npos);
  CHECK(message.find(std::to_string(std::numeric_limits<int64_t>::max())) != std::string::npos);
  CHECK(ember::testing::names_line(message, line));
}

TEST_CASE("diag, diag_embed, diagflat: an offset whose matrix side n + |offset| overflows int64 is refused by name") {
  // n + |offset| (and |INT64_MIN| itself) overflowed: undefined, then a refusal from pad or the
  // allocator that names neither the function nor its offset. PyTorch computes the same sum.
  const int64_t largest = std::numeric_limits<int64_t>::max(), smallest = std::numeric_limits<int64_t>::min();
  const Tensor vector = ones({2});
  const auto expect_refusal = [](const std::string& message, const std::string& function, int64_t offset, int line) {
    INFO(message);
    CHECK(message.rfind(function + ":", 0) == 0);
    CHECK(message.find(std::to_string(offset)) != std::string::npos);
    CHECK(ember::testing::names_line(message, line));
  };
  int line = __LINE__ + 1;
  expect_refusal(error_of([&] { diag(vector, largest); }), "diag", largest, line);
  line = __LINE__ + 1;
  expect_refusal(error_of([&] { diag(vector, smallest); }), "diag", smallest, line);
  line = __LINE__ + 1;
  expect_refusal(error_of([&] { diag_embed(vector, smallest); }), "diag_embed", smallest, line);
  line = __LINE__ + 1;
  expect_refusal(error_of([&] { diagflat(vector, largest - 1); }), "diagflat", largest - 1, line);
  // A matrix's diagonal that far off lies outside it: empty, as PyTorch's.
  CHECK(diag(ones({2, 3}), smallest).numel() == 0);
  CHECK(diag(ones({2, 3}), largest).numel() == 0);
}

TEST_CASE("tensordot: a size-1 dim contracted against a longer one keeps an int32 operand int32") {
  // The longer dim is summed first (it broadcasts against the 1); sum widens int32 to int64, and mm then
  // refused the int32/int64 pair. PyTorch sums with the operand's dtype (t.sum(dim, true, t.scalar_type())).
  const TensorOptions int32{.dtype = kInt32};
  const std::vector<int32_t> a_values{1, -2, 3};                                    // a [1, 3]
  const std::vector<int32_t> b_values{4, 5, -6, 7, 8, 9, -10, 11, 12, 13, 14, 15};  // b [4, 3]
  const Tensor a = from_vector<int32_t>(a_values, Dims{1, 3}, int32);
  const Tensor b = from_vector<int32_t>(b_values, Dims{4, 3}, int32);
  // result[i, j] = sum over k of a[0, i] * b[k, j] (a's dim 0, of size 1, meets b's dim 0, of size 4).
  std::vector<double> expected;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      double total = 0;
      for (int k = 0; k < 4; ++k) total += a_values[i] * b_values[k * 3 + j];
      expected.push_back(total);
    }
  }
  const Tensor ab = tensordot(a, b, Dims{0}, Dims{0});
  CHECK(ab.dtype() == kInt32);
  CHECK(ab.sizes() == Dims{3, 3});
  CHECK(values_of(ab.to(kFloat64)) == expected);
  // The other way round: b's dim 0 summed against a's size-1 dim 0; result[j, i] holds the same sums.
  const Tensor ba = tensordot(b, a, Dims{0}, Dims{0});
  CHECK(ba.dtype() == kInt32);
  CHECK(values_of(ba.t().contiguous().to(kFloat64)) == expected);
}

}  // namespace test_new_ops_review
