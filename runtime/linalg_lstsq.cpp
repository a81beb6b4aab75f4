// linalg::lstsq (runtime/linalg_spectral.h): least squares through the SVD, as LAPACK's gelsd
// driver computes it, written with ops so the solution differentiates through svd's backward.
#include <limits>

#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/linalg_spectral.h"

namespace ember::linalg {

std::tuple<Tensor, Tensor, Tensor, Tensor> lstsq(const Tensor& A, const Tensor& B, std::optional<double> rcond,
                                                 Where where) {
  CallSiteScope site(where);
  check(A.dim() >= 2, "linalg.lstsq: input must have at least 2 dimensions, got shape {}", A.sizes());
  check(is_floating(A.dtype()), "linalg.lstsq: Expected a floating point tensor as input. Got {} (shape {})", A.dtype(),
        A.sizes());
  check(A.dtype() == B.dtype(),
        "linalg.lstsq: Expected input and other to have the same dtype, but got input's dtype {} and other's dtype {}",
        A.dtype(), B.dtype());
  check(B.dim() >= 1 && A.dim() >= B.dim() && A.dim() - B.dim() <= 1,
        "linalg.lstsq: input.dim() must be greater or equal to other.dim() and (input.dim() - other.dim()) <= 1 "
        "(input shape {}, other shape {})",
        A.sizes(), B.sizes());
  const bool vector_case = B.dim() == A.dim() - 1;
  const Tensor rhs = vector_case ? B.unsqueeze(-1) : B;
  const int64_t rows = A.sizes()[A.dim() - 2], cols = A.sizes()[A.dim() - 1];
  check(rhs.sizes()[rhs.dim() - 2] == rows,
        "linalg.lstsq: input.size(-2) should match other.size(-2): input shape {}, other shape {}", A.sizes(),
        B.sizes());
  const double epsilon =
      A.dtype() == kFloat64 ? std::numeric_limits<double>::epsilon() : std::numeric_limits<float>::epsilon();
  const double relative = rcond.value_or(epsilon * static_cast<double>(std::max(rows, cols)));
  // X = V diag(1/S) U^T B over the singular values above rcond * S_max (gelsd's effective rank).
  const auto [u, s, vh] = svd(A, false);
  const Tensor largest = amax(s, {-1}, true).detach();
  const Tensor kept = gt(s, largest * relative);
  const Tensor inverted = ember::where(kept, reciprocal(ember::where(kept, s, ones_like(s))), zeros_like(s));
  Tensor solution = matmul(vh.transpose(-2, -1), inverted.unsqueeze(-1) * matmul(u.transpose(-2, -1), rhs));
  Tensor rank;
  {
    NoGradGuard no_grad;
    rank = sum(to_dtype(kept, kInt64), {-1});
  }
  // As PyTorch: the squared residual norms per column when m > n and every matrix has full rank
  // (a host read of the ranks, as PyTorch's check syncs too), else an empty tensor.
  Tensor residuals = zeros({0}, {.dtype = A.dtype(), .device = A.device()});
  if (rows > cols && rank.numel() > 0 && all(eq(rank, full_like(rank, static_cast<double>(cols)))).item<bool>()) {
    const Tensor difference = matmul(A, solution) - rhs;
    residuals = sum(difference * difference, {-2});
    if (vector_case) residuals = residuals.squeeze(-1);
  }
  if (vector_case) solution = solution.squeeze(-1);
  return {solution, residuals, rank, s};
}

}  // namespace ember::linalg
