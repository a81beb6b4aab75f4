// linalg::qr, eigh, eigvalsh, svd and svdvals (runtime/linalg_spectral.h): the wrappers of the
// linalg_qr, linalg_eigh and linalg_svd registry ops, with PyTorch's string arguments.
#include "runtime/dispatch.h"
#include "runtime/linalg_spectral.h"

namespace ember::linalg {

namespace {

TensorList dispatch_call(const char* name, const Tensor& a, const Attrs& attrs) {
  const OpDef& op = lookup_op(name);
  const Tensor inputs[] = {a};
  return dispatch(OpCall{op, inputs, attrs});
}

// Whether autograd will record a call on `a`: the values-only forms (eigvalsh, svdvals) then
// compute the vectors too, as PyTorch does, since the gradient needs them.
bool gradient_recorded(const Tensor& a) { return grad_mode_enabled() && a.requires_grad(); }

bool upper_of(std::string_view uplo, const char* name) {
  check(uplo == "L" || uplo == "U", "{}: UPLO must be 'L' or 'U', got '{}'", name, uplo);
  return uplo == "U";
}

}  // namespace

std::tuple<Tensor, Tensor> qr(const Tensor& A, std::string_view mode, Where where) {
  CallSiteScope site(where);
  int64_t code = 0;
  if (mode == "complete")
    code = 1;
  else if (mode == "r")
    code = 2;
  else
    check(mode == "reduced",
          "linalg.qr: qr received unrecognized mode '{}' but expected one of 'reduced' (default), "
          "'r', or 'complete'",
          mode);
  TensorList outputs = dispatch_call("linalg_qr", A, {{"mode", code}});
  return {std::move(outputs[0]), std::move(outputs[1])};
}

std::tuple<Tensor, Tensor> eigh(const Tensor& A, std::string_view UPLO, Where where) {
  CallSiteScope site(where);
  const bool upper = upper_of(UPLO, "linalg.eigh");
  TensorList outputs = dispatch_call("linalg_eigh", A, {{"upper", upper}, {"compute_v", true}});
  return {std::move(outputs[0]), std::move(outputs[1])};
}

Tensor eigvalsh(const Tensor& A, std::string_view UPLO, Where where) {
  CallSiteScope site(where);
  const bool upper = upper_of(UPLO, "linalg.eigvalsh");
  return dispatch_call("linalg_eigh", A, {{"upper", upper}, {"compute_v", gradient_recorded(A)}})[0];
}

std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& A, bool full_matrices, Where where) {
  CallSiteScope site(where);
  TensorList outputs = dispatch_call("linalg_svd", A, {{"full_matrices", full_matrices}, {"compute_uv", true}});
  return {std::move(outputs[0]), std::move(outputs[1]), std::move(outputs[2])};
}

Tensor svdvals(const Tensor& A, Where where) {
  CallSiteScope site(where);
  return dispatch_call("linalg_svd", A, {{"full_matrices", false}, {"compute_uv", gradient_recorded(A)}})[1];
}

}  // namespace ember::linalg
