// CUDA kernels of the reduction registry ops: sum, mean, amax, amin, prod, any, all, var, argmax,
// argmin and extremum_backward. The input is laid out densely as [outer, reduce, inner] (reduce.h): a plain
// contiguous copy when the reduced dims are adjacent, else a copy permuted to put the kept dims
// first; the kernels in kernels/cuda/reduce_*.cu do the rest.
#include <vector>

#include "kernels/cpu/reduce_geometry.h"
#include "kernels/cuda/reduce.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_op_utils.h"
#include "runtime/dtype.h"
#include "runtime/ops/registry.h"

namespace ember::cuda {

namespace {

constexpr DeviceType kCuda = DeviceType::CUDA;

struct ReducePlan {
  Tensor packed;           // the input, dense in the layout's order
  ReduceLayout layout;
  std::vector<int> order;  // not empty: packed holds the input's dims in this order
};

// `input` copied densely with its dims in `order` (a transpose that materializes).
Tensor permuted_copy(const Tensor& input, const std::vector<int>& order) {
  Dims sizes;
  for (int dim : order) sizes.push_back(input.sizes()[dim]);
  Tensor packed = make_tensor(sizes, input.dtype(), input.device());
  const LaunchShape shape = shape_of(packed);
  StridedOperand operand;
  operand.data = input.raw_data_ptr();
  for (size_t k = 0; k < order.size(); ++k) operand.strides[k] = input.strides()[order[k]];
  launch_checked(launch_cast(input.dtype(), packed.raw_data_ptr(), input.dtype(), operand, shape));
  return packed;
}

// Size-1 dims are free to sit anywhere, so only the reduced dims of other sizes must be adjacent
// for a plain contiguous copy to have the [outer, reduce, inner] form.
ReducePlan plan_reduction(const Tensor& input, uint32_t mask) {
  const Dims& sizes = input.sizes();
  const int rank = sizes.size();
  auto reduced = [&](int dim) { return (mask & (1u << dim)) != 0; };
  int first = -1;
  int last = -1;
  for (int d = 0; d < rank; ++d) {
    if (reduced(d) && sizes[d] != 1) {
      if (first < 0) first = d;
      last = d;
    }
  }
  bool one_run = true;
  for (int d = first + 1; first >= 0 && d < last; ++d) one_run = one_run && (reduced(d) || sizes[d] == 1);
  ReducePlan plan;
  plan.layout.stream = stream_of(input);
  if (one_run) {
    plan.packed = contiguous_on_device(input);
    for (int d = 0; d < rank; ++d) {
      if (reduced(d)) {
        plan.layout.reduce *= sizes[d];
      } else if (first < 0 || d < first) {
        plan.layout.outer *= sizes[d];
      } else {
        plan.layout.inner *= sizes[d];
      }
    }
    return plan;
  }
  for (int d = 0; d < rank; ++d) {
    if (!reduced(d)) {
      plan.order.push_back(d);
      plan.layout.outer *= sizes[d];
    }
  }
  for (int d = 0; d < rank; ++d) {
    if (reduced(d)) {
      plan.order.push_back(d);
      plan.layout.reduce *= sizes[d];
    }
  }
  plan.packed = permuted_copy(input, plan.order);
  return plan;
}

// Device scratch of `bytes` (a multiple of 8), undefined for none. The caching allocator keeps
// the block for this stream until the kernels that use it have been queued, so no
// synchronization is needed.
Tensor scratch_for(int64_t bytes, Device device) {
  return bytes > 0 ? make_tensor({bytes / 8}, kInt64, device) : Tensor();
}

void run_reduction(const Tensor& input, const Tensor& output, ReduceKind kind, uint32_t mask, int64_t correction = 0) {
  DeviceGuard guard(input.device());
  const ReducePlan plan = plan_reduction(input, mask);
  const Tensor scratch = scratch_for(reduce_scratch_bytes(kind, input.dtype(), plan.layout), input.device());
  launch_checked(launch_reduce(kind, input.dtype(), plan.packed.raw_data_ptr(), output.raw_data_ptr(),
                               scratch.defined() ? scratch.raw_data_ptr() : nullptr, plan.layout, correction));
}

uint32_t dims_mask(const OpCall& call) {
  return cpu::reduce_mask(call.attrs.get<Dims>("dims"), call.input(0).dim(), call.op.name);
}

// argmax / argmin: one dim, or all of them (the flattened tensor), as on the CPU.
uint32_t arg_mask(const OpCall& call) {
  const int rank = call.input(0).dim();
  if (!call.attrs.has("dim")) return rank == 0 ? 0u : (1u << rank) - 1u;
  const int dim = wrap_dim(call.attrs.get<int64_t>("dim"), rank, call.op.name);
  return rank == 0 ? 0u : 1u << dim;
}

template <ReduceKind kind>
void reduce_cuda(const OpCall& call, TensorList& outputs) {
  run_reduction(call.input(0), outputs[0], kind, dims_mask(call));
}

void var_cuda(const OpCall& call, TensorList& outputs) {
  run_reduction(call.input(0), outputs[0], ReduceKind::Var, dims_mask(call), call.attrs.get<int64_t>("correction"));
}

template <ReduceKind kind>
void arg_reduce_cuda(const OpCall& call, TensorList& outputs) {
  run_reduction(call.input(0), outputs[0], kind, arg_mask(call));
}

// extremum_backward(grad, input, result; dims, keepdim). grad and result have the reduced shape,
// whose dense order is the layout's output order; a permuted plan writes a permuted gradient
// that is copied back into the input's dim order.
void extremum_backward_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& input = call.input(1);
  const Tensor& grad_input = outputs[0];
  DeviceGuard guard(input.device());
  const uint32_t mask = cpu::reduce_mask(call.attrs.get<Dims>("dims"), input.dim(), "extremum_backward");
  const ReducePlan plan = plan_reduction(input, mask);
  const Tensor grad = contiguous_on_device(call.input(0));
  const Tensor result = contiguous_on_device(call.input(2));
  const Tensor target = plan.order.empty() ? grad_input : make_tensor(plan.packed.sizes(), input.dtype(), input.device());
  const Tensor tie_counts = scratch_for(extremum_backward_scratch_bytes(plan.layout), input.device());
  launch_checked(launch_extremum_backward(input.dtype(), grad.raw_data_ptr(), plan.packed.raw_data_ptr(),
                                          result.raw_data_ptr(), target.raw_data_ptr(),
                                          tie_counts.defined() ? tie_counts.raw_data_ptr() : nullptr, plan.layout));
  if (plan.order.empty() || grad_input.numel() == 0) return;
  const LaunchShape shape = shape_of(grad_input);
  StridedOperand operand;
  operand.data = target.raw_data_ptr();
  for (size_t k = 0; k < plan.order.size(); ++k) operand.strides[plan.order[k]] = target.strides()[k];
  launch_checked(launch_cast(input.dtype(), grad_input.raw_data_ptr(), input.dtype(), operand, shape));
}

void register_reduce_cuda_kernels(OpRegistry& registry) {
  registry.set_kernel("sum", kCuda, reduce_cuda<ReduceKind::Sum>);
  registry.set_kernel("mean", kCuda, reduce_cuda<ReduceKind::Mean>);
  registry.set_kernel("amax", kCuda, reduce_cuda<ReduceKind::Max>);
  registry.set_kernel("amin", kCuda, reduce_cuda<ReduceKind::Min>);
  registry.set_kernel("prod", kCuda, reduce_cuda<ReduceKind::Prod>);
  registry.set_kernel("any", kCuda, reduce_cuda<ReduceKind::Any>);
  registry.set_kernel("all", kCuda, reduce_cuda<ReduceKind::All>);
  registry.set_kernel("var", kCuda, var_cuda);
  registry.set_kernel("argmax", kCuda, arg_reduce_cuda<ReduceKind::ArgMax>);
  registry.set_kernel("argmin", kCuda, arg_reduce_cuda<ReduceKind::ArgMin>);
  registry.set_kernel("extremum_backward", kCuda, extremum_backward_cuda);
}

const OpRegistration registration(register_reduce_cuda_kernels);

}  // namespace
}  // namespace ember::cuda
