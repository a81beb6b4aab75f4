// Float64 loop references for sort, topk and kthvalue (test_sort*.cpp): each row along a dim in a
// stable sort's order with NaN larger than every number, as PyTorch orders it.
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "numeric_check.h"

namespace ember::testing {

struct SortedRows {
  std::vector<double> values;   // row-major, `kept` elements along dim
  std::vector<double> indices;
};

// Whether a comes before b: NaN last ascending, first descending; equal values in neither order.
inline bool reference_before(double a, double b, bool descending) {
  const bool a_nan = std::isnan(a), b_nan = std::isnan(b);
  if (a_nan || b_nan) return descending ? a_nan && !b_nan : !a_nan && b_nan;
  return descending ? a > b : a < b;
}

// The first `kept` elements of every row along `dim` of a stable sort of `input` (any dtype and
// layout; a 0-d input is one row of one).
inline SortedRows reference_sort(const Tensor& input, int64_t dim, bool descending, int64_t kept) {
  const std::vector<double> values = values_of(input);
  const Dims& sizes = input.sizes();
  int64_t outer = 1, length = 1, inner = 1;
  if (input.dim() > 0) {
    const int d = static_cast<int>(dim < 0 ? dim + input.dim() : dim);
    for (int i = 0; i < input.dim(); ++i) (i < d ? outer : i == d ? length : inner) *= sizes[i];
  } else {
    kept = 1;
  }
  SortedRows sorted;
  sorted.values.assign(static_cast<size_t>(outer * kept * inner), 0.0);
  sorted.indices.assign(sorted.values.size(), 0.0);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      std::vector<int64_t> order(static_cast<size_t>(length));
      std::iota(order.begin(), order.end(), int64_t{0});
      const auto at = [&](int64_t r) { return values[static_cast<size_t>((o * length + r) * inner + i)]; };
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return reference_before(at(a), at(b), descending); });
      for (int64_t r = 0; r < kept; ++r) {
        const auto out = static_cast<size_t>((o * kept + r) * inner + i);
        sorted.values[out] = at(order[r]);
        sorted.indices[out] = static_cast<double>(order[r]);
      }
    }
  }
  return sorted;
}

// Small whole numbers (many ties), exact in every dtype, with a NaN at every seventh element when
// `with_nan`.
inline std::vector<double> tied_values(int64_t count, uint32_t seed, bool with_nan, double low = -3, double high = 3) {
  std::vector<double> values = random_values(count, seed);
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = std::round(low + (values[i] + 2.0) / 4.0 * (high - low));
    if (with_nan && i % 7 == 3) values[i] = NAN;
  }
  return values;
}

}  // namespace ember::testing
