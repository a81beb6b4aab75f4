// atleast_1d/2d/3d, hstack, vstack, dstack, column_stack, tensor_split, hsplit, vsplit, dsplit and
// msort (runtime/functional_arrange.h): reshapes and unsqueezes, cat, slice views and sort, with
// torch's rules for which dim each one works on.
#include <fmt/ranges.h>

#include "runtime/functional.h"

namespace ember {

namespace {

Tensor at_least_1d(const Tensor& a) { return a.dim() == 0 ? reshape(a, {1}) : a; }

Tensor at_least_2d(const Tensor& a) {
  if (a.dim() == 0) return reshape(a, {1, 1});
  return a.dim() == 1 ? unsqueeze(a, 0) : a;
}

Tensor at_least_3d(const Tensor& a) {
  switch (a.dim()) {
    case 0:
      return reshape(a, {1, 1, 1});
    case 1:
      return unsqueeze(unsqueeze(a, 0), 2);  // [n] -> [1, n, 1]
    case 2:
      return unsqueeze(a, 2);  // [m, n] -> [m, n, 1]
    default:
      return a;
  }
}

std::vector<Tensor> each(const std::vector<Tensor>& tensors, Tensor (*make)(const Tensor&)) {
  std::vector<Tensor> results;
  results.reserve(tensors.size());
  for (const Tensor& tensor : tensors) results.push_back(make(tensor));
  return results;
}

void check_not_empty(const std::vector<Tensor>& tensors, const char* function) {
  check(!tensors.empty(), "{}: expects a non-empty TensorList", function);
}

// The views between consecutive bounds along dim, the bounds as Python slice bounds (slice clamps
// them: negative ones count from the end, a decreasing pair gives an empty view).
std::vector<Tensor> views_between(const Tensor& a, const std::vector<int64_t>& bounds, int dim) {
  std::vector<Tensor> views;
  int64_t start = 0;
  for (const int64_t bound : bounds) {
    views.push_back(slice(a, dim, start, bound));
    start = bound;
  }
  views.push_back(slice(a, dim, start, a.size(dim)));
  return views;
}

int split_dim(const Tensor& a, int64_t dim, const char* function) {
  check(a.dim() > 0, "{}: expected at least a 1-dimensional tensor, but got a tensor with 0 dims", function);
  return wrap_dim(dim, a.dim(), function);
}

std::vector<Tensor> split_in_sections(const Tensor& a, int64_t sections, int dim, const char* function) {
  check(sections > 0, "{}: number of sections must be larger than 0, got {} (shape {})", function, sections, a.sizes());
  const int64_t size = a.size(dim);
  // The first size % sections views hold one element more than the others.
  const int64_t smallest = size / sections, longer = size % sections;
  std::vector<int64_t> bounds;
  int64_t bound = 0;
  for (int64_t i = 0; i + 1 < sections; ++i) {
    bound += smallest + (i < longer ? 1 : 0);
    bounds.push_back(bound);
  }
  return views_between(a, bounds, dim);
}

// hsplit / vsplit / dsplit: the dim they split, after checking the input has enough dims.
int directional_dim(const Tensor& a, int min_dims, int dim, const char* function) {
  check(a.dim() >= min_dims,
        "{}: torch.{} requires a tensor with at least {} dimension{}, but got a tensor with {} dimensions! (shape {})",
        function, function, min_dims, min_dims == 1 ? "" : "s", a.dim(), a.sizes());
  return function[0] == 'h' && a.dim() == 1 ? 0 : dim;
}

std::vector<Tensor> directional_sections(const Tensor& a, int64_t sections, int min_dims, int dim,
                                         const char* function) {
  const int d = directional_dim(a, min_dims, dim, function);
  check(sections != 0 && a.size(d) % sections == 0,
        "{}: torch.{} attempted to split along dimension {}, but the size of the dimension {} is not divisible by the "
        "split_size {}!",
        function, function, d, a.size(d), sections);
  return split_in_sections(a, sections, d, function);
}

}  // namespace

Tensor atleast_1d(const Tensor& a, Where where) {
  CallSiteScope site(where);
  return at_least_1d(a);
}
Tensor atleast_2d(const Tensor& a, Where where) {
  CallSiteScope site(where);
  return at_least_2d(a);
}
Tensor atleast_3d(const Tensor& a, Where where) {
  CallSiteScope site(where);
  return at_least_3d(a);
}
std::vector<Tensor> atleast_1d(const std::vector<Tensor>& tensors, Where where) {
  CallSiteScope site(where);
  return each(tensors, at_least_1d);
}
std::vector<Tensor> atleast_2d(const std::vector<Tensor>& tensors, Where where) {
  CallSiteScope site(where);
  return each(tensors, at_least_2d);
}
std::vector<Tensor> atleast_3d(const std::vector<Tensor>& tensors, Where where) {
  CallSiteScope site(where);
  return each(tensors, at_least_3d);
}

Tensor hstack(const std::vector<Tensor>& tensors, Where where) {
  CallSiteScope site(where);
  check_not_empty(tensors, "hstack");
  const std::vector<Tensor> pieces = each(tensors, at_least_1d);
  return cat(pieces, pieces[0].dim() == 1 ? 0 : 1);
}

Tensor vstack(const std::vector<Tensor>& tensors, Where where) {
  CallSiteScope site(where);
  check_not_empty(tensors, "vstack");
  return cat(each(tensors, at_least_2d), 0);
}

Tensor dstack(const std::vector<Tensor>& tensors, Where where) {
  CallSiteScope site(where);
  check_not_empty(tensors, "dstack");
  return cat(each(tensors, at_least_3d), 2);
}

Tensor column_stack(const std::vector<Tensor>& tensors, Where where) {
  CallSiteScope site(where);
  check_not_empty(tensors, "column_stack");
  std::vector<Tensor> columns;
  for (const Tensor& tensor : tensors)
    columns.push_back(tensor.dim() <= 1 ? reshape(tensor, {tensor.numel(), 1}) : tensor);
  return cat(columns, 1);
}

std::vector<Tensor> tensor_split(const Tensor& a, int64_t sections, int64_t dim, Where where) {
  CallSiteScope site(where);
  return split_in_sections(a, sections, split_dim(a, dim, "tensor_split"), "tensor_split");
}

std::vector<Tensor> tensor_split(const Tensor& a, const std::vector<int64_t>& indices, int64_t dim, Where where) {
  CallSiteScope site(where);
  return views_between(a, indices, split_dim(a, dim, "tensor_split"));
}

std::vector<Tensor> hsplit(const Tensor& a, int64_t sections, Where where) {
  CallSiteScope site(where);
  return directional_sections(a, sections, 1, 1, "hsplit");
}
std::vector<Tensor> hsplit(const Tensor& a, const std::vector<int64_t>& indices, Where where) {
  CallSiteScope site(where);
  return views_between(a, indices, directional_dim(a, 1, 1, "hsplit"));
}
std::vector<Tensor> vsplit(const Tensor& a, int64_t sections, Where where) {
  CallSiteScope site(where);
  return directional_sections(a, sections, 2, 0, "vsplit");
}
std::vector<Tensor> vsplit(const Tensor& a, const std::vector<int64_t>& indices, Where where) {
  CallSiteScope site(where);
  return views_between(a, indices, directional_dim(a, 2, 0, "vsplit"));
}
std::vector<Tensor> dsplit(const Tensor& a, int64_t sections, Where where) {
  CallSiteScope site(where);
  return directional_sections(a, sections, 3, 2, "dsplit");
}
std::vector<Tensor> dsplit(const Tensor& a, const std::vector<int64_t>& indices, Where where) {
  CallSiteScope site(where);
  return views_between(a, indices, directional_dim(a, 3, 2, "dsplit"));
}

Tensor msort(const Tensor& a, Where where) {
  CallSiteScope site(where);
  return std::get<0>(sort(a, 0));
}

}  // namespace ember
