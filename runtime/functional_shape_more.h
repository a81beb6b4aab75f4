// More of libtorch's shape and construction functions, as composites of the registry ops (permute,
// slice, view, expand, index_select, gather, where, pad, mul, ...), so that autograd, CUDA,
// autocast and compile capture come with them: movedim, narrow, unflatten, tile, meshgrid
// (functional_shape_more_views.cpp), diag, diag_embed, diagflat, eye, trace
// (functional_shape_more_diag.cpp), kron, cross, outer, dot (functional_shape_more_products.cpp).
// Included by runtime/functional.h.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "runtime/tensor.h"

namespace ember {

// ---- views of the input (they share its storage), as PyTorch's ----
// torch.movedim: the dims `source` moved to the positions `destination` (negative dims count from
// the end; neither list may repeat a dim), the other dims keeping their order in the places left.
// A permute, so a view.
Tensor movedim(const Tensor& a, const Dims& source, const Dims& destination, Where where = Where::current());
Tensor movedim(const Tensor& a, int64_t source, int64_t destination, Where where = Where::current());
Tensor moveaxis(const Tensor& a, const Dims& source, const Dims& destination, Where where = Where::current());
Tensor moveaxis(const Tensor& a, int64_t source, int64_t destination, Where where = Where::current());
// torch.swapaxes / swapdims: other names of transpose(a, dim0, dim1).
Tensor swapaxes(const Tensor& a, int64_t dim0, int64_t dim1, Where where = Where::current());
Tensor swapdims(const Tensor& a, int64_t dim0, int64_t dim1, Where where = Where::current());
// torch.narrow: elements start .. start + length - 1 of dim (a slice, so a view). A negative
// start counts from the end (start + size); start may be the size itself with length 0.
Tensor narrow(const Tensor& a, int64_t dim, int64_t start, int64_t length, Where where = Where::current());
// torch.unflatten: dim split into the dims `sizes` (non-empty, their product the dim's size; one
// entry may be -1, inferred, unless the others multiply to 0). Always a view.
Tensor unflatten(const Tensor& a, int64_t dim, const Dims& sizes, Where where = Where::current());
// torch.meshgrid: N 0-d or 1-D tensors of one dtype and device give N tensors of shape
// [n_0, .., n_{N-1}] (n_i = numel of input i) where result i repeats input i along dim i. "xy"
// indexing swaps the first two dims of the shape (result 0 varies along dim 1, result 1 along dim
// 0), as numpy's; "ij" is the default, as in libtorch without an indexing argument (PyTorch warns
// there). Each result is an expanded view of its input, as PyTorch's: write to a clone of it.
std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, std::string_view indexing = "ij",
                             Where where = Where::current());

// ---- new tensors ----
// torch.tile: repeat(a, reps) after padding reps with leading 1s up to a.dim() (where repeat
// refuses too few), so tile(a [2, 3], {2}) is [2, 6]. reps >= 0.
Tensor tile(const Tensor& a, const Dims& reps, Where where = Where::current());
// torch.diag: a 1-D input of n elements gives the [n + |diagonal|, n + |diagonal|] matrix with the
// input on the diagonal `diagonal` (element (i, i + diagonal) for diagonal >= 0, (i - diagonal, i)
// below) and zeros elsewhere; a 2-D input gives a 1-D copy of that diagonal of it (empty when the
// diagonal lies outside the matrix). Any dtype.
Tensor diag(const Tensor& a, int64_t diagonal = 0, Where where = Where::current());
// torch.diag_embed: the last dim of a (n elements) written on the diagonal `offset` of the plane
// (dim1, dim2) of a result with one more dim, of size n + |offset| in dim1 and dim2, the other
// dims a's leading ones in order; zeros elsewhere. dim1 != dim2, counted in the result's dims.
// A contiguous new tensor, as PyTorch's.
Tensor diag_embed(const Tensor& a, int64_t offset = 0, int64_t dim1 = -2, int64_t dim2 = -1,
                  Where where = Where::current());
// torch.diagflat: diag of the flattened input (a 0-d input is one element): always a matrix.
Tensor diagflat(const Tensor& a, int64_t offset = 0, Where where = Where::current());
// torch.trace: the sum of a matrix's main diagonal (0 for an empty one); integers and bool sum to
// int64, as sum does. 2-D inputs only.
Tensor trace(const Tensor& a, Where where = Where::current());
// torch.eye: the [n, m] matrix with ones on the main diagonal and zeros elsewhere, in any dtype
// (bool: true on the diagonal). n, m >= 0; float32 unless options say otherwise.
Tensor eye(int64_t n, TensorOptions options = {}, Where where = Where::current());
Tensor eye(int64_t n, int64_t m, TensorOptions options = {}, Where where = Where::current());

// ---- products ----
// torch.kron: the Kronecker product. The input of fewer dims gains leading dims of size 1; then
// result[i_0 q_0 + j_0, ..] = a[i_0, ..] * b[j_0, ..] with q = b's (padded) shape, so the result's
// dim d has a_d * b_d elements. Types promote as mul's.
Tensor kron(const Tensor& a, const Tensor& b, Where where = Where::current());
// torch.linalg.cross: the cross product of the 3-vectors along dim (default the last) of a and b,
// which must have as many dims, of one dtype, and size 3 along dim; the other dims broadcast.
// result_k = a_{k+1} b_{k+2} - a_{k+2} b_{k+1} (indices mod 3).
Tensor linalg_cross(const Tensor& a, const Tensor& b, int64_t dim = -1, Where where = Where::current());
// torch.cross with its dim given: linalg_cross. torch.cross without dim takes the first dim of size
// 3 (deprecated by PyTorch, which will make it -1): ember has no default here, so that code ported
// from either meaning says which dim it means rather than silently getting the other one.
Tensor cross(const Tensor& a, const Tensor& b, int64_t dim, Where where = Where::current());
// torch.outer (ger is its old name): result[i, j] = a[i] * b[j] of two 1-D tensors, types promoting
// as mul's.
Tensor outer(const Tensor& a, const Tensor& b, Where where = Where::current());
Tensor ger(const Tensor& a, const Tensor& b, Where where = Where::current());
// torch.dot: the sum of a[i] * b[i] of two 1-D tensors with as many elements and one dtype, a 0-d
// tensor of that dtype (an integer sum wraps as the dtype does); bool is refused, as PyTorch's.
// vdot conjugates a first in PyTorch, which for ember's real dtypes is dot.
Tensor dot(const Tensor& a, const Tensor& b, Where where = Where::current());
Tensor vdot(const Tensor& a, const Tensor& b, Where where = Where::current());

// Not here: torch.diagonal, a view (stride s0 + s1 over the matrix) that no composite of the other
// view ops can make of a strided input (a flatten of a transposed or sliced matrix copies), so it
// is a registry view op of its own: runtime/functional.h's diagonal (runtime/ops/diagonal_ops.cpp).
// diag of a matrix is the copy of that diagonal, as in PyTorch.

}  // namespace ember
