// Host-side entry points of ember's own CUDA layer_norm kernels (kernels/cuda/layer_norm_*.cu).
// Plain C++ with no CUDA header. Every tensor is one dense row-major block: `rows` rows of `cols`
// elements (the trailing normalized dims flattened). Formulas as in kernels/cpu/norm_kernels.h.
#pragma once

#include <cstdint>

namespace ember {
// Declared, not included: runtime/dtype.h brings fmt, which nvcc cannot compile.
enum class DType : uint8_t;
}  // namespace ember

namespace ember::cuda {

// Rows of at most this many elements get one warp each, the row held in registers; longer rows
// get one block each.
constexpr int64_t kLayerNormWarpMaxCols = 1024;

// y = (x - mean) * rstd * weight + bias. weight and bias may be null (then 1 and 0). mean and rstd
// are float32 for float32/bf16/fp16 inputs and float64 for float64 ones; y has the input's dtype.
struct LayerNormForward {
  DType dtype{};
  const void* input = nullptr;
  const void* weight = nullptr;
  const void* bias = nullptr;
  void* output = nullptr;
  void* mean = nullptr;
  void* rstd = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  double eps = 0.0;
  void* stream = nullptr;  // cudaStream_t
};

// grad_input per row, and grad_weight / grad_bias (always written, length cols) as a fixed-order
// two-stage column sum: each chunk of rows writes its partial sums to `partials` (see
// layer_norm_partial_chunks), then one pass adds the chunks in order. No atomics: the result is
// the same on every run. `partials` holds 2 * chunks * cols float64 elements (every sum is
// double, as on the CPU). weight may be null.
struct LayerNormBackward {
  DType dtype{};
  const void* grad_output = nullptr;
  const void* input = nullptr;
  const void* mean = nullptr;
  const void* rstd = nullptr;
  const void* weight = nullptr;
  void* grad_input = nullptr;
  void* grad_weight = nullptr;
  void* grad_bias = nullptr;
  void* partials = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  void* stream = nullptr;  // cudaStream_t
};

// How many row chunks the column sums of a (rows x cols) backward use; depends only on the shape.
int64_t layer_norm_partial_chunks(int64_t rows, int64_t cols);

// Each returns the launch's cudaError_t as an int (0 on success).
int launch_layer_norm_forward(const LayerNormForward& args);
int launch_layer_norm_backward(const LayerNormBackward& args);

}  // namespace ember::cuda
