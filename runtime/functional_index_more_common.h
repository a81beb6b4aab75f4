// Checks and index arithmetic shared by the functional_index_more*.cpp files (not public API).
#pragma once

#include <cstdint>

#include "runtime/tensor.h"

namespace ember::index_more {

// index must be int64 (take, put, take_along_dim, as PyTorch's) or also int32 (index_fill,
// index_copy, whose registry op underneath takes both).
void check_index_dtype(const char* function, const Tensor& index, bool int32_too);
// Refuses an index outside [-size, size) naming the function, the index and the size. Reads the
// values only in eager mode on the CPU (see functional_index_more.h); elsewhere the kernel of the
// op underneath checks the wrapped index.
void check_index_range(const char* function, const Tensor& index, int64_t size, const char* what);
// index + size where index < 0 (PyTorch's wrapping of negative indices), in index's dtype.
Tensor wrap_negative(const Tensor& index, int64_t size);
// A bool tensor of shape [1, .., n, .., 1] (a.dim() dims, n = a.size(dim)) true at the positions
// listed in index (already wrapped) along dim: where() over it selects whole slices.
Tensor slice_mask(const Tensor& a, int dim, const Tensor& index);
// A bool tensor of index's length (1-D) true where that entry is the last one with its value: a
// repeated index writes the last of its values, as PyTorch's CPU loops do (PyTorch calls the
// order undefined), and never their sum. Made with a stable sort, so it works on every device and
// under capture without reading the indices on the host.
Tensor last_occurrences(const Tensor& index);

}  // namespace ember::index_more
