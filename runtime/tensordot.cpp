// tensordot (torch.tensordot, aten/src/ATen/native/Linear.cpp and torch/functional.py): a
// contraction over chosen dim pairs as one mm of the two tensors permuted and flattened.
#include <algorithm>

#include "runtime/functional.h"

namespace ember {

Tensor tensordot(const Tensor& a, const Tensor& b, const Dims& dims_a, const Dims& dims_b, Where where) {
  CallSiteScope site(where);
  check(a.defined() && b.defined(), "tensordot: expected defined tensors");
  check(dims_a.size() == dims_b.size(), "tensordot: dims_a {} and dims_b {} must list as many dims", dims_a, dims_b);
  check(a.dtype() == b.dtype(), "tensordot: expected operands of one dtype, got {} and {} (shapes {} and {})",
        a.dtype(), b.dtype(), a.sizes(), b.sizes());
  std::vector<bool> contracted_a(a.dim(), false);
  std::vector<bool> contracted_b(b.dim(), false);
  Dims wrapped_a, wrapped_b;
  Tensor left = a;
  Tensor right = b;
  int64_t inner = 1;
  for (int i = 0; i < dims_a.size(); ++i) {
    const int dim_a = wrap_dim(dims_a[i], a.dim(), "tensordot");
    const int dim_b = wrap_dim(dims_b[i], b.dim(), "tensordot");
    check(!contracted_a[dim_a], "tensordot: dim {} of a appears more than once in dims_a {}", dim_a, dims_a);
    check(!contracted_b[dim_b], "tensordot: dim {} of b appears more than once in dims_b {}", dim_b, dims_b);
    contracted_a[dim_a] = contracted_b[dim_b] = true;
    wrapped_a.push_back(dim_a);
    wrapped_b.push_back(dim_b);
    const int64_t size_a = a.sizes()[dim_a];
    const int64_t size_b = b.sizes()[dim_b];
    // A size-1 dim broadcasts against the other: the other tensor is summed along it right away, in
    // its own dtype as PyTorch's (sum widens integers to int64, which mm would refuse beside int32).
    if (size_b == 1) {
      left = left.sum({dim_a}, true).to(a.dtype());
    } else if (size_a == 1) {
      right = right.sum({dim_b}, true).to(b.dtype());
    } else {
      check(size_a == size_b,
            "tensordot: contracted dims differ in size: dim {} of a has {}, dim {} of b has {} (shapes {} and {})",
            dim_a, size_a, dim_b, size_b, a.sizes(), b.sizes());
      inner *= size_a;
    }
  }
  Dims order_a, order_b, result_shape;
  int64_t rows = 1;
  int64_t columns = 1;
  for (int d = 0; d < a.dim(); ++d) {
    if (contracted_a[d]) continue;
    order_a.push_back(d);
    result_shape.push_back(a.sizes()[d]);
    rows *= a.sizes()[d];
  }
  for (const int64_t d : wrapped_a) order_a.push_back(d);
  for (const int64_t d : wrapped_b) order_b.push_back(d);
  for (int d = 0; d < b.dim(); ++d) {
    if (contracted_b[d]) continue;
    order_b.push_back(d);
    result_shape.push_back(b.sizes()[d]);
    columns *= b.sizes()[d];
  }
  const Tensor product =
      mm(left.permute(order_a).reshape({rows, inner}), right.permute(order_b).reshape({inner, columns}));
  return product.reshape(result_shape);
}

Tensor tensordot(const Tensor& a, const Tensor& b, int64_t dims, Where where) {
  CallSiteScope site(where);
  check(dims >= 0, "tensordot: expects dims >= 0, got {}", dims);
  check(a.defined() && b.defined(), "tensordot: expected defined tensors");
  check(dims <= a.dim() && dims <= b.dim(), "tensordot: cannot contract {} dims of tensors of shapes {} and {}", dims,
        a.sizes(), b.sizes());
  Dims dims_a, dims_b;
  for (int64_t i = 0; i < dims; ++i) {
    dims_a.push_back(a.dim() - dims + i);
    dims_b.push_back(i);
  }
  return tensordot(a, b, dims_a, dims_b, where);
}

}  // namespace ember
