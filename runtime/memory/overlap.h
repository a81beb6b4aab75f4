// Whether two tensors share memory, in the terms PyTorch uses for its in-place checks: an
// in-place op whose other input partly overlaps the tensor it writes, or which writes an
// expanded tensor (several elements at one address), gives an answer that depends on the order
// in which the kernel visits elements: the CPU's loop order, or no order at all among the
// threads of a GPU. Such calls are refused, as PyTorch refuses them.
#pragma once

#include "runtime/tensor.h"

namespace ember {

enum class MemoryOverlap {
  None,     // no shared bytes (or a tensor is empty)
  Full,     // the same elements in the same layout: a.add_(a) is well defined
  Partial,  // some elements shared, or the same bytes in another layout
  TooHard,  // the same storage, and a layout with gaps or repeats: not decided (allowed)
};

// How `a` and `b` share memory. Like PyTorch's get_overlap_status, only tensors that cover their
// bytes densely (any dim order, no gaps, no repeats) are compared; others sharing a storage are
// TooHard.
MemoryOverlap memory_overlap(const Tensor& a, const Tensor& b);

// True when some element of `tensor` shares its address with another: a dim of size > 1 with
// stride 0 (an expanded tensor). Other repeats (crafted strides) are not looked for.
bool has_internal_overlap(const Tensor& tensor);

}  // namespace ember
