// ember's one door to cuBLASLt: a row-major (batched, strided) GEMM with optional fused bias /
// ReLU / GELU epilogues, as the GEMM ops and the compile stage call it. Plans (descriptors,
// layouts, the heuristic's best algorithm) are cached per thread by problem, so a steady-state
// call costs one hash lookup plus cublasLtMatmul. No CUDA header here: streams are void*.
#pragma once

#include <cstdint>

#include "runtime/dtype.h"

namespace ember::cuda {

// What cuBLASLt applies to the product before storing it. Bias adds bias[j] to column j of the
// row-major result (one value per output feature). Gelu is cuBLASLt's GELU, the tanh
// approximation 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))), not the exact erf form.
enum class Epilogue { None, Bias, Relu, BiasRelu, Gelu, BiasGelu };

// One row-major matrix operand: element (row, col) of the logical matrix lives at
// data[row * leading + col], or at data[col * leading + row] when `transposed` (the memory holds
// the matrix's transpose, e.g. a weight [out, in] read as W^T). Matrix `b` of a batch lives
// `batch_stride` elements after matrix b - 1 (0: every batch reuses one matrix).
struct GemmMatrix {
  const void* data = nullptr;
  int64_t leading = 0;
  bool transposed = false;
  int64_t batch_stride = 0;
};

// out[b] (m x n, row-major, leading dim out_leading, batch stride out_batch_stride)
//   = epilogue(a[b] (m x k) . b[b] (k x n) + bias), for b in [0, batch).
// All pointers are device memory of `device`, in `dtype`; bias (n elements, packed, 16-byte
// aligned) only with a Bias* epilogue. float32 honours get_allow_tf32(); 16-bit types accumulate
// in float32; float64 computes in float64. Work is queued on `stream` (a cudaStream_t) and nothing
// waits for it.
struct GemmProblem {
  DType dtype = kFloat32;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  GemmMatrix a, b;
  void* out = nullptr;
  int64_t out_leading = 0;
  int64_t out_batch_stride = 0;
  Epilogue epilogue = Epilogue::None;
  const void* bias = nullptr;
  int device = 0;
  void* stream = nullptr;
};

// Runs `problem`. Returns false (having queued nothing) only when cuBLASLt has no algorithm for
// its ReLU/GELU epilogue with this dtype and shape, or k == 0 with an activation: the caller then
// composes the GEMM (with Bias or None) and the activation itself. Bias alone always succeeds:
// without a fused algorithm the bias is broadcast into `out` first and accumulated with beta = 1.
// Throws ember::Error for bad problems and CUDA/cuBLAS failures.
bool gemm(const GemmProblem& problem);

// True when `data` can be a GemmMatrix of a rows x cols matrix with these element strides, and
// then fills `matrix` (without data); size-1 dims take any stride. False when neither stride is 1
// or a leading dim is too small (overlapping / broadcast rows): make the operand contiguous.
bool describe_matrix(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride, GemmMatrix& matrix);

// Times the raw cuBLASLt GEMM of ember's mm for contiguous operands (row-major [m,k] . [k,n],
// with the same algorithm choice and 32 MiB workspace as gemm()), without ember's dispatch:
// the seconds one GEMM takes on average over `iterations` after a warm-up, on device 0's
// current stream. Inputs hold small pseudo-random values. For side-by-side benchmarks.
double benchmark_raw_gemm(int64_t m, int64_t n, int64_t k, DType dtype, int iterations);

// Creates this thread's cuBLASLt handle for `device` and takes the workspace of (`device`,
// `stream`) now, if that was not done yet. Call before capturing `stream` into a CUDA graph: the
// first GEMM on a stream otherwise does both inside the capture, and cudaMalloc is not allowed
// there (cudaStreamCaptureModeThreadLocal prohibits it).
void prepare_gemm_for_capture(int device, void* stream);

// Number of cached GEMM plans of this thread (tests check that repeated calls create none). At
// most kCachedPlansPerThread: past that, the least recently used plan is dropped.
int64_t cached_plan_count();
constexpr int64_t kCachedPlansPerThread = 1024;

}  // namespace ember::cuda
