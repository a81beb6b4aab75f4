// A reference for torch.diagonal built by loops (tests/runtime/test_diagonal*.cpp): which
// row-major positions of the input the diagonal of a plane reads, and its float64 values.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "finite_difference.h"
#include "runtime/ember.h"

namespace ember::testing {

struct DiagonalExpected {
  Dims sizes;
  std::vector<double> values;
};

namespace diagonal_detail {

inline int wrapped(int64_t dim, int rank) { return static_cast<int>(dim < 0 ? dim + rank : dim); }

// Row-major position of `index` in a tensor of `sizes`.
inline int64_t flat_index(const std::vector<int64_t>& index, const Dims& sizes) {
  int64_t flat = 0;
  for (int d = 0; d < sizes.size(); ++d) flat = flat * sizes[d] + index[d];
  return flat;
}

}  // namespace diagonal_detail

// For each element of the diagonal of `sizes` (row-major over the kept dims, then along the
// diagonal), the row-major position it reads in the input. The diagonal's elements are counted by
// walking (row, column) from its first element until either leaves the plane.
inline std::vector<int64_t> diagonal_positions(const Dims& sizes, int64_t offset, int64_t dim1_given,
                                               int64_t dim2_given, Dims& result_sizes) {
  const int rank = sizes.size();
  const int dim1 = diagonal_detail::wrapped(dim1_given, rank), dim2 = diagonal_detail::wrapped(dim2_given, rank);
  const int64_t first_row = offset < 0 ? -offset : 0, first_column = offset > 0 ? offset : 0;
  int64_t length = 0;
  while (first_row + length < sizes[dim1] && first_column + length < sizes[dim2]) ++length;
  std::vector<int> kept;
  result_sizes = Dims{};
  for (int d = 0; d < rank; ++d) {
    if (d == dim1 || d == dim2) continue;
    kept.push_back(d);
    result_sizes.push_back(sizes[d]);
  }
  result_sizes.push_back(length);
  std::vector<int64_t> positions;
  std::vector<int64_t> outer(kept.size(), 0);  // an index over the kept dims, row-major
  const int64_t outer_count = result_sizes.product() / std::max<int64_t>(length, 1);
  for (int64_t o = 0; o < (length == 0 ? 0 : outer_count); ++o) {
    int64_t rest = o;
    for (int k = static_cast<int>(kept.size()) - 1; k >= 0; --k) {
      outer[k] = rest % sizes[kept[k]];
      rest /= sizes[kept[k]];
    }
    for (int64_t i = 0; i < length; ++i) {
      std::vector<int64_t> index(rank, 0);
      for (size_t k = 0; k < kept.size(); ++k) index[kept[k]] = outer[k];
      index[dim1] = first_row + i;
      index[dim2] = first_column + i;
      positions.push_back(diagonal_detail::flat_index(index, sizes));
    }
  }
  return positions;
}

inline DiagonalExpected diagonal_reference(const Tensor& input, int64_t offset, int64_t dim1, int64_t dim2) {
  const std::vector<double> values = values_of(input);
  DiagonalExpected expected;
  for (int64_t position : diagonal_positions(input.sizes(), offset, dim1, dim2, expected.sizes))
    expected.values.push_back(values[position]);
  return expected;
}

}  // namespace ember::testing
