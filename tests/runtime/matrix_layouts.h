// Operand layouts the CPU GEMM tests (small_gemm, the BLAS library tiles) run products through.
#pragma once

#include <cstdint>
#include <vector>

namespace ember::testing {

// Where element (i, j) of a rows x cols operand lives in its buffer, and how big the buffer is.
struct Layout {
  const char* name;
  int64_t row_stride, col_stride, buffer_size;
};

// Row-major and column-major first (tests index [0] and [1]), then both with padding between rows
// or columns: every layout a BLAS library reads in place.
inline std::vector<Layout> blas_layouts(int64_t rows, int64_t cols) {
  return {{"row-major", cols, 1, rows * cols},
          {"column-major", 1, rows, rows * cols},
          {"row-major, rows padded", cols + 5, 1, rows * (cols + 5)},
          {"column-major, columns padded", 1, rows + 3, cols * (rows + 3)}};
}

}  // namespace ember::testing
