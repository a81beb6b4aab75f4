// CUDA kernels of matmul, mm, bmm and linear through cuBLASLt (runtime/cuda/cublaslt_gemm.h).
// Transposed views go to cuBLASLt as transposes; only operands with no unit stride (or broadcast
// rows) are packed first. Batch dims that do not merge into one stride become a host loop of
// strided-batched GEMMs; linear's bias is cuBLASLt's fused bias epilogue, and so are its tanh-GELU
// and (where a probe shows it keeps NaN, cublaslt_relu_probe.h) ReLU activations. The exact GELU
// runs as the gelu op's kernel after the GEMM; with a 16-bit output that rounds twice, as eager
// linear-then-gelu does, where the CPU kernel applies the activation in fp32 and rounds once: at
// most about one bf16 ulp apart.
#include "runtime/ops/matrix_dims.h"
#include "kernels/gemm_activation.h"
#include "runtime/cuda/cublaslt_gemm.h"
#include "runtime/cuda/cublaslt_relu_probe.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_op_utils.h"
#include "runtime/ops/registry.h"

namespace ember::cuda {

namespace {

using ops::MatrixDims;
using ops::matrix_dims;

// cuBLASLt may have no algorithm for an operand that starts off a 16-byte boundary (a 16-bit
// slice starting at an odd element, say), and its kernels for one are slow: such operands, like
// strided ones it cannot read, are copied (a fresh block is 512-byte aligned). O(n^2) next to
// the GEMM's O(n^3).
bool aligned_16(const Tensor& tensor) { return reinterpret_cast<uintptr_t>(tensor.raw_data_ptr()) % 16 == 0; }

// `tensor` itself when its matrices map onto cuBLASLt from an aligned start, else a packed copy.
Tensor as_operand(const Tensor& tensor, bool right_operand) {
  const MatrixDims dims = matrix_dims(tensor, right_operand);
  GemmMatrix matrix;
  if (aligned_16(tensor) && describe_matrix(dims.rows, dims.cols, dims.row_stride, dims.col_stride, matrix))
    return tensor;
  return packed_copy(tensor);
}

GemmMatrix matrix_of(const Tensor& tensor, bool right_operand) {
  const MatrixDims dims = matrix_dims(tensor, right_operand);
  GemmMatrix matrix;
  const bool described = describe_matrix(dims.rows, dims.cols, dims.row_stride, dims.col_stride, matrix);
  internal_assert(described, "gemm cuda: operand was not packed");
  matrix.data = tensor.raw_data_ptr();
  return matrix;
}

// Dims [0, end) of `tensor` as one run of `size` elements `stride` apart, when memory allows.
bool merge_leading_dims(const Tensor& tensor, int end, int64_t& size, int64_t& stride) {
  size = 1;
  stride = 1;
  bool started = false;
  for (int d = end - 1; d >= 0; --d) {
    const int64_t dim_size = tensor.sizes()[d];
    if (dim_size == 1) continue;
    if (!started) {
      stride = tensor.strides()[d];
      started = true;
    } else if (tensor.strides()[d] != size * stride) {
      return false;
    }
    size *= dim_size;
  }
  return true;
}

// Strides of `tensor`'s batch dims aligned right onto `batch` (0 where it is broadcast).
Dims batch_strides(const Tensor& tensor, const Dims& batch) {
  const int own = std::max(tensor.dim() - 2, 0);
  Dims strides = Dims::filled(batch.size(), 0);
  for (int i = 0; i < own; ++i)
    strides[batch.size() - own + i] = tensor.sizes()[i] == 1 ? 0 : tensor.strides()[i];
  return strides;
}

void run_gemm(const GemmProblem& problem) {
  const bool done = gemm(problem);
  internal_assert(done, "gemm cuda: cuBLASLt refused a GEMM without activation");
}

// The batched case: out[batch..., m, n] (packed) from a and b with broadcast batch strides. The
// innermost batch dims whose strides merge for both operands become one strided-batched call;
// the outer ones a host loop over calls of the same shape (one cached plan).
void batched_matmul(GemmProblem problem, const Tensor& a, const Tensor& b, const Tensor& out) {
  const Dims a_batch(std::span<const int64_t>(a.sizes().begin(), std::max(a.dim() - 2, 0)));
  const Dims b_batch(std::span<const int64_t>(b.sizes().begin(), std::max(b.dim() - 2, 0)));
  const Dims batch = broadcast_shapes(a_batch, b_batch, "matmul");
  const Dims a_strides = batch_strides(a, batch);
  const Dims b_strides = batch_strides(b, batch);
  Dims out_strides = Dims::filled(batch.size(), 0);
  int64_t out_step = problem.m * problem.n;
  for (int d = static_cast<int>(batch.size()) - 1; d >= 0; --d) {
    out_strides[d] = out_step;
    out_step *= batch[d];
  }
  int split = static_cast<int>(batch.size());
  int64_t count = 1, a_stride = 0, b_stride = 0, out_stride = 0;
  for (int d = split - 1; d >= 0; --d) {
    if (batch[d] == 1) {
      split = d;
      continue;
    }
    const bool first = count == 1;
    if (!first && (a_strides[d] != count * a_stride || b_strides[d] != count * b_stride)) break;
    if (first) {
      a_stride = a_strides[d];
      b_stride = b_strides[d];
      out_stride = out_strides[d];
    }
    count *= batch[d];
    split = d;
  }
  check(count <= INT32_MAX, "matmul: {} matrices in one batch exceed cuBLASLt's limit", count);
  problem.batch = count;
  problem.a.batch_stride = a_stride;
  problem.b.batch_stride = b_stride;
  problem.out_batch_stride = out_stride;
  const size_t element = element_size(out.dtype());
  int64_t outer = 1;
  for (int d = 0; d < split; ++d) outer *= batch[d];
  const auto* a_base = static_cast<const char*>(a.raw_data_ptr());
  const auto* b_base = static_cast<const char*>(b.raw_data_ptr());
  auto* out_base = static_cast<char*>(out.raw_data_ptr());
  for (int64_t index = 0; index < outer; ++index) {
    int64_t a_offset = 0, b_offset = 0, out_offset = 0, rest = index;
    for (int d = split - 1; d >= 0; --d) {
      const int64_t position = rest % batch[d];
      rest /= batch[d];
      a_offset += position * a_strides[d];
      b_offset += position * b_strides[d];
      out_offset += position * out_strides[d];
    }
    problem.a.data = a_base + a_offset * element;
    problem.b.data = b_base + b_offset * element;
    problem.out = out_base + out_offset * element;
    run_gemm(problem);
  }
}

void matmul_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& out = outputs[0];
  if (out.numel() == 0) return;
  DeviceGuard guard(out.device());
  const Tensor a = as_operand(call.input(0), false);
  const Tensor b = as_operand(call.input(1), true);
  const MatrixDims left = matrix_dims(a, false);
  const MatrixDims right = matrix_dims(b, true);
  GemmProblem problem;
  problem.dtype = out.dtype();
  problem.m = left.rows;
  problem.n = right.cols;
  problem.k = left.cols;
  problem.a = matrix_of(a, false);
  problem.b = matrix_of(b, true);
  problem.out = out.raw_data_ptr();
  problem.out_leading = problem.n;
  problem.device = out.device().index;
  problem.stream = stream_of(out);
  if (a.dim() <= 2 && b.dim() <= 2) return run_gemm(problem);
  int64_t rows = 0, row_stride = 0;
  GemmMatrix folded;
  if (b.dim() <= 2 && merge_leading_dims(a, a.dim() - 1, rows, row_stride) &&
      describe_matrix(rows, problem.k, row_stride, left.col_stride, folded)) {
    folded.data = a.raw_data_ptr();  // [batch..., m, k] @ [k, n] is one [batch * m, k] @ [k, n]
    problem.m = rows;
    problem.a = folded;
    return run_gemm(problem);
  }
  batched_matmul(problem, a, b, out);
}

// A packed copy of `bias` when cuBLASLt cannot read it in place (strided, or less than 16-byte
// aligned, which some epilogue kernels need).
Tensor bias_operand(const Tensor& bias) {
  const bool packed = bias.numel() <= 1 || bias.strides()[0] == 1;
  return packed && aligned_16(bias) ? bias : packed_copy(bias);
}

// cuBLASLt's epilogue for linear's activation, or None/Bias when it has none for it: its GELU is
// the tanh form, so the exact GELU is never fused.
Epilogue linear_epilogue(bool bias, Activation activation) {
  switch (activation) {
    case Activation::Relu: return bias ? Epilogue::BiasRelu : Epilogue::Relu;
    case Activation::GeluTanh: return bias ? Epilogue::BiasGelu : Epilogue::Gelu;
    case Activation::None:
    case Activation::Gelu: break;
  }
  return bias ? Epilogue::Bias : Epilogue::None;
}

// The activation as its own pass over `out`, in place, with the eager op's CUDA kernel (each
// element is read and written by the same thread).
void apply_activation(const Tensor& out, Activation activation) {
  static const OpDef& relu = lookup_op("relu");
  static const OpDef& gelu = lookup_op("gelu");
  const OpDef& op = activation == Activation::Relu ? relu : gelu;
  const Attrs attrs = activation == Activation::Relu ? Attrs{} : Attrs{{"tanh", activation == Activation::GeluTanh}};
  const Tensor inputs[1] = {out};
  TensorList outputs{out};
  op.kernel_for(out.device())(OpCall{op, inputs, attrs}, outputs);
}

// linear(input [*, in], weight [out, in], bias) = activation(input . W^T + bias), W^T read in place.
void linear_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& out = outputs[0];
  if (out.numel() == 0) return;
  DeviceGuard guard(out.device());
  Tensor input = call.input(0);
  Tensor weight = call.input(1);
  const int64_t in_features = weight.sizes()[1];
  GemmProblem problem;
  problem.dtype = out.dtype();
  problem.n = weight.sizes()[0];
  problem.k = in_features;
  int64_t rows = 0, row_stride = 0;
  if (!aligned_16(input) || !merge_leading_dims(input, input.dim() - 1, rows, row_stride) ||
      !describe_matrix(rows, in_features, row_stride, input.strides()[input.dim() - 1], problem.a)) {
    input = packed_copy(input);
    merge_leading_dims(input, input.dim() - 1, rows, row_stride);
    describe_matrix(rows, in_features, row_stride, input.strides()[input.dim() - 1], problem.a);
  }
  problem.m = rows;
  problem.a.data = input.raw_data_ptr();
  // Element (i, j) of W^T is W[j, i]: row stride W's column stride and vice versa.
  if (!aligned_16(weight) || !describe_matrix(in_features, problem.n, weight.strides()[1], weight.strides()[0], problem.b)) {
    weight = packed_copy(weight);
    describe_matrix(in_features, problem.n, weight.strides()[1], weight.strides()[0], problem.b);
  }
  problem.b.data = weight.raw_data_ptr();
  Tensor bias;
  if (call.input(2).defined()) {
    bias = bias_operand(call.input(2));
    problem.bias = bias.raw_data_ptr();
  }
  const auto activation = static_cast<Activation>(call.attrs.get_or<int64_t>("activation", 0));
  problem.epilogue = linear_epilogue(bias.defined(), activation);
  problem.out = out.raw_data_ptr();
  problem.out_leading = problem.n;
  problem.device = out.device().index;
  problem.stream = stream_of(out);
  const Epilogue plain = linear_epilogue(bias.defined(), Activation::None);
  // cuBLASLt's GELU epilogue computes its tanh at float precision, even for a float64 GEMM (1e-9
  // off, seen on the H200): float64, the reference dtype, runs the activation as its own pass.
  const bool fusable = activation == Activation::Relu
                           ? relu_epilogue_keeps_nan(problem.dtype, problem.device, problem.stream)
                           : problem.dtype != kFloat64;
  if (problem.epilogue != plain && fusable && gemm(problem)) return;  // fused
  problem.epilogue = plain;
  run_gemm(problem);
  if (activation != Activation::None) apply_activation(out, activation);
}

void register_gemm_cuda_kernels(OpRegistry& registry) {
  registry.set_kernel("matmul", DeviceType::CUDA, matmul_cuda);
  registry.set_kernel("mm", DeviceType::CUDA, matmul_cuda);
  registry.set_kernel("bmm", DeviceType::CUDA, matmul_cuda);
  registry.set_kernel("linear", DeviceType::CUDA, linear_cuda);
}

const OpRegistration registration(register_gemm_cuda_kernels);

}  // namespace
}  // namespace ember::cuda
