// matmul / mm / bmm / linear kernels: map tensors onto one strided batched GEMM. Copies happen
// only for 16-bit operands (computed in fp32) and for matrices with no unit stride; batch dims of
// a left operand multiplied by a plain matrix are folded into its rows (one big GEMM instead of
// many small ones) whenever its memory allows.
#include "kernels/cpu/gemm_kernels.h"

#include "kernels/cpu/copy_kernels.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_integer.h"
#include "runtime/ops/matrix_dims.h"

namespace ember::cpu {

namespace {

DType compute_dtype(DType dtype) { return dtype == kFloat64 ? kFloat64 : kFloat32; }

// Merges dims [0, end) of `tensor` into one run of `size` elements `stride` apart, as view()
// would; false when memory does not allow it. Size-1 dims never matter.
bool merge_leading_dims(const Tensor& tensor, int end, int64_t& size, int64_t& stride) {
  size = 1;
  stride = 1;
  bool started = false;
  for (int d = end - 1; d >= 0; --d) {
    const int64_t dim_size = tensor.sizes()[d];
    if (dim_size == 0) {
      size = 0;
      return true;
    }
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

using ops::MatrixDims;
using ops::matrix_dims;

// A contiguous copy in `dtype` (kernel-level: no dispatch, no autograd).
Tensor contiguous_copy(const Tensor& tensor, DType dtype) {
  Tensor copy = make_tensor(tensor.sizes(), dtype, tensor.device());
  convert_into(copy, tensor);
  return copy;
}

// `tensor` as a GEMM operand: itself when its dtype is the compute dtype and its matrix maps
// onto Eigen, else a contiguous copy in the compute dtype.
Tensor as_operand(const Tensor& tensor, DType compute, bool right_operand) {
  const MatrixDims dims = matrix_dims(tensor, right_operand);
  if (tensor.dtype() == compute && gemm_mappable(dims.rows, dims.cols, dims.row_stride, dims.col_stride))
    return tensor;
  return contiguous_copy(tensor, compute);
}

// Batch strides of `tensor`'s leading dims aligned to the right of `batch_sizes` (0 where the
// tensor is broadcast).
Dims batch_strides(const Tensor& tensor, const Dims& batch_sizes) {
  const int own = std::max(tensor.dim() - 2, 0);
  Dims strides = Dims::filled(batch_sizes.size(), 0);
  for (int i = 0; i < own; ++i) {
    const int target = batch_sizes.size() - own + i;
    strides[target] = tensor.sizes()[i] == 1 ? 0 : tensor.strides()[i];
  }
  return strides;
}

GemmShape matmul_shape(const Tensor& a, const Tensor& b) {
  const MatrixDims left = matrix_dims(a, false);
  const MatrixDims right = matrix_dims(b, true);
  GemmShape shape;
  shape.m = left.rows;
  shape.n = right.cols;
  shape.k = left.cols;
  shape.a_row_stride = left.row_stride;
  shape.a_col_stride = left.col_stride;
  shape.b_row_stride = right.row_stride;
  shape.b_col_stride = right.col_stride;
  int64_t rows = 0, row_stride = 0;
  if (b.dim() <= 2 && a.dim() > 2 && merge_leading_dims(a, a.dim() - 1, rows, row_stride) &&
      gemm_mappable(rows, shape.k, row_stride, shape.a_col_stride)) {
    shape.m = rows;  // [batch..., m, k] @ [k, n] is one [batch * m, k] @ [k, n]
    shape.a_row_stride = row_stride;
    return shape;
  }
  const Dims a_batch(std::span<const int64_t>(a.sizes().begin(), std::max(a.dim() - 2, 0)));
  const Dims b_batch(std::span<const int64_t>(b.sizes().begin(), std::max(b.dim() - 2, 0)));
  shape.batch_sizes = broadcast_shapes(a_batch, b_batch, "matmul");
  shape.a_batch_strides = batch_strides(a, shape.batch_sizes);
  shape.b_batch_strides = batch_strides(b, shape.batch_sizes);
  return shape;
}

// Runs the GEMM into `out`, through an fp32 buffer when `out` is 16-bit (the activation, if
// any, then runs on the fp32 values before rounding).
void run_gemm(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias, const GemmShape& shape,
              Activation activation = Activation::None) {
  const DType compute = compute_dtype(out.dtype());
  const Tensor result = out.dtype() == compute ? out : make_tensor(out.sizes(), compute, out.device());
  if (compute == kFloat64) {
    gemm<double>(a.data_ptr<double>(), b.data_ptr<double>(), result.data_ptr<double>(), shape,
                 bias.defined() ? bias.data_ptr<double>() : nullptr, activation);
  } else {
    gemm<float>(a.data_ptr<float>(), b.data_ptr<float>(), result.data_ptr<float>(), shape,
                bias.defined() ? bias.data_ptr<float>() : nullptr, activation);
  }
  if (!result.is_same(out)) convert_into(out, result);
}

}  // namespace

void matmul_kernel(const OpCall& call, TensorList& outputs) {
  if (is_integral(outputs[0].dtype())) {
    const Tensor a = contiguous_copy(call.input(0), kInt64);
    const Tensor b = contiguous_copy(call.input(1), kInt64);
    integer_gemm(outputs[0], a, b, Tensor(), matmul_shape(a, b));
    return;
  }
  const DType compute = compute_dtype(outputs[0].dtype());
  const Tensor a = as_operand(call.input(0), compute, false);
  const Tensor b = as_operand(call.input(1), compute, true);
  run_gemm(outputs[0], a, b, Tensor(), matmul_shape(a, b));
}

void linear_kernel(const OpCall& call, TensorList& outputs) {
  const DType compute = compute_dtype(outputs[0].dtype());
  Tensor input = call.input(0);
  const Tensor& weight = call.input(1);
  const Tensor& bias = call.input(2);
  const int64_t in_features = weight.sizes()[1];
  if (is_integral(outputs[0].dtype())) {  // no activation: linear_shape refuses one on integers
    const Tensor rows = contiguous_copy(input, kInt64);
    const Tensor w = contiguous_copy(weight, kInt64);
    GemmShape shape;
    shape.m = 1;
    for (int d = 0; d + 1 < input.dim(); ++d) shape.m *= input.sizes()[d];  // not numel / k: k may be 0
    shape.n = w.sizes()[0];
    shape.k = in_features;
    shape.a_row_stride = in_features;
    shape.a_col_stride = 1;
    shape.b_row_stride = 1;  // W^T: element (p, j) is W[j, p]
    shape.b_col_stride = in_features;
    integer_gemm(outputs[0], rows, w, bias.defined() ? contiguous_copy(bias, kInt64) : Tensor(), shape);
    return;
  }
  int64_t rows = 0, row_stride = 0;
  bool usable = input.dtype() == compute && merge_leading_dims(input, input.dim() - 1, rows, row_stride) &&
                gemm_mappable(rows, in_features, row_stride, input.strides()[input.dim() - 1]);
  if (!usable) {
    input = contiguous_copy(input, compute);
    merge_leading_dims(input, input.dim() - 1, rows, row_stride);
  }
  // W^T read in place: element (i, j) of W^T is W[j, i].
  const bool weight_usable = weight.dtype() == compute && gemm_mappable(in_features, weight.sizes()[0],
                                                                         weight.strides()[1], weight.strides()[0]);
  const Tensor w = weight_usable ? weight : contiguous_copy(weight, compute);
  const bool bias_usable = !bias.defined() || (bias.dtype() == compute && (bias.numel() <= 1 || bias.strides()[0] == 1));
  const Tensor b = bias_usable ? bias : contiguous_copy(bias, compute);
  GemmShape shape;
  shape.m = rows;
  shape.n = w.sizes()[0];
  shape.k = in_features;
  shape.a_row_stride = row_stride;
  shape.a_col_stride = input.strides()[input.dim() - 1];
  shape.b_row_stride = w.strides()[1];  // W^T read in place: element (i, j) is W[j, i]
  shape.b_col_stride = w.strides()[0];
  run_gemm(outputs[0], input, w, b, shape, static_cast<Activation>(call.attrs.get_or<int64_t>("activation", 0)));
}

}  // namespace ember::cpu
