// Linear algebra ops: matmul (PyTorch semantics: 1-D/2-D/batched with broadcast batch dims), mm,
// bmm and linear (with its optional fused activation). Kernels in kernels/cpu/gemm_kernels.h
// (Eigen). Backward rules are products of transposed views, so they copy nothing either.
#include "kernels/cpu/gemm_kernels.h"
#include "kernels/gemm_activation.h"
#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/ops/registry.h"

namespace ember::ops {

namespace {

void check_dtypes(const OpCall& call, const Tensor& a, const Tensor& b) {
  check(a.dtype() == b.dtype(), "{}: expected operands of one dtype, got {} and {} (shapes {} and {})",
        call.op.name, a.dtype(), b.dtype(), a.sizes(), b.sizes());
  check(a.dtype() != kBool, "{}: expected floating-point or integer operands, got bool", call.op.name);
  // As PyTorch: its CPU multiplies int32/int64 matrices, its CUDA backend (cuBLAS) does not.
  check(is_floating(a.dtype()) || a.device().is_cpu(),
        "{}: integer operands ({}) are multiplied on the CPU only, as in PyTorch; got them on {}", call.op.name,
        a.dtype(), a.device());
}

void check_contracted(const OpCall& call, const Tensor& a, const Tensor& b) {
  const int64_t a_inner = a.sizes()[a.dim() - 1];
  const int64_t b_inner = b.dim() == 1 ? b.sizes()[0] : b.sizes()[b.dim() - 2];
  check(a_inner == b_inner, "{}: shapes {} and {} cannot be multiplied ({} columns vs {} rows)", call.op.name,
        a.sizes(), b.sizes(), a_inner, b_inner);
}

void matmul_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& a = call.input(0);
  const Tensor& b = call.input(1);
  check(a.dim() >= 1 && b.dim() >= 1, "matmul: both operands need at least one dim, got shapes {} and {}",
        a.sizes(), b.sizes());
  check_dtypes(call, a, b);
  check_contracted(call, a, b);
  const Dims a_batch(std::span<const int64_t>(a.sizes().begin(), std::max(a.dim() - 2, 0)));
  const Dims b_batch(std::span<const int64_t>(b.sizes().begin(), std::max(b.dim() - 2, 0)));
  Dims sizes = broadcast_shapes(a_batch, b_batch, "matmul");
  if (a.dim() >= 2) sizes.push_back(a.sizes()[a.dim() - 2]);
  if (b.dim() >= 2) sizes.push_back(b.sizes()[b.dim() - 1]);
  outputs[0].sizes = sizes;
  outputs[0].dtype = a.dtype();
}

void mm_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& a = call.input(0);
  const Tensor& b = call.input(1);
  check(a.dim() == 2 && b.dim() == 2, "mm: expected 2-D matrices, got shapes {} and {}", a.sizes(), b.sizes());
  check_dtypes(call, a, b);
  check_contracted(call, a, b);
  outputs[0].sizes = {a.sizes()[0], b.sizes()[1]};
  outputs[0].dtype = a.dtype();
}

void bmm_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& a = call.input(0);
  const Tensor& b = call.input(1);
  check(a.dim() == 3 && b.dim() == 3, "bmm: expected 3-D batches of matrices, got shapes {} and {}", a.sizes(),
        b.sizes());
  check(a.sizes()[0] == b.sizes()[0], "bmm: batch sizes differ: {} vs {} (shapes {} and {})", a.sizes()[0],
        b.sizes()[0], a.sizes(), b.sizes());
  check_dtypes(call, a, b);
  check_contracted(call, a, b);
  outputs[0].sizes = {a.sizes()[0], a.sizes()[1], b.sizes()[2]};
  outputs[0].dtype = a.dtype();
}

void linear_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& input = call.input(0);
  const Tensor& weight = call.input(1);
  const Tensor& bias = call.input(2);
  check(weight.dim() == 2, "linear: weight must be 2-D [out, in], got shape {}", weight.sizes());
  check(input.dim() >= 1, "linear: input must have at least one dim [*, in], got a 0-d tensor");
  const int64_t features = input.sizes()[input.dim() - 1];
  check(features == weight.sizes()[1], "linear: input has {} features but weight expects {} (input {}, weight {})",
        features, weight.sizes()[1], input.sizes(), weight.sizes());
  check_dtypes(call, input, weight);
  if (bias.defined()) {
    check(bias.dim() == 1 && bias.sizes()[0] == weight.sizes()[0],
          "linear: bias must be 1-D with {} elements (one per output feature), got shape {} (weight {})",
          weight.sizes()[0], bias.sizes(), weight.sizes());
    check(bias.dtype() == input.dtype(), "linear: bias dtype {} differs from input dtype {}", bias.dtype(),
          input.dtype());
  }
  const int64_t activation = call.attrs.get_or<int64_t>("activation", 0);
  check(is_activation_code(activation),
        "linear: activation must be 0 (none), 1 (relu), 2 (gelu) or 3 (gelu_tanh), got {}", activation);
  check(activation == 0 || is_floating(input.dtype()), "linear: a fused activation needs floating-point operands, got {}",
        input.dtype());
  Dims sizes = input.sizes();
  sizes[sizes.size() - 1] = weight.sizes()[0];
  outputs[0].sizes = sizes;
  outputs[0].dtype = input.dtype();
}

// ---- backward rules ----

void mm_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  if (ctx.needs_input_grad[0]) grads[0] = mm(ctx.grad(), ctx.input(1).t());
  if (ctx.needs_input_grad[1]) grads[1] = mm(ctx.input(0).t(), ctx.grad());
}

void bmm_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  if (ctx.needs_input_grad[0]) grads[0] = bmm(ctx.grad(), ctx.input(1).transpose(1, 2));
  if (ctx.needs_input_grad[1]) grads[1] = bmm(ctx.input(0).transpose(1, 2), ctx.grad());
}

// 1-D operands are promoted to matrices ([k] -> [1, k] on the left, [k, 1] on the right) and the
// gradient gets the matching size-1 dims; broadcast batch dims are summed away by sum_to_size.
// Each operand is saved only for the other's gradient (saved_for_other_inputs): the sizes come
// from the input metas.
void matmul_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Dims& a_sizes = ctx.input_metas[0].sizes;
  const Dims& b_sizes = ctx.input_metas[1].sizes;
  const bool a_vector = a_sizes.size() == 1, b_vector = b_sizes.size() == 1;
  Tensor grad = ctx.grad();
  if (b_vector) grad = grad.unsqueeze(-1);
  if (a_vector) grad = grad.unsqueeze(-2);
  if (ctx.needs_input_grad[0]) {
    const Tensor b = b_vector ? ctx.input(1).unsqueeze(1) : ctx.input(1);
    const Dims a_matrix = a_vector ? Dims{1, a_sizes[0]} : a_sizes;
    const Tensor full = matmul(grad, b.transpose(-1, -2));
    grads[0] = sum_to_size(full, a_matrix).reshape(a_sizes);
  }
  if (ctx.needs_input_grad[1]) {
    const Tensor a = a_vector ? ctx.input(0).unsqueeze(0) : ctx.input(0);
    const Dims b_matrix = b_vector ? Dims{b_sizes[0], 1} : b_sizes;
    Tensor full;
    if (b_matrix.size() == 2 && grad.dim() > 2) {  // sum over the batch inside one GEMM: [k, B*m] @ [B*m, n]
      const int64_t k = a.sizes()[a.dim() - 1];
      const int64_t n = grad.sizes()[grad.dim() - 1];
      full = mm(a.reshape({-1, k}).t(), grad.reshape({-1, n}));
    } else {
      full = sum_to_size(matmul(a.transpose(-1, -2), grad), b_matrix);
    }
    grads[1] = full.reshape(b_sizes);
  }
}

// The gradient before a fused activation. The pre-activation is recomputed (one more GEMM)
// rather than saved, so a plain linear keeps no output alive for a backward that never needs it.
// relu_backward reads relu's output, but pre > 0 exactly when relu(pre) > 0, so pre serves.
Tensor activation_grad(const BackwardContext& ctx, Activation activation) {
  const Tensor pre = linear(ctx.input(0), ctx.input(1), ctx.saved_inputs[2]);  // the bias may be absent
  if (activation == Activation::Relu) {
    static const OpDef& op = lookup_op("relu_backward");
    return dispatch_one(op, {ctx.grad(), pre});
  }
  static const OpDef& op = lookup_op("gelu_backward");
  return dispatch_one(op, {ctx.grad(), pre}, Attrs{{"tanh", activation == Activation::GeluTanh}});
}

// grad_input = grad W, grad_weight = grad^T x over all leading dims, grad_bias = column sums.
void linear_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const auto activation = static_cast<Activation>(ctx.attrs.get_or<int64_t>("activation", 0));
  const Tensor grad = activation == Activation::None ? ctx.grad() : activation_grad(ctx, activation);
  const Tensor& input = ctx.input(0);
  const Tensor& weight = ctx.input(1);
  if (ctx.needs_input_grad[0]) grads[0] = matmul(grad, weight);
  if (!ctx.needs_input_grad[1] && !ctx.needs_input_grad[2]) return;
  const Tensor grad_rows = grad.dim() == 2 ? grad : grad.reshape({-1, weight.sizes()[0]});
  if (ctx.needs_input_grad[1]) {
    const Tensor input_rows = input.dim() == 2 ? input : input.reshape({-1, weight.sizes()[1]});
    grads[1] = mm(grad_rows.t(), input_rows);
  }
  if (ctx.needs_input_grad[2]) grads[2] = sum(grad_rows, {0});
}

OpDef gemm_op(const char* name, const char* schema, ShapeRule infer, Kernel kernel, BackwardRule backward) {
  OpDef def = make_op(name, schema, OpKind::Other, infer, kernel, backward);
  def.save_inputs = 0b11;  // every rule needs the operands (linear: input and weight, not bias)
  return def;
}

void register_matmul_ops(OpRegistry& registry) {
  // A product's operands are each read only by the other's gradient.
  for (OpDef def : {gemm_op("matmul", "matmul(Tensor a, Tensor b) -> Tensor", matmul_shape, cpu::matmul_kernel,
                            matmul_backward),
                    gemm_op("mm", "mm(Tensor a, Tensor b) -> Tensor", mm_shape, cpu::matmul_kernel, mm_backward),
                    gemm_op("bmm", "bmm(Tensor a, Tensor b) -> Tensor", bmm_shape, cpu::matmul_kernel, bmm_backward)}) {
    def.saved_for_other_inputs = 0b11;
    registry.add(std::move(def));
  }
  OpDef linear_def = gemm_op("linear", "linear(Tensor input, Tensor weight, Tensor? bias, int activation=0) -> Tensor",
                             linear_shape, cpu::linear_kernel, linear_backward);
  linear_def.save_inputs = 0b111;  // the bias too: a fused activation's backward recomputes x W^T + b
  registry.add(std::move(linear_def));
}

const OpRegistration registration(register_matmul_ops);

}  // namespace
}  // namespace ember::ops
