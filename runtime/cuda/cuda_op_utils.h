// Helpers shared by the CUDA op files in runtime/cuda: how an OpCall's tensors become the raw
// launch descriptions of kernels/cuda/*.h (shape, strided operands, stream), dtype conversion on
// the device, and turning a launcher's status into an ember::Error at the op's call.
#pragma once

#include <source_location>

#include "kernels/cuda/elementwise.h"
#include "runtime/tensor.h"

namespace ember::cuda {

// Throws ember::Error naming the CUDA error when a launcher returned a non-zero cudaError_t.
void launch_checked(int status, std::source_location where = std::source_location::current());

// `out`'s shape (at most kMaxDims dims) and the current stream of its device.
LaunchShape shape_of(const Tensor& out);

// `input` seen through `shape`: trailing dims aligned, broadcast dims get stride 0.
StridedOperand operand_of(const Tensor& input, const LaunchShape& shape);

// `tensor` converted to `dtype` on its own device (itself when it already has that dtype).
Tensor as_dtype(const Tensor& tensor, DType dtype);

// `tensor` as one dense row-major block on its own device (itself when already contiguous).
Tensor contiguous_on_device(const Tensor& tensor);
// A dense row-major copy of CUDA `tensor` in a fresh block (512-byte aligned), even when it is
// contiguous already: for a view whose start some library cannot take.
Tensor packed_copy(const Tensor& tensor);

// The cudaStream_t (as void*) kernels on `tensor`'s device are launched on from this thread.
void* stream_of(const Tensor& tensor);

}  // namespace ember::cuda
