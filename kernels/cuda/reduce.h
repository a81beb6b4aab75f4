// Host-side entry points of the CUDA reduction kernels (reduce_sum.cu, reduce_extremum.cu,
// reduce_stats.cu). Plain C++: runtime/cuda/reduce_cuda_ops.cpp lays every reduction out as a
// dense [outer, reduce, inner] block (output element o * inner + i reduces the `reduce` elements
// at (o * reduce + r) * inner + i) and passes raw pointers.
#pragma once

#include <cstdint>

namespace ember {
enum class DType : uint8_t;
}  // namespace ember

namespace ember::cuda {

struct ReduceLayout {
  int64_t outer = 1;
  int64_t reduce = 1;
  int64_t inner = 1;
  void* stream = nullptr;  // cudaStream_t
};

enum class ReduceKind : uint8_t { Sum, Mean, Max, Min, Var, ArgMax, ArgMin, Prod, Any, All };

// Bytes of device scratch a reduction needs (0 when it runs in one pass): long reductions over
// few outputs are split into partial results that a second pass combines in a fixed order.
int64_t reduce_scratch_bytes(ReduceKind kind, DType dtype, const ReduceLayout& layout);

// output[o * inner + i] = reduction of input's group. Output dtypes follow the shape rules: sum
// and prod of integers/bool are int64, any and all are bool for every input, argmax/argmin write
// int64 indices (position r within the group), everything else keeps `dtype`. `correction` is
// var's. Returns the cudaError_t as an int.
int launch_reduce(ReduceKind kind, DType dtype, const void* input, void* output, void* scratch,
                  const ReduceLayout& layout, int64_t correction = 0);

// The gradient of amax/amin: grad_input = grad[o, i] / ties at every element equal to
// result[o, i] (NaN results match NaN elements), 0 elsewhere. All operands dense in the layout.
// Few long groups count their ties in device scratch of extremum_backward_scratch_bytes (else 0).
int64_t extremum_backward_scratch_bytes(const ReduceLayout& layout);
int launch_extremum_backward(DType dtype, const void* grad, const void* input, const void* result,
                             void* grad_input, void* scratch, const ReduceLayout& layout);

}  // namespace ember::cuda
