// More of PyTorch's broadcasting, indexing and scattering functions, as composites of the registry
// ops (expand, where, index_select, index_add, gather, cumsum, pad, ...), so that autograd, CUDA
// and compile capture come from the ops they are made of: broadcast_to, broadcast_tensors,
// broadcast_shapes, take, take_along_dim, unravel_index (functional_index_more_take.cpp),
// index_fill, index_copy, masked_scatter, put (functional_index_more_fill.cpp), select_scatter,
// slice_scatter, diagonal_scatter (functional_index_more_scatter.cpp).
//
// Index values are checked as PyTorch checks them: negative ones count from the end where PyTorch
// wraps them (take, put, index_fill, index_copy), and an index out of range is an error. In eager
// mode on the CPU the error names the function, the index and the size; on CUDA or while the
// compile stage captures, the host cannot read the values without a sync or a graph break, so the
// kernel of the op underneath (index_select, index_add) refuses the index, naming that op.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/tensor.h"

namespace ember {

// ---- broadcasting ----
// torch.broadcast_shapes: the NumPy broadcast of all shapes (a dim of size 1 stretches; missing
// leading dims count as 1). An error names the first two shapes that do not broadcast.
Dims broadcast_shapes(const std::vector<Dims>& shapes, Where where = Where::current());
// torch.broadcast_to: a as an expanded view of `shape` (at least a.dim() entries; -1 keeps the
// size of one of a's dims, never of a new leading one). Only dims of size 1 stretch.
Tensor broadcast_to(const Tensor& a, const Dims& shape, Where where = Where::current());
// torch.broadcast_tensors: every tensor expanded (a view) to the broadcast of all their shapes.
std::vector<Tensor> broadcast_tensors(const std::vector<Tensor>& tensors, Where where = Where::current());

// ---- flat and per-dim lookups ----
// torch.take: a's elements at the flat (row-major) positions `index` (int64), as if a were 1-D;
// the result has index's shape and a's dtype. Negative indices count from the end.
Tensor take(const Tensor& a, const Tensor& index, Where where = Where::current());
// torch.take_along_dim: with dim, a and indices (int64, as many dims) broadcast in every dim but
// dim, then gather along dim; without dim, take_along_dim(a.flatten(), indices.flatten(), 0).
Tensor take_along_dim(const Tensor& a, const Tensor& indices, std::optional<int64_t> dim = std::nullopt,
                      Where where = Where::current());
// torch.unravel_index: the coordinates in `shape` of the flat row-major indices (an integer
// tensor), one int64 tensor of indices' shape per dim of shape. As PyTorch's (floor division
// then a floor remainder), a negative index counts from the end and one past the end wraps
// around; sizes must be >= 0 and multiply to a nonzero count.
std::vector<Tensor> unravel_index(const Tensor& indices, const Dims& shape, Where where = Where::current());

// ---- writes at indices (out of place; the in-place forms write the result back with copy_) ----
// torch.index_fill: a with the slices at `index` (int64 or int32, 0-d or 1-D, negative counts
// from the end) along dim set to value (a double that a's dtype can hold, or a 0-d tensor, whose
// gradient is the sum of the filled positions'). a's gradient is zero at the filled positions.
Tensor index_fill(const Tensor& a, int64_t dim, const Tensor& index, double value, Where where = Where::current());
Tensor index_fill(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& value,
                  Where where = Where::current());
Tensor& index_fill_(Tensor& a, int64_t dim, const Tensor& index, double value, Where where = Where::current());
Tensor& index_fill_(Tensor& a, int64_t dim, const Tensor& index, const Tensor& value, Where where = Where::current());
// torch.index_copy: a with slice i of source (a's dtype, a's shape but index.numel() along dim)
// copied to slice index[i] along dim. Of a repeated index the last slice listed is written, on
// every device (PyTorch calls it undefined; its CPU loop also leaves the last). source's gradient
// is the output's gradient gathered at index (zero for the slices not written), a's is zero at
// the copied slices.
Tensor index_copy(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& source,
                  Where where = Where::current());
Tensor& index_copy_(Tensor& a, int64_t dim, const Tensor& index, const Tensor& source, Where where = Where::current());
// torch.masked_scatter: a (broadcast with the bool mask) with its true positions, in row-major
// order, taking source's first elements in row-major order (source needs at least as many
// elements as the mask has true ones; a's dtype). Source elements past those get no gradient.
Tensor masked_scatter(const Tensor& a, const Tensor& mask, const Tensor& source, Where where = Where::current());
// torch.Tensor.put (out of place): a with source's elements written at the flat positions index
// (int64, as many elements as source; negative counts from the end), or added there when
// accumulate. Without accumulate, of a repeated index the last value listed is written (as
// index_copy).
Tensor put(const Tensor& a, const Tensor& index, const Tensor& source, bool accumulate = false,
           Where where = Where::current());

// ---- embeddings: a with src written where the view would show it (new tensors) ----
// torch.select_scatter: src (the shape of a.select(dim, index)) at index along dim.
Tensor select_scatter(const Tensor& a, const Tensor& src, int64_t dim, int64_t index, Where where = Where::current());
// torch.slice_scatter: src (the shape of a.slice(dim, start, end, step)) at that slice; start and
// end clamp as Python slices (nullopt: the dim's ends), step > 0.
Tensor slice_scatter(const Tensor& a, const Tensor& src, int64_t dim = 0, std::optional<int64_t> start = std::nullopt,
                     std::optional<int64_t> end = std::nullopt, int64_t step = 1, Where where = Where::current());
// torch.diagonal_scatter: src (the shape of diagonal(a, offset, dim1, dim2)) on that diagonal.
Tensor diagonal_scatter(const Tensor& a, const Tensor& src, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1,
                        Where where = Where::current());

}  // namespace ember
