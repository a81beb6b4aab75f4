// The errors the factorizations report, worded as torch's, shared by the CPU and CUDA kernels:
// a factorization finds a bad matrix only while it runs, so the kernels raise these.
#pragma once

#include <cstdint>

namespace ember {

// "<function>: (Batch element b): The diagonal element i is zero, the <solve|inversion> could
// not be completed because the input matrix is singular." `batched`: the input had batch dims
// (torch names the batch element only then); `diagonal` is 1-based (LAPACK's info).
[[noreturn]] void fail_singular(bool inverse, bool batched, int64_t batch, int64_t diagonal);

// torch's linalg.cholesky message naming the order (1-based) of the first leading minor that is
// not positive-definite.
[[noreturn]] void fail_not_positive_definite(bool batched, int64_t batch, int64_t order);

}  // namespace ember
