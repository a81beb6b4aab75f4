// Selection and counting whose result's shape depends on the values, as torch.nonzero, masked_select,
// unique, bincount, histc, searchsorted and bucketize. Included by runtime/functional.h.
//
// Each reads its input's values on the host to size the result, so each synchronizes with the
// device, as PyTorch's do. The read goes through host_values (runtime/dispatch.h), which tells the
// dispatcher's modes: a compiled step breaks its graph there (fullgraph refuses it). The indices
// are computed on the host and the result is made on the input's device. Only masked_select has a
// gradient (it is index_select over indices found this way); the other results carry no history.
// Dtypes follow PyTorch's CPU kernels, restricted to ember's (float32/64, bfloat16, float16, int32,
// int64, bool).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/tensor.h"

namespace ember {

// ---- nonzero and masked_select (functional_select_nonzero.cpp) ----
// The indices of the nonzero elements (NaN counts, -0.0 does not), int64 [n, a.dim()], one row per
// element in row-major order. A 0-d input gives [1, 0] when nonzero and [0, 0] otherwise. Every dtype.
Tensor nonzero(const Tensor& a, Where where = Where::current());
// nonzero's columns as a.dim() 1-D int64 tensors (torch.nonzero(as_tuple=True)); a 0-d input counts
// as 1-D: one tensor holding 0 or nothing.
std::vector<Tensor> nonzero_as_tuple(const Tensor& a, Where where = Where::current());
// torch.argwhere: the same as nonzero.
Tensor argwhere(const Tensor& a, Where where = Where::current());
// The elements of a where mask (bool) is true, a and mask broadcast together, in row-major order of
// the broadcast shape: a 1-D tensor of a's dtype. The gradient reaches the selected elements of a
// (summed over broadcast copies), as PyTorch's.
Tensor masked_select(const Tensor& a, const Tensor& mask, Where where = Where::current());

// ---- unique (functional_select_unique.cpp) ----
// torch.unique: (values, inverse_indices, counts). Without dim: the distinct elements, 1-D and
// ascending (NaN last, and each NaN distinct, as PyTorch's CPU kernel: equal_nan is off);
// inverse_indices (int64, a's shape) holds each element's position in values, counts (int64) how
// often each value occurs. With dim: the distinct slices along dim in lexicographic order (of the
// slices' elements in row-major order; slices holding NaN come in an unspecified order, as in
// PyTorch); inverse_indices is then 1-D over dim. inverse_indices and counts are empty int64
// tensors unless asked for, as libtorch's _unique2. Every dtype. `sorted` is accepted for PyTorch's
// signature: its CPU kernel sorts regardless, and so does this.
std::tuple<Tensor, Tensor, Tensor> unique(const Tensor& a, bool sorted = true, bool return_inverse = false,
                                          bool return_counts = false, std::optional<int64_t> dim = std::nullopt,
                                          Where where = Where::current());
// torch.unique_consecutive: as unique but only runs of equal neighbours collapse, in input order
// (no sort). Consecutive NaNs stay distinct.
std::tuple<Tensor, Tensor, Tensor> unique_consecutive(const Tensor& a, bool return_inverse = false,
                                                      bool return_counts = false,
                                                      std::optional<int64_t> dim = std::nullopt,
                                                      Where where = Where::current());

// ---- counting (functional_select_count.cpp) and bucketing (functional_select_search.cpp) ----
// torch.bincount: counts of each value of a 1-D non-negative int32/int64 tensor, length
// max(a) + 1 or minlength if larger. Without weights int64; with 1-D weights of a's length, the sum
// of the weights per value, float32 for float32 weights and float64 for every other weights dtype
// (PyTorch's CPU rule). An empty input gives int64 zeros of length minlength, weights or not, as
// PyTorch's kernel.
Tensor bincount(const Tensor& a, const Tensor& weights = {}, int64_t minlength = 0, Where where = Where::current());
// torch.histc: `bins` equal-width bins over [min, max] of a floating tensor (flattened); the result
// has a's dtype. min == max takes the data's min and max (0-element input: kept), and if those are
// equal too, [min - 1, max + 1]. Elements outside the range and NaN are ignored; an element on max
// lands in the last bin. An element's bin is (x - min) * bins / (max - min), truncated, computed as
// PyTorch's kernel does, in a's dtype: min and max rounded to it, and for 16-bit inputs each step
// too. Counts are exact, then rounded once to a's dtype (PyTorch adds ones in that dtype, which
// stalls past 2048 in float16). Where PyTorch's arithmetic is undefined, this differs: a step
// that overflows to inf is taken as the fraction of the range in double, and a range that rounds to
// one value of a's dtype is refused.
Tensor histc(const Tensor& a, int64_t bins = 100, double min = 0.0, double max = 0.0, Where where = Where::current());
// torch.searchsorted: for each of `values`, the index where it would be inserted in the innermost
// dim of `sorted_sequence` to keep it sorted: the first index whose element is >= the value (left),
// or > it (right: right = true or side "right"). sorted_sequence is 1-D, or has values' leading
// dims. A NaN value (and a NaN met in the search) moves the search right, as PyTorch's binary
// search `!(element >= value)`. The two dtypes are promoted to their result_type; bool is refused.
// `sorter` (int64, sorted_sequence's shape) gives the ascending order of an unsorted sequence.
// Result int64, or int32 with out_int32, of values' shape.
Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool out_int32 = false, bool right = false,
                    std::optional<std::string> side = std::nullopt, const Tensor& sorter = {},
                    Where where = Where::current());
// torch.bucketize: searchsorted with 1-D boundaries and the arguments swapped.
Tensor bucketize(const Tensor& values, const Tensor& boundaries, bool out_int32 = false, bool right = false,
                 Where where = Where::current());

}  // namespace ember
