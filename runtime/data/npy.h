// NumPy .npy files: read_npy / write_npy.
//
// Read: format versions 1.0, 2.0 and 3.0; little-endian (or byte-order-free) data; C or Fortran
// order (Fortran-order data is transposed into an ordinary row-major tensor). dtypes:
//   <f4 -> float32   <f8 -> float64   <f2 -> float16   <i4 -> int32   <i8 -> int64   |b1 -> bool
//   |u1 |i1 <i2 <u2 -> int32 and <u4 -> int64 (ember has no narrower integers; widening is exact).
// Anything else (big-endian, uint64, complex, strings, structured or object arrays) is an error.
// Write: float32/float64/float16/int32/int64/bool in format 1.0 (2.0 when the header needs it);
// bfloat16 has no NumPy dtype and is an error.
// Errors are ember::Error naming the path and what is wrong; a reader never reads past the data.
#pragma once

#include <filesystem>

#include "runtime/tensor.h"

namespace ember::data {

Tensor read_npy(const std::filesystem::path& path, Where where = Where::current());
void write_npy(const std::filesystem::path& path, const Tensor& tensor, Where where = Where::current());

}  // namespace ember::data
