// Whether two tensors share memory, in the terms PyTorch uses for its in-place checks: an
// in-place op whose other input partly overlaps the tensor it writes, or which writes an
// expanded tensor (several elements at one address), gives an answer that depends on the order
// in which the kernel visits elements: the CPU's loop order, or no order at all among the
// threads of a GPU. Such calls are refused, as PyTorch refuses them, except that an op writing
// one value everywhere (fill_, zero_) may write an expanded tensor.
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

// The bytes of its storage a tensor of this geometry can touch, [begin, end), counted from the
// storage's start; {0, 0} for a tensor of no elements. Tensors whose extents do not overlap share
// no memory (the converse does not hold: interleaved strided views share none either).
struct ByteExtent {
  int64_t begin = 0;
  int64_t end = 0;
  bool overlaps(const ByteExtent& other) const {
    return begin < end && other.begin < other.end && begin < other.end && other.begin < end;
  }
};
ByteExtent byte_extent(const Dims& sizes, const Dims& strides, int64_t offset, DType dtype);

// `tensor` with every expanded dim (size > 1, stride 0) cut to one element: its distinct
// addresses, each once, for a kernel writing one value to all of them. An alias made outside the
// dispatcher, without history; `tensor` itself when nothing repeats.
Tensor without_repeats(const Tensor& tensor);

}  // namespace ember
