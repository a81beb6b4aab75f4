// linalg_qr(A; mode) -> (Q, R), torch.linalg.qr: mode 0 "reduced", 1 "complete", 2 "r" (R only;
// Q is empty, shape [0]). Kernels: kernels/cpu/linalg_qr_kernel.cpp (Eigen),
// runtime/cuda/linalg_qr_cuda_ops.cpp (cuSOLVER geqrf + orgqr). The backward is PyTorch's
// linalg_qr_backward, written with ops (linalg_spectral.h gives the formula).
#include "kernels/cpu/linalg_qr_eigh_svd_kernels.h"
#include "runtime/linalg.h"
#include "runtime/ops/linalg_qr_eigh_svd_checks.h"

namespace ember::ops {

namespace {

constexpr int64_t kComplete = 1;
constexpr int64_t kROnly = 2;

void qr_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& input = call.input(0);
  check_decomposable(input, "linalg.qr");
  const int64_t mode = call.attrs.get<int64_t>("mode");
  check(mode >= 0 && mode <= 2, "linalg.qr: mode must be 0 (reduced), 1 (complete) or 2 (r), got {}", mode);
  const int64_t rows = input.sizes()[input.dim() - 2], cols = input.sizes()[input.dim() - 1];
  const int64_t k = std::min(rows, cols);
  outputs[0].sizes = mode == kROnly ? Dims{0} : batch_with(input.sizes(), 2, {rows, mode == kComplete ? rows : k});
  outputs[1].sizes = batch_with(input.sizes(), 2, {mode == kComplete ? rows : k, cols});
  outputs[0].dtype = outputs[1].dtype = input.dtype();
}

// b R^-T for an invertible upper-triangular R: the X with X R^T = b, R^T lower triangular.
Tensor times_inverse_transpose(const Tensor& b, const Tensor& r) {
  return linalg::solve_triangular(transposed(r), b, /*upper=*/false, /*left=*/false);
}

// m >= n (Q [m, n], R [n, n]): gA = (gQ + Q copyltu(M)) R^-T, M = R gR^T - gQ^T Q, where
// copyltu(M) = tril(M) + tril(M, -1)^T mirrors M's lower triangle.
Tensor tall_backward(const Tensor& q, const Tensor& r, const Tensor& grad_q, const Tensor& grad_r) {
  if (!grad_q.defined() && !grad_r.defined()) return {};
  Tensor m;
  if (grad_r.defined()) m = matmul(r, transposed(grad_r));
  if (grad_q.defined()) m = m.defined() ? m - matmul(transposed(grad_q), q) : -matmul(transposed(grad_q), q);
  Tensor b = matmul(q, tril(m) + transposed(tril(m, -1)));
  if (grad_q.defined()) b = b + grad_q;
  return times_inverse_transpose(b, r);
}

// m < n: A = [X | Y] with X square, X = Q U and Y = Q V for R = [U | V]. Y's gradient is Q gV;
// V = Q^T Y adds Y gV^T = Q V gV^T to Q's gradient before the square case.
void qr_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const int64_t mode = ctx.attrs.get<int64_t>("mode");
  check(mode != kROnly,
        "linalg.qr: The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use "
        "linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.");
  const Dims& sizes = ctx.input_metas[0].sizes;
  const int64_t rows = sizes[sizes.size() - 2], cols = sizes[sizes.size() - 1];
  check(mode != kComplete || rows <= cols,
        "linalg.qr: The QR decomposition is not differentiable when mode='complete' and nrows > ncols (A of shape {})",
        sizes);
  const Tensor& q = ctx.output(0);
  const Tensor& r = ctx.output(1);
  if (rows >= cols) {
    grads[0] = tall_backward(q, r, ctx.grad(0), ctx.grad(1));
    return;
  }
  Tensor grad_q = ctx.grad(0), grad_u, grad_y;
  if (ctx.grad(1).defined()) {
    grad_u = ctx.grad(1).narrow(-1, 0, rows);
    const Tensor grad_v = ctx.grad(1).narrow(-1, rows, cols - rows);
    const Tensor v_term = matmul(matmul(q, r.narrow(-1, rows, cols - rows)), transposed(grad_v));
    grad_q = grad_q.defined() ? grad_q + v_term : v_term;
    grad_y = matmul(q, grad_v);
  }
  Tensor grad_x = tall_backward(q, r.narrow(-1, 0, rows), grad_q, grad_u);
  if (!grad_x.defined()) return;
  if (!grad_y.defined())
    grad_y = zeros(batch_with(sizes, 1, {cols - rows}), {.dtype = q.dtype(), .device = q.device()});
  grads[0] = cat({grad_x, grad_y}, -1);
}

void register_qr(OpRegistry& registry) {
  OpDef def = make_op("linalg_qr", "linalg_qr(Tensor A, int mode=0) -> (Tensor Q, Tensor R)", OpKind::Other, qr_shape,
                      cpu::linalg_qr_kernel, qr_backward);
  def.num_outputs = 2;
  def.save_outputs = 0b11;
  registry.add(std::move(def));
}

const OpRegistration registration(register_qr);

}  // namespace
}  // namespace ember::ops
