// Shared by the tests of the composite losses and reductions (test_losses_*.cpp,
// test_reductions_*.cpp): loss reductions and grouped reductions as float64 loops, and a check
// that an error names the test's own line.
#pragma once

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "numeric_check.h"

namespace ember::testing {

inline constexpr Reduction kLossReductions[] = {Reduction::None, Reduction::Mean, Reduction::Sum};

// None keeps the losses, Sum adds them, Mean divides the sum by their count (nan for none).
inline std::vector<double> reduced(const std::vector<double>& losses, Reduction reduction) {
  if (reduction == Reduction::None) return losses;
  double total = 0.0;
  for (double loss : losses) total += loss;
  return {reduction == Reduction::Sum ? total : total / static_cast<double>(losses.size())};
}

// Whether `message` ends by naming `file`:`line`, the caller's line, not one inside ember.
inline bool names_line(const std::string& message, const std::string& file, int line) {
  return message.find(file + ":" + std::to_string(line)) != std::string::npos;
}

// Equal element by element, infinities included (check_close's difference of two infinities is
// NaN), NaN where NaN is expected.
inline void check_exactly(const Tensor& actual, const std::vector<double>& expected) {
  const std::vector<double> values = values_of(actual);
  REQUIRE(values.size() == expected.size());
  for (size_t i = 0; i < values.size(); ++i) {
    INFO("element " << i << ": got " << values[i] << ", expected " << expected[i]);
    CHECK((values[i] == expected[i] || (std::isnan(values[i]) && std::isnan(expected[i]))));
  }
}

// Applies `reduce` to each group of values that reducing over `dims` (empty: all) collapses,
// giving the results in the row-major order of the reduced shape.
inline std::vector<double> grouped_reference(const Tensor& input, const Dims& dims,
                                             const std::function<double(const std::vector<double>&)>& reduce) {
  const Dims& sizes = input.sizes();
  const std::vector<double> values = values_of(input);
  std::vector<bool> is_reduced(static_cast<size_t>(sizes.size()), dims.empty());
  for (int64_t dim : dims) is_reduced[static_cast<size_t>(dim < 0 ? dim + sizes.size() : dim)] = true;
  std::vector<int64_t> result_stride(static_cast<size_t>(sizes.size()), 0);
  int64_t count = 1;
  for (int d = sizes.size() - 1; d >= 0; --d) {
    if (is_reduced[d]) continue;
    result_stride[d] = count;
    count *= sizes[d];
  }
  std::vector<std::vector<double>> groups(static_cast<size_t>(count));
  for (size_t flat = 0; flat < values.size(); ++flat) {
    const std::vector<int64_t> index = unravel(static_cast<int64_t>(flat), sizes);
    int64_t group = 0;
    for (size_t d = 0; d < index.size(); ++d) group += index[d] * result_stride[d];
    groups[static_cast<size_t>(group)].push_back(values[flat]);
  }
  std::vector<double> results;
  for (const std::vector<double>& group : groups) results.push_back(reduce(group));
  return results;
}

}  // namespace ember::testing
