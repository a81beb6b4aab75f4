// The diagonal view op (torch.diagonal): one diagonal of the plane (dim1, dim2) as a last dim whose
// stride is the sum of the two dims' strides. A view, so writes through it reach the input.
#include <algorithm>

#include "runtime/functional.h"
#include "runtime/ops/registry.h"

namespace ember {
namespace {

// PyTorch's TensorShape.cpp diagonal: dim1 and dim2 leave, a last dim of the diagonal's length
// joins. Offset >= 0 drops the first `offset` columns (along dim2), a negative one the first
// -offset rows (along dim1); an offset past the plane gives an empty diagonal, not an error.
ViewGeometry diagonal_rule(const OpCall& call) {
  const Tensor& input = call.input(0);
  const int64_t offset = call.attrs.get<int64_t>("offset");
  const int64_t dim1_given = call.attrs.get<int64_t>("dim1"), dim2_given = call.attrs.get<int64_t>("dim2");
  // PyTorch refuses these by wrapping dim 1 of a 1-D tensor ("Dimension out of range"); this
  // message says what diagonal needs.
  check(input.dim() >= 2, "diagonal: expected a tensor of at least 2 dims, got shape {} (offset {}, dim1 {}, dim2 {})",
        input.sizes(), offset, dim1_given, dim2_given);
  const int dim1 = wrap_dim(dim1_given, input.dim(), "diagonal");
  const int dim2 = wrap_dim(dim2_given, input.dim(), "diagonal");
  check(dim1 != dim2, "diagonal: diagonal dimensions cannot be identical: dim1 {} and dim2 {} (input shape {})",
        dim1_given, dim2_given, input.sizes());
  const int64_t rows = input.size(dim1), columns = input.size(dim2);
  // Neither difference overflows: sizes are >= 0, so `columns - offset` for offset >= 0 and
  // `rows + offset` for offset < 0 stay within int64.
  const int64_t length =
      std::max<int64_t>(offset >= 0 ? std::min(rows, columns - offset) : std::min(rows + offset, columns), 0);
  ViewGeometry geometry{{}, {}, input.storage_offset()};
  // The start moves only for a non-empty diagonal, where |offset| is within the plane (so the
  // product stays inside the input's storage); an empty one keeps the input's offset, as PyTorch.
  if (length > 0) geometry.offset += offset >= 0 ? offset * input.stride(dim2) : -offset * input.stride(dim1);
  for (int i = 0; i < input.dim(); ++i) {
    if (i == dim1 || i == dim2) continue;
    geometry.sizes.push_back(input.size(i));
    geometry.strides.push_back(input.stride(i));
  }
  geometry.sizes.push_back(length);
  geometry.strides.push_back(input.stride(dim1) + input.stride(dim2));
  return geometry;
}

// derivatives.yaml's diagonal_backward: zeros of the input's shape with the gradient written on
// the same diagonal of them. Written with ops (zeros, this view, copy_) so that it is itself
// differentiable: copy_ through the view records the gradient's path for a second backward.
void diagonal_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const TensorMeta& meta = ctx.input_metas[0];
  Tensor grad_input = zeros(meta.sizes, {.dtype = ctx.grad().dtype(), .device = meta.device});
  Tensor window = diagonal(grad_input, ctx.attrs.get<int64_t>("offset"), ctx.attrs.get<int64_t>("dim1"),
                           ctx.attrs.get<int64_t>("dim2"));
  window.copy_(ctx.grad());
  grads[0] = grad_input;
}

void register_diagonal_op(OpRegistry& registry) {
  OpDef def = make_op("diagonal", "diagonal(Tensor a, int offset=0, int dim1=0, int dim2=1) -> Tensor", OpKind::View,
                      nullptr, nullptr, diagonal_backward);
  def.view = diagonal_rule;
  registry.add(std::move(def));
}

const OpRegistration registration(register_diagonal_op);

}  // namespace
}  // namespace ember
