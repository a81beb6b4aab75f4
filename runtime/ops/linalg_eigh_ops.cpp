// linalg_eigh(A; upper, compute_v) -> (eigenvalues, eigenvectors), torch.linalg.eigh: the
// symmetric eigendecomposition from the lower (upper = false, UPLO "L") or upper triangle.
// compute_v = false (eigvalsh without a gradient) leaves eigenvectors empty, shape [0].
// Kernels: kernels/cpu/linalg_eigh_kernel.cpp (Eigen), runtime/cuda/linalg_eigh_cuda_ops.cpp
// (cuSOLVER syevd). The backward is PyTorch's linalg_eig_backward for Hermitian input.
#include "kernels/cpu/linalg_qr_eigh_svd_kernels.h"
#include "runtime/ops/linalg_qr_eigh_svd_checks.h"

namespace ember::ops {

namespace {

void eigh_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& input = call.input(0);
  check_decomposable(input, "linalg.eigh");
  const int64_t rows = input.sizes()[input.dim() - 2], cols = input.sizes()[input.dim() - 1];
  check(rows == cols, "linalg.eigh: A must be batches of square matrices, but they are {} by {} matrices (shape {})",
        rows, cols, input.sizes());
  outputs[0].sizes = batch_with(input.sizes(), 2, {rows});
  outputs[1].sizes = call.attrs.get<bool>("compute_v") ? input.sizes() : Dims{0};
  outputs[0].dtype = outputs[1].dtype = input.dtype();
}

// gA = V (diag(gL) + (V^T gV) / E) V^T, E_ij = L_j - L_i: dv_j = sum_i v_i (v_i^T dA v_j) /
// (L_j - L_i) for a symmetric dA. The quotient's diagonal (i = j) is zeroed: E gets 1 there
// first so nothing divides by 0, then the mask 1 - I removes it exactly.
void eigh_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor& values = ctx.output(0);
  const Tensor& vectors = ctx.output(1);
  const Tensor& grad_values = ctx.grad(0);
  const Tensor& grad_vectors = ctx.grad(1);
  check(ctx.attrs.get<bool>("compute_v"),
        "linalg.eigh: the gradient needs the eigenvectors, which this call did not compute (compute_v = false); "
        "linalg::eigvalsh computes them when its input requires grad");
  const int64_t n = values.sizes()[values.dim() - 1];
  Tensor inner;
  if (grad_vectors.defined()) {
    const Tensor identity = eye(n, {.dtype = values.dtype(), .device = values.device()});
    const Tensor gaps = values.unsqueeze(-2) - values.unsqueeze(-1) + identity;
    inner = matmul(transposed(vectors), grad_vectors) / gaps * rsub(identity, 1.0);
  }
  if (grad_values.defined()) inner = inner.defined() ? inner + diag_embed(grad_values) : diag_embed(grad_values);
  if (!inner.defined()) return;
  grads[0] = matmul(matmul(vectors, inner), transposed(vectors));
}

void register_eigh(OpRegistry& registry) {
  OpDef def = make_op("linalg_eigh",
                      "linalg_eigh(Tensor A, bool upper=False, bool compute_v=True) -> (Tensor eigenvalues, Tensor "
                      "eigenvectors)",
                      OpKind::Other, eigh_shape, cpu::linalg_eigh_kernel, eigh_backward);
  def.num_outputs = 2;
  def.save_outputs = 0b11;
  registry.add(std::move(def));
}

const OpRegistration registration(register_eigh);

}  // namespace
}  // namespace ember::ops
