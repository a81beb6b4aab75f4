// torch's arranging functions as composites of registry ops (flip, transpose, pad, cat, slice,
// index_select, cumprod, ...), so autograd, CUDA, autocast and compile capture come with them:
// rot90, block_diag, cartesian_prod, combinations, tril_indices, triu_indices, vander
// (functional_arrange_build.cpp); the stacks, atleast_Nd, tensor_split and its h/v/d forms, msort
// (functional_arrange_stack.cpp). Included by runtime/functional.h.
//
// Errors name the function (torch's wording where it has one), the values and the caller's line.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/tensor.h"

namespace ember {

// ---- built from the input (functional_arrange_build.cpp) ----
// torch.rot90: rotates by 90 degrees k times in the plane (dims[0], dims[1]), from the first
// towards the second dim. k counts modulo 4 (negative k turns the other way); k = 0 is a copy.
// Needs >= 2 dims and two different dims in range.
Tensor rot90(const Tensor& a, int64_t k = 1, const Dims& dims = {0, 1}, Where where = Where::current());
// torch.block_diag: the inputs (0-d counts as [1, 1], 1-D [n] as [1, n], 2-D as is) placed on the
// diagonal of one [sum of rows, sum of columns] matrix of their promoted dtype, zeros elsewhere. No
// inputs give an empty [1, 0] float32 matrix, as torch's.
Tensor block_diag(const std::vector<Tensor>& tensors, Where where = Where::current());
// torch.cartesian_prod: every combination of one element of each 1-D input, one per row in
// row-major order ([prod of numels, N]); one input comes back itself (1-D). Inputs of one dtype.
Tensor cartesian_prod(const std::vector<Tensor>& tensors, Where where = Where::current());
// torch.combinations: the r-element combinations of a 1-D input's elements ([C, r], lexicographic
// in the element positions; with_replacement lets a position repeat). r = 0 gives an empty [0]
// tensor; r > numel without replacement gives [0, r]. The positions are enumerated on the host
// (they depend on sizes only), the values gathered by index_select, so the gradient reaches a.
Tensor combinations(const Tensor& a, int64_t r = 2, bool with_replacement = false, Where where = Where::current());
// torch.tril_indices / triu_indices: the [2, N] coordinates (row, then column) of the elements of a
// row x col matrix on or below (above) the diagonal `offset`, in row-major order. int64 unless
// options say otherwise (bool refused); row, col >= 0.
Tensor tril_indices(int64_t row, int64_t col, int64_t offset = 0, TensorOptions options = {},
                    Where where = Where::current());
Tensor triu_indices(int64_t row, int64_t col, int64_t offset = 0, TensorOptions options = {},
                    Where where = Where::current());
// torch.vander: the [numel, N] matrix of powers of a 1-D input, x^(N-1) .. x^0 in each row (x^0 ..
// x^(N-1) when increasing); N defaults to numel. As torch's: a running product (cumprod) of
// [1, x, x, ..], of dtype promote(x, int64) (integers and bool become int64).
Tensor vander(const Tensor& x, std::optional<int64_t> N = std::nullopt, bool increasing = false,
              Where where = Where::current());

// ---- joining, splitting, sorting (functional_arrange_stack.cpp) ----
// torch.atleast_1d/2d/3d: the input itself when it has enough dims, else a view: 0-d becomes [1],
// [1, 1] or [1, 1, 1]; 1-D [n] becomes [1, n] (2d) or [1, n, 1] (3d); 2-D [m, n] becomes [m, n, 1].
Tensor atleast_1d(const Tensor& a, Where where = Where::current());
Tensor atleast_2d(const Tensor& a, Where where = Where::current());
Tensor atleast_3d(const Tensor& a, Where where = Where::current());
std::vector<Tensor> atleast_1d(const std::vector<Tensor>& tensors, Where where = Where::current());
std::vector<Tensor> atleast_2d(const std::vector<Tensor>& tensors, Where where = Where::current());
std::vector<Tensor> atleast_3d(const std::vector<Tensor>& tensors, Where where = Where::current());
// torch.hstack: cat of atleast_1d's along dim 0 when the first is 1-D, else along dim 1. vstack:
// atleast_2d's along dim 0; dstack: atleast_3d's along dim 2. column_stack: 0-d and 1-D inputs
// become columns [n, 1], the rest are kept, joined along dim 1. Each needs >= 1 input; dtypes
// promote as cat's.
Tensor hstack(const std::vector<Tensor>& tensors, Where where = Where::current());
Tensor vstack(const std::vector<Tensor>& tensors, Where where = Where::current());
Tensor dstack(const std::vector<Tensor>& tensors, Where where = Where::current());
Tensor column_stack(const std::vector<Tensor>& tensors, Where where = Where::current());
// torch.tensor_split: `sections` (> 0) views along dim, the first size % sections of them one
// element longer; or the views between the split `indices` (Python slice bounds: negative ones
// count from the end, all clamped, a decreasing index gives an empty view). Needs >= 1 dim.
std::vector<Tensor> tensor_split(const Tensor& a, int64_t sections, int64_t dim = 0, Where where = Where::current());
std::vector<Tensor> tensor_split(const Tensor& a, const std::vector<int64_t>& indices, int64_t dim = 0,
                                 Where where = Where::current());
// torch.hsplit / vsplit / dsplit: tensor_split along dim 1 (dim 0 for a 1-D input), 0 and 2, which
// need >= 1, 2 and 3 dims; with a number of sections, it must divide the dim's size.
std::vector<Tensor> hsplit(const Tensor& a, int64_t sections, Where where = Where::current());
std::vector<Tensor> hsplit(const Tensor& a, const std::vector<int64_t>& indices, Where where = Where::current());
std::vector<Tensor> vsplit(const Tensor& a, int64_t sections, Where where = Where::current());
std::vector<Tensor> vsplit(const Tensor& a, const std::vector<int64_t>& indices, Where where = Where::current());
std::vector<Tensor> dsplit(const Tensor& a, int64_t sections, Where where = Where::current());
std::vector<Tensor> dsplit(const Tensor& a, const std::vector<int64_t>& indices, Where where = Where::current());
// torch.msort: the values of sort along dim 0 (ascending, NaN last).
Tensor msort(const Tensor& a, Where where = Where::current());

}  // namespace ember
