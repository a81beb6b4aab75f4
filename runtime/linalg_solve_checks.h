// The checks every function of runtime/linalg.h makes on the user's call, in torch's words, and
// the batch broadcasting of A against B: the composites run these before the registry ops.
#pragma once

#include <string_view>
#include <utility>

#include "runtime/autocast.h"
#include "runtime/functional.h"

namespace ember::linalg_detail {

// Inside an AutocastGuard the registry ops run 16-bit floats in float32 (runtime/autocast.cpp), so
// the composites let them through to be cast there.
inline bool cast_by_autocast(DType dtype) { return autocast_enabled() && (dtype == kBFloat16 || dtype == kFloat16); }

// A is [*, n, n] with n rows and columns, float32 or float64.
inline void check_square_floating(std::string_view function, const Tensor& a, const char* name = "A") {
  check(a.dim() >= 2, "{}: The input tensor {} must have at least 2 dimensions (got shape {}).", function, name,
        a.sizes());
  check(a.size(-1) == a.size(-2), "{}: {} must be batches of square matrices, but they are {} by {} matrices", function,
        name, a.size(-2), a.size(-1));
  check(a.dtype() == kFloat32 || a.dtype() == kFloat64 || cast_by_autocast(a.dtype()),
        "{}: Expected a float32 or float64 tensor as input. Got {} (shape {})", function, a.dtype(), a.sizes());
}

inline void check_same_dtype_device(std::string_view function, const Tensor& a, const Tensor& b) {
  check(a.dtype() == b.dtype() || (autocast_enabled() && is_floating(a.dtype()) && is_floating(b.dtype())),
        "{}: Expected A and B to have the same dtype, but found A of type {} and B of type {} instead", function,
        a.dtype(), b.dtype());
  check(a.device() == b.device(), "{}: Expected A and B on the same device, but found A on {} and B on {}", function,
        a.device(), b.device());
}

inline Dims batch_of(const Tensor& t, int matrix_dims = 2) {
  Dims batch;
  for (int d = 0; d + matrix_dims < t.dim(); ++d) batch.push_back(t.sizes()[d]);
  return batch;
}

inline Dims with_matrix(Dims batch, int64_t rows, int64_t cols) {
  batch.push_back(rows);
  batch.push_back(cols);
  return batch;
}

// A [*a, n, n] and B [*b, n, k] expanded to the broadcast batch: the registry ops take one batch.
inline std::pair<Tensor, Tensor> broadcast_batches(std::string_view function, const Tensor& a, const Tensor& b) {
  const Dims batch = broadcast_shapes(batch_of(a), batch_of(b), function);
  return {expand(a, with_matrix(batch, a.size(-2), a.size(-1))), expand(b, with_matrix(batch, b.size(-2), b.size(-1)))};
}

inline Tensor matrix_transpose(const Tensor& t) { return transpose(t, -2, -1); }

}  // namespace ember::linalg_detail
