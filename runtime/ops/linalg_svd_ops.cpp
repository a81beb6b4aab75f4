// linalg_svd(A; full_matrices, compute_uv) -> (U, S, Vh), torch.linalg.svd (and, with
// compute_uv = false, svdvals without a gradient: U and Vh empty, shape [0]). Kernels:
// kernels/cpu/linalg_svd_kernel.cpp (Eigen), runtime/cuda/linalg_svd_cuda_ops.cpp (cuSOLVER
// gesvd). The backward is PyTorch's svd_backward, written with ops.
#include "kernels/cpu/linalg_qr_eigh_svd_kernels.h"
#include "runtime/ops/linalg_qr_eigh_svd_checks.h"

namespace ember::ops {

namespace {

void svd_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& input = call.input(0);
  check_decomposable(input, "linalg.svd");
  const int64_t rows = input.sizes()[input.dim() - 2], cols = input.sizes()[input.dim() - 1];
  const int64_t k = std::min(rows, cols);
  const bool full = call.attrs.get<bool>("full_matrices");
  const bool compute_uv = call.attrs.get<bool>("compute_uv");
  outputs[0].sizes = compute_uv ? batch_with(input.sizes(), 2, {rows, full ? rows : k}) : Dims{0};
  outputs[1].sizes = batch_with(input.sizes(), 2, {k});
  outputs[2].sizes = compute_uv ? batch_with(input.sizes(), 2, {full ? cols : k, cols}) : Dims{0};
  outputs[0].dtype = outputs[1].dtype = outputs[2].dtype = input.dtype();
}

Tensor skew(const Tensor& x) { return x - transposed(x); }

// With full_matrices, the columns of U and rows of Vh past k = min(m, n) are any basis of their
// subspace, so their gradients are dropped (PyTorch narrows them the same way). Then, for
// distinct nonzero singular values, with E_ij = S_j^2 - S_i^2 (1 on the diagonal):
//   inner = (skew(U^T gU) S_j + S_i skew(V^T gV)) / E + diag(gS)
//   gA = U inner Vh + (I - U U^T) gU S^-1 Vh  [m > n]   or   + U S^-1 gVh (I - V V^T)  [m < n].
void svd_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  check(ctx.attrs.get<bool>("compute_uv"),
        "linalg.svd: the gradient needs U and Vh, which this call did not compute (compute_uv = false); "
        "linalg::svdvals computes them when its input requires grad");
  const Tensor& s = ctx.output(1);
  const int64_t k = s.sizes()[s.dim() - 1];
  const bool full = ctx.attrs.get<bool>("full_matrices");
  const Tensor u = full ? ctx.output(0).narrow(-1, 0, k) : ctx.output(0);
  const Tensor vh = full ? ctx.output(2).narrow(-2, 0, k) : ctx.output(2);
  Tensor grad_u = ctx.grad(0), grad_vh = ctx.grad(2);
  const Tensor& grad_s = ctx.grad(1);
  if (full && grad_u.defined()) grad_u = grad_u.narrow(-1, 0, k);
  if (full && grad_vh.defined()) grad_vh = grad_vh.narrow(-2, 0, k);
  const Dims& sizes = ctx.input_metas[0].sizes;
  const int64_t rows = sizes[sizes.size() - 2], cols = sizes[sizes.size() - 1];
  if (!grad_u.defined() && !grad_vh.defined()) {
    if (grad_s.defined()) grads[0] = matmul(u * grad_s.unsqueeze(-2), vh);  // U diag(gS) Vh
    return;
  }
  const Tensor s_row = s.unsqueeze(-2), s_column = s.unsqueeze(-1);
  const Tensor squares = s * s;
  const Tensor gaps =
      squares.unsqueeze(-2) - squares.unsqueeze(-1) + eye(k, {.dtype = s.dtype(), .device = s.device()});
  Tensor inner;
  if (grad_u.defined()) inner = skew(matmul(transposed(u), grad_u)) * s_row;
  if (grad_vh.defined()) {
    const Tensor v_term = s_column * skew(matmul(vh, transposed(grad_vh)));
    inner = inner.defined() ? inner + v_term : v_term;
  }
  inner = inner / gaps;
  if (grad_s.defined()) inner = inner + diag_embed(grad_s);
  if (rows > cols && grad_u.defined()) {
    const Tensor scaled = grad_u / s_row;
    grads[0] = matmul(matmul(u, inner) + scaled - matmul(u, matmul(transposed(u), scaled)), vh);
  } else if (rows < cols && grad_vh.defined()) {
    const Tensor scaled = grad_vh / s_column;
    grads[0] = matmul(u, matmul(inner, vh) + scaled - matmul(matmul(scaled, transposed(vh)), vh));
  } else {
    grads[0] = matmul(matmul(u, inner), vh);
  }
}

void register_svd(OpRegistry& registry) {
  OpDef def = make_op("linalg_svd",
                      "linalg_svd(Tensor A, bool full_matrices=True, bool compute_uv=True) -> (Tensor U, Tensor S, "
                      "Tensor Vh)",
                      OpKind::Other, svd_shape, cpu::linalg_svd_kernel, svd_backward);
  def.num_outputs = 3;
  def.save_outputs = 0b111;
  registry.add(std::move(def));
}

const OpRegistration registration(register_svd);

}  // namespace
}  // namespace ember::ops
