// What the solve family's shape rules check (runtime/ops/linalg_*_ops.cpp): the composites in
// runtime/linalg*.cpp check the user's call with torch's words first, and broadcast batch dims,
// so these catch direct op calls: square float matrices, and a right-hand side with A's batch.
#pragma once

#include "runtime/ops/registry.h"

namespace ember::ops {

// A is [*, n, n], float32 or float64.
inline void check_square_floating(const OpCall& call, const Tensor& a) {
  check(a.dim() >= 2 && a.size(-1) == a.size(-2), "{}: expected batches of square matrices [*, n, n], got shape {}",
        call.op.name, a.sizes());
  check(a.dtype() == kFloat32 || a.dtype() == kFloat64, "{}: expected a float32 or float64 matrix, got {}",
        call.op.name, a.dtype());
}

// B is [*, n, k] with A's batch dims and dtype.
inline void check_right_hand_side(const OpCall& call, const Tensor& a, const Tensor& b) {
  bool fits = b.dim() == a.dim() && b.size(-2) == a.size(-1);
  for (int d = 0; fits && d + 2 < a.dim(); ++d) fits = a.sizes()[d] == b.sizes()[d];
  check(fits, "{}: expected B of shape [*, {}, k] with A's batch dims, got A {} and B {}", call.op.name, a.size(-1),
        a.sizes(), b.sizes());
  check(b.dtype() == a.dtype(), "{}: expected A and B of one dtype, got {} and {}", call.op.name, a.dtype(), b.dtype());
  check(b.device() == a.device(), "{}: expected A and B on one device, got {} and {}", call.op.name, a.device(),
        b.device());
}

// `sizes` without its last `dropped` dims: pivots are [*, n], determinants [*].
inline Dims leading_dims(const Dims& sizes, int dropped) {
  Dims kept;
  for (int d = 0; d + dropped < sizes.size(); ++d) kept.push_back(sizes[d]);
  return kept;
}

// The last two dims swapped: the transpose the backward rules take.
inline Tensor matrix_transpose(const Tensor& t) { return transpose(t, -2, -1); }

}  // namespace ember::ops
