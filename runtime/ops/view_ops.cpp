// View ops: view, transpose, permute, slice, expand, squeeze, unsqueeze (diagonal:
// diagonal_ops.cpp). Each computes new sizes/strides/offset over input 0's storage; no data moves.
// Backward rules map the gradient back to the input's geometry.
#include <limits>

#include "runtime/functional.h"
#include "runtime/ops/registry.h"
#include "runtime/ops/view_shape.h"

namespace ember {

Dims infer_view_shape(std::string_view op, const Dims& shape, int64_t numel, const Dims& from) {
  Dims result = shape;
  int inferred = -1;
  Dims given;  // the sizes other than -1
  for (int i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      check(inferred < 0, "{}: only one dimension can be -1, got shape {}", op, shape);
      inferred = i;
    } else {
      check(shape[i] >= 0, "{}: invalid size {} in shape {}", op, shape[i], shape);
      given.push_back(shape[i]);
    }
  }
  // More elements than an int64 counts: no input has that many.
  const int64_t known = given.checked_product().value_or(std::numeric_limits<int64_t>::max());
  if (inferred >= 0) {
    // As PyTorch's infer_size: with another dim 0 and no elements, every size fits the -1.
    check(known != 0 || numel != 0,
          "{}: cannot reshape a tensor of 0 elements (shape {}) into shape {}: the -1 could be any size, so it is "
          "ambiguous",
          op, from, shape);
    check(known != 0 && numel % known == 0, "{}: shape {} is invalid for input of shape {} ({} elements)", op,
          shape, from, numel);
    result[inferred] = numel / known;
  }
  check(result.checked_product() == numel, "{}: shape {} is invalid for input of shape {} ({} elements)", op,
        shape, from, numel);
  return result;
}

namespace {

// ---- view ----

ViewGeometry view_rule(const OpCall& call) {
  const Tensor& input = call.input(0);
  Dims sizes = infer_view_shape("view", call.attrs.get<Dims>("shape"), input.numel(), input.sizes());
  if (input.is_contiguous()) return {sizes, contiguous_strides(sizes, "view"), input.storage_offset()};
  std::optional<Dims> strides = view_strides(input.sizes(), input.strides(), sizes, "view");
  check(strides.has_value(),
        "view: shape {} is not compatible with the input's shape {} and strides {} (a dim of the result would "
        "span parts of the input that are not evenly spaced in memory); use reshape(), which copies then",
        sizes, input.sizes(), input.strides());
  return {sizes, *strides, input.storage_offset()};
}

void view_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = reshape(ctx.grad(), ctx.input_metas[0].sizes);
}

// ---- transpose / permute ----
ViewGeometry transpose_rule(const OpCall& call) {
  const Tensor& input = call.input(0);
  const int dim0 = wrap_dim(call.attrs.get<int64_t>("dim0"), input.dim(), "transpose");
  const int dim1 = wrap_dim(call.attrs.get<int64_t>("dim1"), input.dim(), "transpose");
  ViewGeometry geometry{input.sizes(), input.strides(), input.storage_offset()};
  if (input.dim() == 0) return geometry;
  std::swap(geometry.sizes[dim0], geometry.sizes[dim1]);
  std::swap(geometry.strides[dim0], geometry.strides[dim1]);
  return geometry;
}

void transpose_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = transpose(ctx.grad(), ctx.attrs.get<int64_t>("dim0"), ctx.attrs.get<int64_t>("dim1"));
}

ViewGeometry permute_rule(const OpCall& call) {
  const Tensor& input = call.input(0);
  const Dims& order = call.attrs.get<Dims>("order");
  check(order.size() == input.dim(), "permute: order {} has {} entries but the input has {} dims",
        order, order.size(), input.dim());
  ViewGeometry geometry{Dims::filled(input.dim(), 0), Dims::filled(input.dim(), 0), input.storage_offset()};
  std::array<bool, Dims::kMaxRank> used{};
  for (int i = 0; i < order.size(); ++i) {
    const int source = wrap_dim(order[i], input.dim(), "permute");
    check(!used[source], "permute: dim {} appears twice in order {}", source, order);
    used[source] = true;
    geometry.sizes[i] = input.size(source);
    geometry.strides[i] = input.stride(source);
  }
  return geometry;
}

void permute_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Dims& order = ctx.attrs.get<Dims>("order");
  Dims inverse = Dims::filled(order.size(), 0);
  for (int i = 0; i < order.size(); ++i) inverse[wrap_dim(order[i], order.size(), "permute")] = i;
  grads[0] = permute(ctx.grad(), inverse);
}

// ---- slice ----
ViewGeometry slice_rule(const OpCall& call) {
  const Tensor& input = call.input(0);
  check(input.dim() > 0, "slice: cannot slice a 0-d tensor");
  const int dim = wrap_dim(call.attrs.get<int64_t>("dim"), input.dim(), "slice");
  const int64_t size = input.size(dim);
  const int64_t step = call.attrs.get<int64_t>("step");
  check(step > 0, "slice: step must be positive, got {}", step);
  // Python semantics: negative bounds count from the end, out-of-range bounds are clamped.
  auto clamp_bound = [size](int64_t bound) {
    if (bound < 0) bound += size;
    return std::clamp<int64_t>(bound, 0, size);
  };
  const int64_t start = clamp_bound(call.attrs.get<int64_t>("start"));
  const int64_t end = std::max(start, clamp_bound(call.attrs.get<int64_t>("end")));
  ViewGeometry geometry{input.sizes(), input.strides(), input.storage_offset() + start * input.stride(dim)};
  // Written so that no step, however large, overflows: at most one element is kept when the step
  // spans the range, and the stride of a dim of size <= 1 is never used.
  geometry.sizes[dim] = end == start ? 0 : (end - start - 1) / step + 1;
  geometry.strides[dim] = geometry.sizes[dim] <= 1 ? input.stride(dim) : input.stride(dim) * step;
  return geometry;
}

void slice_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const TensorMeta& meta = ctx.input_metas[0];
  Tensor grad_input = zeros(meta.sizes, {.dtype = ctx.grad().dtype(), .device = meta.device});
  Tensor window = slice(grad_input, ctx.attrs.get<int64_t>("dim"), ctx.attrs.get<int64_t>("start"),
                        ctx.attrs.get<int64_t>("end"), ctx.attrs.get<int64_t>("step"));
  window.copy_(ctx.grad());
  grads[0] = grad_input;
}

// ---- expand ----
ViewGeometry expand_rule(const OpCall& call) {
  const Tensor& input = call.input(0);
  const Dims& shape = call.attrs.get<Dims>("shape");
  check(shape.size() >= input.dim(), "expand: target shape {} has fewer dims than the input {}", shape,
        input.sizes());
  const int lead = shape.size() - input.dim();
  ViewGeometry geometry{shape, Dims::filled(shape.size(), 0), input.storage_offset()};
  for (int i = 0; i < shape.size(); ++i) {
    if (i < lead) {
      check(shape[i] >= 0, "expand: size {} at dim {} is invalid for new leading dims", shape[i], i);
      continue;
    }
    const int64_t own = input.size(i - lead);
    const int64_t wanted = shape[i] == -1 ? own : shape[i];
    check(wanted >= 0, "expand: size {} at dim {} is invalid (target {})", shape[i], i, shape);
    check(own == wanted || own == 1,
          "expand: the input's size {} at dim {} cannot expand to {} (input {}, target {})", own, i - lead,
          wanted, input.sizes(), shape);
    geometry.sizes[i] = wanted;
    geometry.strides[i] = own == wanted ? input.stride(i - lead) : 0;
  }
  check(geometry.sizes.checked_product().has_value(),
        "expand: target shape {} has more elements than an int64 can count", geometry.sizes);
  return geometry;
}

void expand_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = sum_to_size(ctx.grad(), ctx.input_metas[0].sizes);
}

// ---- squeeze / unsqueeze ----
ViewGeometry squeeze_rule(const OpCall& call) {
  const Tensor& input = call.input(0);
  ViewGeometry geometry{{}, {}, input.storage_offset()};
  const bool one_dim = call.attrs.has("dim");
  const int target = one_dim ? wrap_dim(call.attrs.get<int64_t>("dim"), input.dim(), "squeeze") : -1;
  for (int i = 0; i < input.dim(); ++i) {
    const bool drop = input.size(i) == 1 && (!one_dim || i == target);
    if (drop) continue;
    geometry.sizes.push_back(input.size(i));
    geometry.strides.push_back(input.stride(i));
  }
  return geometry;
}

void squeeze_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = reshape(ctx.grad(), ctx.input_metas[0].sizes);
}

ViewGeometry unsqueeze_rule(const OpCall& call) {
  const Tensor& input = call.input(0);
  const int dim = wrap_insert_dim(call.attrs.get<int64_t>("dim"), input.dim(), "unsqueeze");
  ViewGeometry geometry{input.sizes(), input.strides(), input.storage_offset()};
  const int64_t stride = dim < input.dim() ? input.stride(dim) * input.size(dim) : 1;
  geometry.sizes.insert(dim, 1);
  geometry.strides.insert(dim, stride);
  return geometry;
}

void unsqueeze_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = reshape(ctx.grad(), ctx.input_metas[0].sizes);
}

OpDef view_op(const char* name, const char* schema, ViewRule rule, BackwardRule backward) {
  OpDef def = make_op(name, schema, OpKind::View, nullptr, nullptr, backward);
  def.view = rule;
  return def;
}

void register_view_ops(OpRegistry& registry) {
  registry.add(view_op("view", "view(Tensor a, int[] shape) -> Tensor", view_rule, view_backward));
  registry.add(view_op("transpose", "transpose(Tensor a, int dim0, int dim1) -> Tensor", transpose_rule,
                       transpose_backward));
  registry.add(view_op("permute", "permute(Tensor a, int[] order) -> Tensor", permute_rule, permute_backward));
  registry.add(view_op("slice", "slice(Tensor a, int dim, int start, int end, int step) -> Tensor",
                       slice_rule, slice_backward));
  registry.add(view_op("expand", "expand(Tensor a, int[] shape) -> Tensor", expand_rule, expand_backward));
  registry.add(view_op("squeeze", "squeeze(Tensor a, int? dim) -> Tensor", squeeze_rule, squeeze_backward));
  registry.add(view_op("unsqueeze", "unsqueeze(Tensor a, int dim) -> Tensor", unsqueeze_rule,
                       unsqueeze_backward));
}

const OpRegistration registration(register_view_ops);

}  // namespace
}  // namespace ember
