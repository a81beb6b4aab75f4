// linalg.slogdet, det and logdet (runtime/linalg.h) over the linalg_slogdet op: det is
// sign * exp(logabsdet), so its gradient is det * A^-T through slogdet's rule; logdet is
// logabsdet where the sign is positive, nan where negative, and -inf (logabsdet's own value) where
// the matrix is singular, as torch.logdet.
#include <limits>

#include "runtime/dispatch.h"
#include "runtime/linalg.h"
#include "runtime/linalg_solve_checks.h"

namespace ember::linalg {

std::tuple<Tensor, Tensor> slogdet(const Tensor& A, Where where) {
  CallSiteScope site(where);
  linalg_detail::check_square_floating("linalg.slogdet", A);
  static const OpDef& op = lookup_op("linalg_slogdet");
  const Tensor inputs[] = {A};
  const TensorList outputs = dispatch({op, inputs, Attrs{}});
  return {outputs[0], outputs[1]};
}

Tensor det(const Tensor& A, Where where) {
  CallSiteScope site(where);
  linalg_detail::check_square_floating("linalg.det", A);
  const auto [sign, logabsdet] = slogdet(A);
  return mul(sign, exp(logabsdet));
}

}  // namespace ember::linalg

namespace ember {

Tensor det(const Tensor& A, Where where) { return linalg::det(A, where); }

Tensor logdet(const Tensor& A, Where where) {
  CallSiteScope site(where);
  linalg_detail::check_square_floating("logdet", A);
  const auto [sign, logabsdet] = linalg::slogdet(A);
  const Tensor nan = full_like(logabsdet, std::numeric_limits<double>::quiet_NaN());
  return ember::where(lt(sign, zeros_like(sign)), nan, logabsdet);
}

}  // namespace ember
