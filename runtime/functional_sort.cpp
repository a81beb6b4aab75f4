// sort, argsort, topk and kthvalue (runtime/functional_sort.h): the wrappers of the sort and topk
// registry ops, and the composites over sort.
#include "runtime/dispatch.h"
#include "runtime/functional.h"

namespace ember {

namespace {

std::tuple<Tensor, Tensor> dispatch_pair(const OpDef& op, const Tensor& a, const Attrs& attrs) {
  const Tensor inputs[] = {a};
  TensorList outputs = dispatch(OpCall{op, inputs, attrs});
  return {std::move(outputs[0]), std::move(outputs[1])};
}

}  // namespace

std::tuple<Tensor, Tensor> sort(const Tensor& a, int64_t dim, bool descending, bool stable, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("sort");
  (void)stable;  // every sort is stable (functional_sort.h)
  return dispatch_pair(op, a, {{"dim", dim}, {"descending", descending}});
}

Tensor argsort(const Tensor& a, int64_t dim, bool descending, bool stable, Where where) {
  CallSiteScope site(where);
  wrap_dim(dim, a.dim(), "argsort");  // a bad dim names argsort, not the sort it calls
  return std::get<1>(sort(a, dim, descending, stable, where));
}

std::tuple<Tensor, Tensor> topk(const Tensor& a, int64_t k, int64_t dim, bool largest, bool sorted, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("topk");
  return dispatch_pair(op, a, {{"k", k}, {"dim", dim}, {"largest", largest}, {"sorted", sorted}});
}

std::tuple<Tensor, Tensor> kthvalue(const Tensor& a, int64_t k, int64_t dim, bool keepdim, Where where) {
  CallSiteScope site(where);
  const int wrapped = wrap_dim(dim, a.dim(), "kthvalue");
  check(a.dtype() != kBool,
        "kthvalue: bool tensors are not supported (input shape {}), as PyTorch's kthvalue is not implemented for "
        "'Bool'; convert with to_dtype first",
        a.sizes());
  const int64_t length = a.dim() == 0 ? 1 : a.sizes()[wrapped];
  check(k >= 1 && k <= length,
        "kthvalue: selected number k out of range for dimension {}: k = {}, but the dim has {} elements (input "
        "shape {})",
        dim, k, length, a.sizes());
  auto [values, indices] = sort(a, dim, false, true, where);
  if (a.dim() == 0) return {values, indices};
  // contiguous: PyTorch returns fresh tensors, so view() works on the results as on PyTorch's,
  // which it would not on a narrow of the sorted rows (strided by the row length).
  values = values.narrow(wrapped, k - 1, 1).contiguous();
  indices = indices.narrow(wrapped, k - 1, 1).contiguous();
  if (keepdim) return {values, indices};
  return {values.squeeze(wrapped), indices.squeeze(wrapped)};
}

}  // namespace ember
