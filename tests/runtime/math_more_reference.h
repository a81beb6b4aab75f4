// What the math-composite tests share (test_math_more.cpp, test_math_more_statistics.cpp): a
// broadcasting reference loop over operands' values, exact or tolerant value checks, and float
// tensors made from doubles.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "finite_difference.h"

namespace ember::testing::math_more {


constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// A tensor's shape and its values in row-major order: an operand of a reference loop.
struct ShapedValues {
  Dims sizes;
  std::vector<double> values;
};
inline ShapedValues operand_of(const Tensor& tensor) { return {tensor.sizes(), values_of(tensor)}; }

inline Dims broadcast_of(const std::vector<ShapedValues>& operands) {
  int rank = 0;
  for (const ShapedValues& operand : operands) rank = std::max(rank, operand.sizes.size());
  Dims sizes = Dims::filled(rank, 1);
  for (const ShapedValues& operand : operands)
    for (int i = 0; i < operand.sizes.size(); ++i) {
      int64_t& merged = sizes[rank - operand.sizes.size() + i];
      if (merged == 1) merged = operand.sizes[i];
    }
  return sizes;
}

// fn(values of every operand at one broadcast position), for every position in row-major order.
inline std::vector<double> pointwise_reference(const std::vector<ShapedValues>& operands,
                                        const std::function<double(const std::vector<double>&)>& fn) {
  const Dims sizes = broadcast_of(operands);
  std::vector<double> result;
  for (int64_t flat = 0; flat < sizes.product(); ++flat) {
    std::vector<int64_t> index(sizes.size());
    for (int64_t rest = flat, d = sizes.size() - 1; d >= 0; --d) {
      index[d] = rest % sizes[d];
      rest /= sizes[d];
    }
    std::vector<double> arguments;
    for (const ShapedValues& operand : operands) {
      int64_t offset = 0;
      const int shift = sizes.size() - operand.sizes.size();
      for (int d = 0; d < operand.sizes.size(); ++d)
        offset = offset * operand.sizes[d] + (operand.sizes[d] == 1 ? 0 : index[d + shift]);
      arguments.push_back(operand.values[offset]);
    }
    result.push_back(fn(arguments));
  }
  return result;
}

// Equal values (NaN to NaN, a zero's sign included) when tolerance is 0, else within
// tolerance * max(1, |expected|); infinities must match exactly.
inline void check_values(const Tensor& actual, const std::vector<double>& expected, double tolerance = 0.0) {
  const std::vector<double> values = values_of(actual);
  REQUIRE(values.size() == expected.size());
  for (size_t i = 0; i < values.size(); ++i) {
    INFO("element " << i << ": got " << values[i] << ", expected " << expected[i]);
    if (std::isnan(expected[i]) || std::isinf(expected[i]) || tolerance == 0.0) {
      const bool same = (std::isnan(values[i]) && std::isnan(expected[i])) ||
                        (values[i] == expected[i] && std::signbit(values[i]) == std::signbit(expected[i]));
      CHECK(same);
    } else {
      CHECK(std::abs(values[i] - expected[i]) <= tolerance * std::max(1.0, std::abs(expected[i])));
    }
  }
}

inline Tensor floats(const std::vector<double>& values, const Dims& sizes, DType dtype) {
  return from_vector<double>(values, sizes, dtype_options(kFloat64)).to(dtype);
}

// PyTorch's lerp (ATen's Lerp.h): the form from `end` is exact at weight 1.
inline double lerp_reference(double start, double end, double weight) {
  return std::abs(weight) < 0.5 ? start + weight * (end - start) : end - (end - start) * (1.0 - weight);
}

}  // namespace ember::testing::math_more
