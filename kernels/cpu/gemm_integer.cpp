// Integer matrix products on the CPU (PyTorch's CPU multiplies int32 and int64 matrices; its
// CUDA backend does not, and neither does ours). Eigen and small_gemm are float-only and the
// products people run on integers are small, so this is a plain strided loop.
#include "kernels/cpu/gemm_integer.h"

#include "kernels/cpu/copy_kernels.h"

namespace ember::cpu {

namespace {

// One [m, k] x [k, n] product into a contiguous [m, n] block. The arithmetic is in uint64_t:
// it wraps modulo 2^64 where signed overflow would be undefined, and truncating the result to
// int32 or int64 gives exactly the wrap-around of PyTorch's products in those dtypes.
void product(const int64_t* a, const int64_t* b, uint64_t* c, const GemmShape& shape, const int64_t* bias) {
  for (int64_t i = 0; i < shape.m; ++i) {
    uint64_t* row = c + i * shape.n;
    for (int64_t j = 0; j < shape.n; ++j) row[j] = bias != nullptr ? static_cast<uint64_t>(bias[j]) : 0;
    // i, p, j order: the inner loop walks a row of B and of C.
    for (int64_t p = 0; p < shape.k; ++p) {
      const uint64_t left = static_cast<uint64_t>(a[i * shape.a_row_stride + p * shape.a_col_stride]);
      const int64_t* b_row = b + p * shape.b_row_stride;
      for (int64_t j = 0; j < shape.n; ++j) row[j] += left * static_cast<uint64_t>(b_row[j * shape.b_col_stride]);
    }
  }
}

}  // namespace

void integer_gemm(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias, const GemmShape& shape) {
  // A contiguous int64 result (`out` itself when it is int64); uint64_t may alias int64_t.
  const Tensor result = out.dtype() == kInt64 ? out : make_tensor(out.sizes(), kInt64, out.device());
  auto* c = reinterpret_cast<uint64_t*>(result.data_ptr<int64_t>());
  const int64_t* bias_data = bias.defined() ? bias.data_ptr<int64_t>() : nullptr;
  const int64_t batches = shape.batch_sizes.product();
  for (int64_t batch = 0; batch < batches; ++batch) {
    const auto [a_offset, b_offset] = batch_offsets(shape, batch);
    product(a.data_ptr<int64_t>() + a_offset, b.data_ptr<int64_t>() + b_offset, c + batch * shape.m * shape.n,
            shape, bias_data);
  }
  // int64 -> int32 keeps the low 32 bits: the wrap-around of PyTorch's int32 product.
  if (!result.is_same(out)) convert_into(out, result);
}

}  // namespace ember::cpu
