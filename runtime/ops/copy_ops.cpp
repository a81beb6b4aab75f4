// Factories, copies and conversions: empty, full, arange, linspace, rand, randn, randint, clone,
// to_dtype, to_device, copy_, fill_, zero_.
#include <cmath>

#include "kernels/cpu/copy_kernels.h"
#include "kernels/cpu/range_kernels.h"
#include "runtime/functional.h"
#include "runtime/ops/pointwise_common.h"
#include "runtime/ops/registry.h"
#include "runtime/random/random_attrs.h"

namespace ember {

namespace {

void factory_shape(const OpCall& call, OutputMetas& outputs) {
  const Dims& sizes = call.attrs.get<Dims>("sizes");
  for (int64_t size : sizes) check(size >= 0, "{}: negative size in shape {}", call.op.name, sizes);
  outputs[0] = {sizes, call.attrs.get<DType>("dtype"), call.attrs.get<Device>("device")};
}

void full_shape(const OpCall& call, OutputMetas& outputs) {
  factory_shape(call, outputs);
  ops::check_value_fits("full", call.attrs.get<double>("value"), outputs[0].dtype);
}

// arange reads its bounds as PyTorch does: an integer dtype (accumulating in int64) truncates each
// toward zero first, so a step of 0.5 is zero there and int64 arange(-0.5, 5) starts at 0. The
// count is PyTorch's too: int64 counts in integers; every other dtype, int32 included, from the
// bounds as given (int32 arange(-0.5, 5) has 6 elements, 0 to 5).
double arange_count(double given_start, double given_end, double given_step, double start, double end, double step,
                    DType dtype) {
  if (dtype != kInt64) return std::ceil((given_end - given_start) / given_step);
  // Integers of int64's range (checked): the span may pass int64's, not int128's.
  const __int128 sign = step > 0.0 ? 1 : -1;
  const __int128 stride = static_cast<int64_t>(step);
  const __int128 span = __int128{static_cast<int64_t>(end)} - static_cast<int64_t>(start);
  return static_cast<double>((span + stride - sign) / stride);
}

void arange_shape(const OpCall& call, OutputMetas& outputs) {
  const double given_start = call.attrs.get<double>("start");
  const double given_end = call.attrs.get<double>("end");
  const double given_step = call.attrs.get<double>("step");
  const DType dtype = call.attrs.get<DType>("dtype");
  check(dtype != kBool, "arange: bool tensors are not supported (from {} to {} by {})", given_start, given_end,
        given_step);
  const bool integral = !is_floating(dtype);
  const double start = integral ? std::trunc(given_start) : given_start;
  const double end = integral ? std::trunc(given_end) : given_end;
  const double step = integral ? std::trunc(given_step) : given_step;
  check(step != 0.0, "arange: step {} is zero for a {} tensor (integer dtypes truncate it toward zero)", given_step,
        dtype);
  // The signs, not (end - start) * step >= 0: that product underflows to -0.0 for tiny bounds.
  check(step > 0.0 ? end >= start : end <= start, "arange: step {} does not move from {} towards {}", given_step,
        given_start, given_end);
  // In double first: converting a count past int64 would be undefined (arange(0, 1e300)).
  check(std::ceil((end - start) / step) < 9223372036854775808.0,
        "arange: from {} to {} by {} is more elements than an int64 can count", given_start, given_end, given_step);
  if (integral)
    for (double bound : {given_start, given_end, given_step}) ops::check_value_fits("arange", bound, kInt64);
  const double count = arange_count(given_start, given_end, given_step, start, end, step, dtype);
  check(count >= 0.0, "arange: step {} does not move from {} towards {}", given_step, given_start, given_end);
  outputs[0] = {{static_cast<int64_t>(count)}, dtype, call.attrs.get<Device>("device")};
  // The values an integer tensor stores: the first and the last. Floating ones are not checked
  // (PyTorch computes them in float or double and converts unchecked).
  if (integral && count > 0) {
    ops::check_value_fits("arange", start, dtype);
    ops::check_value_fits("arange", start + (count - 1) * step, dtype);
  }
}

// Only the ends it stores are checked, as PyTorch converts them: none for 0 steps, the start alone
// for 1 (linspace(0, 1e5, 1) in float16 is [0]).
void linspace_shape(const OpCall& call, OutputMetas& outputs) {
  const DType dtype = call.attrs.get<DType>("dtype");
  const int64_t steps = call.attrs.get<int64_t>("steps");
  if (steps >= 1) ops::check_value_fits("linspace", call.attrs.get<double>("start"), dtype);
  if (steps >= 2) ops::check_value_fits("linspace", call.attrs.get<double>("end"), dtype);
  outputs[0] = {{steps}, dtype, call.attrs.get<Device>("device")};
}

// fill_ has no shape rule (in place): its kernels check the value.
void fill_inplace_cpu(const OpCall& call, TensorList& outputs) {
  ops::check_value_fits("fill_", call.attrs.get<double>("value"), call.input(0).dtype());
  cpu::fill_inplace_kernel(call, outputs);
}

// randint's bounds, as the factory checked them before reserving draws (a call building its
// OpCall by hand gets the same refusal here).
void randint_shape(const OpCall& call, OutputMetas& outputs) {
  factory_shape(call, outputs);
  check_randint_range(call.attrs.get<int64_t>("low"), call.attrs.get<int64_t>("high"), outputs[0].dtype);
}

void same_as_input(const OpCall& call, OutputMetas& outputs) {
  outputs[0].sizes = call.input(0).sizes();
  outputs[0].dtype = call.input(0).dtype();
}

void to_dtype_shape(const OpCall& call, OutputMetas& outputs) {
  outputs[0].sizes = call.input(0).sizes();
  outputs[0].dtype = call.attrs.get<DType>("dtype");
}

void to_device_shape(const OpCall& call, OutputMetas& outputs) {
  same_as_input(call, outputs);
  outputs[0].device = call.attrs.get<Device>("device");
}

void clone_backward(const BackwardContext& ctx, std::span<Tensor> grads) { grads[0] = ctx.grad(); }

void to_dtype_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = ctx.grad().to(ctx.input_metas[0].dtype);
}

void to_device_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = ctx.grad().to(ctx.input_metas[0].device);
}

// The overwritten value's gradient: zeros, not none, as in PyTorch, so a leaf behind it gets a
// .grad of zeros (which an optimizer then steps with: momentum, weight decay) rather than none.
Tensor overwritten_grad(const BackwardContext& ctx) {
  const TensorMeta& old = ctx.input_metas[0];
  return zeros(old.sizes, {.dtype = old.dtype, .device = old.device});
}

// copy_(destination, source): the destination's old value gets zeros; source's gradient is the
// incoming gradient reduced to its shape.
void copy_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  if (ctx.needs_input_grad[0]) grads[0] = overwritten_grad(ctx);
  if (ctx.needs_input_grad[1])
    grads[1] = sum_to_size(ctx.grad(), ctx.input_metas[1].sizes).to(ctx.input_metas[1].dtype);
}

// fill_ and zero_: the old values are overwritten.
void fill_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  if (ctx.needs_input_grad[0]) grads[0] = overwritten_grad(ctx);
}

void copy_check(const OpCall& call) {
  const Tensor& destination = call.input(0);
  const Tensor& source = call.input(1);
  broadcast_shapes(destination.sizes(), source.sizes(), "copy_");
  check(broadcast_shapes(destination.sizes(), source.sizes(), "copy_") == destination.sizes(),
        "copy_: source of shape {} does not broadcast to the destination's shape {}", source.sizes(),
        destination.sizes());
}

void copy_inplace(const OpCall& call, TensorList& outputs) {
  copy_check(call);
  cpu::copy_inplace_kernel(call, outputs);
}

// The CPU-only build copies between identical devices only; CUDA adds its own kernel.
void to_device_cpu(const OpCall& call, TensorList& outputs) { cpu::clone_kernel(call, outputs); }

void register_copy_ops(OpRegistry& registry) {
  registry.add(make_op("empty", "empty(int[] sizes, dtype, device) -> Tensor", OpKind::Factory, factory_shape,
                       cpu::empty_kernel));
  registry.add(make_op("full", "full(int[] sizes, float value, dtype, device) -> Tensor", OpKind::Factory,
                       full_shape, cpu::full_kernel));
  registry.add(make_op("arange", "arange(float start, float end, float step, dtype, device) -> Tensor",
                       OpKind::Factory, arange_shape, cpu::arange_kernel));
  registry.add(make_op("linspace", "linspace(float start, float end, int steps, dtype, device) -> Tensor",
                       OpKind::Factory, linspace_shape, cpu::linspace_kernel));
  registry.add(make_op("rand", "rand(int[] sizes, int seed, int offset, dtype, device) -> Tensor",
                       OpKind::Factory, factory_shape, cpu::rand_kernel));
  registry.add(make_op("randn", "randn(int[] sizes, int seed, int offset, dtype, device) -> Tensor",
                       OpKind::Factory, factory_shape, cpu::randn_kernel));
  registry.add(make_op("randint",
                       "randint(int low, int high, int[] sizes, int seed, int offset, dtype, device) -> Tensor",
                       OpKind::Factory, randint_shape, cpu::randint_kernel));

  registry.add(make_op("clone", "clone(Tensor a) -> Tensor", OpKind::Other, same_as_input, cpu::clone_kernel,
                       clone_backward));
  registry.add(make_op("to_dtype", "to_dtype(Tensor a, dtype) -> Tensor", OpKind::Other, to_dtype_shape,
                       cpu::clone_kernel, to_dtype_backward));
  registry.add(make_op("to_device", "to_device(Tensor a, device, bool non_blocking) -> Tensor", OpKind::Other,
                       to_device_shape, to_device_cpu, to_device_backward));

  registry.add(make_op("copy_", "copy_(Tensor(a!) destination, Tensor source) -> Tensor(a!)", OpKind::InPlace,
                       nullptr, copy_inplace, copy_backward));
  OpDef fill = make_op("fill_", "fill_(Tensor(a!) a, float value) -> Tensor(a!)", OpKind::InPlace, nullptr,
                        fill_inplace_cpu, fill_backward);
  fill.accepts_expanded_target = true;
  registry.add(std::move(fill));
  // An op of its own (PyTorch's zero_), so that its errors name it.
  OpDef zero = make_op("zero_", "zero_(Tensor(a!) a) -> Tensor(a!)", OpKind::InPlace, nullptr,
                       cpu::zero_inplace_kernel, fill_backward);
  zero.accepts_expanded_target = true;
  registry.add(std::move(zero));
}

const OpRegistration registration(register_copy_ops);

}  // namespace
}  // namespace ember
