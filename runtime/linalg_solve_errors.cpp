// The singular and not-positive-definite errors of the factorizations; see linalg_solve_errors.h.
#include "runtime/linalg_solve_errors.h"

#include <string>

#include "runtime/error.h"

namespace ember {

namespace {

std::string batch_prefix(bool batched, int64_t batch) {
  return batched ? fmt::format("(Batch element {}): ", batch) : std::string();
}

}  // namespace

void fail_singular(bool inverse, bool batched, int64_t batch, int64_t diagonal) {
  fail("{}: {}The diagonal element {} is zero, the {} could not be completed because the input matrix is singular.",
       inverse ? "linalg.inv" : "linalg.solve", batch_prefix(batched, batch), diagonal,
       inverse ? "inversion" : "solve");
}

void fail_not_positive_definite(bool batched, int64_t batch, int64_t order) {
  fail(
      "linalg.cholesky: {}The factorization could not be completed because the input is not positive-definite "
      "(the leading minor of order {} is not positive-definite).",
      batch_prefix(batched, batch), order);
}

}  // namespace ember
