// The op functions for value tests and logic: isnan, isinf, isfinite, the logical ops, any / all
// and count_nonzero, the product and the running reductions (prod, cumsum, cumprod, cummax,
// cummin, logcumsumexp). Each records the caller's location and dispatches the registry op of the
// same name; count_nonzero is a composite.
#include "kernels/cpu/reduce_geometry.h"
#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/ops/pointwise_common.h"

namespace ember {

namespace {

// One dim (wrapped by the shape rule, which names the op), or every dim when absent.
Dims dims_of(std::optional<int64_t> dim) { return dim ? Dims{*dim} : Dims{}; }

}  // namespace

Tensor isnan(const Tensor& a, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("isnan");
  return dispatch_one(op, {a});
}
Tensor isinf(const Tensor& a, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("isinf");
  return dispatch_one(op, {a});
}
Tensor isfinite(const Tensor& a, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("isfinite");
  return dispatch_one(op, {a});
}
Tensor logical_not(const Tensor& a, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("logical_not");
  return dispatch_one(op, {a});
}
Tensor logical_and(const Tensor& a, const Tensor& b, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("logical_and");
  return dispatch_one(op, {a, b});
}
Tensor logical_or(const Tensor& a, const Tensor& b, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("logical_or");
  return dispatch_one(op, {a, b});
}
Tensor logical_xor(const Tensor& a, const Tensor& b, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("logical_xor");
  return dispatch_one(op, {a, b});
}

Tensor any(const Tensor& a, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("any");
  return dispatch_one(op, {a}, {{"dims", Dims{}}, {"keepdim", false}});
}
Tensor any(const Tensor& a, int64_t dim, bool keepdim, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("any");
  return dispatch_one(op, {a}, {{"dims", Dims{dim}}, {"keepdim", keepdim}});
}
Tensor all(const Tensor& a, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("all");
  return dispatch_one(op, {a}, {{"dims", Dims{}}, {"keepdim", false}});
}
Tensor all(const Tensor& a, int64_t dim, bool keepdim, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("all");
  return dispatch_one(op, {a}, {{"dims", Dims{dim}}, {"keepdim", keepdim}});
}

// PyTorch's count_nonzero is sum(a != 0) too; NaN counts (it is not 0).
Tensor count_nonzero(const Tensor& a, const Dims& dims, Where where) {
  CallSiteScope site(where);
  cpu::reduce_mask(dims, a.dim(), "count_nonzero");  // dims checked under this function's name
  return sum(ne(a, ops::scalar_like(0.0, a)), dims, false);
}

namespace {

// PyTorch's dtype argument of prod and cumsum: the input is converted to it and so is the result.
// The ops promote integers to int64, so another integer dtype is computed in int64 and narrowed
// after, which wraps exactly as computing in it would (sums and products agree modulo 2^32).
Tensor run_in_dtype(const OpDef& op, const Tensor& a, std::optional<DType> dtype, const Attrs& attrs) {
  const Tensor result = dispatch_one(op, {dtype ? to_dtype(a, *dtype) : a}, attrs);
  return dtype && result.dtype() != *dtype ? to_dtype(result, *dtype) : result;
}

}  // namespace

Tensor prod(const Tensor& a, std::optional<DType> dtype, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("prod");
  return run_in_dtype(op, a, dtype, {{"dims", dims_of({})}, {"keepdim", false}});
}
Tensor prod(const Tensor& a, int64_t dim, bool keepdim, std::optional<DType> dtype, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("prod");
  return run_in_dtype(op, a, dtype, {{"dims", dims_of(dim)}, {"keepdim", keepdim}});
}

Tensor cumsum(const Tensor& a, int64_t dim, std::optional<DType> dtype, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("cumsum");
  return run_in_dtype(op, a, dtype, {{"dim", dim}, {"reverse", false}});
}

Tensor cumprod(const Tensor& a, int64_t dim, std::optional<DType> dtype, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("cumprod");
  return run_in_dtype(op, a, dtype, {{"dim", dim}});
}

namespace {

std::tuple<Tensor, Tensor> running_extremum(const OpDef& op, const Tensor& a, int64_t dim) {
  const Tensor inputs[] = {a};
  TensorList outputs = dispatch(OpCall{op, inputs, {{"dim", dim}}});
  return {std::move(outputs[0]), std::move(outputs[1])};
}

}  // namespace

std::tuple<Tensor, Tensor> cummax(const Tensor& a, int64_t dim, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("cummax");
  return running_extremum(op, a, dim);
}
std::tuple<Tensor, Tensor> cummin(const Tensor& a, int64_t dim, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("cummin");
  return running_extremum(op, a, dim);
}

Tensor logcumsumexp(const Tensor& a, int64_t dim, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("logcumsumexp");
  return dispatch_one(op, {a}, {{"dim", dim}, {"reverse", false}});
}

}  // namespace ember
