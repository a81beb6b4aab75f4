// CUDA kernels for registry ops: factories (empty, full, arange, linspace), clone, to_dtype, the
// binary arithmetic ops (add, sub, mul, div), add_scalar, mul_scalar, the in-place ops (add_, mul_,
// mul_scalar_, copy_, fill_, zero_: they write through the target's strides, so views work) and
// to_device (host<->device and device<->device copies).
// Each is attached to the op its CPU file defined with registry().set_kernel(name, CUDA, kernel).
#include <cuda_runtime_api.h>

#include "kernels/cpu/copy_kernels.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/random.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/copy_source_holds.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_graph.h"
#include "runtime/cuda/cuda_op_utils.h"
#include "runtime/cuda/device_error_report.h"
#include "runtime/dtype.h"
#include "runtime/memory/overlap.h"
#include "runtime/ops/pointwise_common.h"
#include "runtime/ops/registry.h"

namespace ember::cuda {

namespace {

constexpr DeviceType kCuda = DeviceType::CUDA;

void clone_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& input = call.input(0);
  DeviceGuard guard(outputs[0].device());
  const LaunchShape shape = shape_of(outputs[0]);
  launch_checked(launch_cast(outputs[0].dtype(), outputs[0].raw_data_ptr(), input.dtype(), operand_of(input, shape), shape));
}

template <BinaryOp op>
void binary_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& out = outputs[0];
  DeviceGuard guard(out.device());
  const Tensor a = as_dtype(call.input(0), out.dtype());
  const Tensor b = as_dtype(call.input(1), out.dtype());
  const double alpha = (op == BinaryOp::Add || op == BinaryOp::Sub) ? call.attrs.get<double>("alpha") : 1.0;
  const LaunchShape shape = shape_of(out);
  launch_checked(launch_binary(op, alpha, out.dtype(), out.raw_data_ptr(), operand_of(a, shape), operand_of(b, shape), shape));
}

template <ScalarOp op>
void scalar_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& out = outputs[0];
  DeviceGuard guard(out.device());
  const Tensor input = as_dtype(call.input(0), out.dtype());
  const LaunchShape shape = shape_of(out);
  launch_checked(launch_scalar(op, call.attrs.get<double>("value"), out.dtype(), out.raw_data_ptr(),
                               operand_of(input, shape), shape));
}

void empty_cuda(const OpCall&, TensorList&) {}  // the dispatcher's allocation is the whole op

void full_cuda(const OpCall& call, TensorList& outputs) {
  DeviceGuard guard(outputs[0].device());
  launch_checked(launch_fill(outputs[0].dtype(), outputs[0].raw_data_ptr(), call.attrs.get<double>("value"),
                             shape_of(outputs[0])));
}

// Where an in-place op writes: the target itself, through its own strides.
OutputOperand target_of(const Tensor& target) {
  OutputOperand out;
  out.data = target.raw_data_ptr();
  for (int dim = 0; dim < static_cast<int>(target.dim()); ++dim) out.strides[dim] = target.strides()[dim];
  out.contiguous = target.is_contiguous();
  return out;
}

// fill_ and zero_: an expanded target's repeats are one address, written by one thread.
void fill_cuda(const Tensor& target, double value) {
  const Tensor distinct = without_repeats(target);
  DeviceGuard guard(distinct.device());
  launch_checked(launch_fill_strided(distinct.dtype(), target_of(distinct), value, shape_of(distinct)));
}

void fill_inplace_cuda(const OpCall& call, TensorList&) {
  ops::check_value_fits("fill_", call.attrs.get<double>("value"), call.input(0).dtype());
  fill_cuda(call.input(0), call.attrs.get<double>("value"));
}

void zero_inplace_cuda(const OpCall& call, TensorList&) { fill_cuda(call.input(0), 0.0); }

// add_ and mul_: the CPU kernel's checks, then target = target op other computed in result_type,
// which is the target's dtype or a wider one (float16 += float32: rounded once into the target).
template <BinaryOp op>
void binary_inplace_cuda(const OpCall& call, TensorList&) {
  const Tensor& target = call.input(0);
  ops::check_inplace_broadcast(call);
  const DType compute = result_type(target.dtype(), target.dim() == 0, call.input(1).dtype(), call.input(1).dim() == 0);
  ops::check_inplace_dtype(call, compute);
  if (op == BinaryOp::Add) ops::check_integer_alpha(call, target.dtype());
  DeviceGuard guard(target.device());
  const Tensor other = as_dtype(call.input(1), compute);
  const double alpha = op == BinaryOp::Add ? call.attrs.get<double>("alpha") : 1.0;
  const LaunchShape shape = shape_of(target);
  if (compute == target.dtype()) {
    launch_checked(launch_binary_into(op, alpha, target.dtype(), target_of(target), operand_of(target, shape),
                                      operand_of(other, shape), shape));
  } else {
    launch_checked(launch_binary_into_promoted(op, alpha, target.dtype(), compute, target_of(target),
                                               operand_of(target, shape), operand_of(other, shape), shape));
  }
}

void mul_scalar_inplace_cuda(const OpCall& call, TensorList&) {
  const Tensor& target = call.input(0);
  const double value = call.attrs.get<double>("value");
  ops::check_inplace_dtype(call, ops::scalar_result_dtype(call.op.name, target.dtype(), value));
  DeviceGuard guard(target.device());
  const LaunchShape shape = shape_of(target);
  launch_checked(launch_scalar_into(ScalarOp::MulScalar, value, target.dtype(), target_of(target),
                                    operand_of(target, shape), shape));
}

// copy_(destination, source): source broadcast to the destination and converted to its dtype.
void copy_inplace_cuda(const OpCall& call, TensorList&) {
  const Tensor& destination = call.input(0);
  const Tensor& source = call.input(1);
  check(broadcast_shapes(destination.sizes(), source.sizes(), "copy_") == destination.sizes(),
        "copy_: source of shape {} does not broadcast to the destination's shape {}", source.sizes(),
        destination.sizes());
  DeviceGuard guard(destination.device());
  const LaunchShape shape = shape_of(destination);
  launch_checked(launch_convert(destination.dtype(), target_of(destination), source.dtype(), operand_of(source, shape),
                                shape));
}

void arange_cuda(const OpCall& call, TensorList& outputs) {
  DeviceGuard guard(outputs[0].device());
  launch_checked(launch_arange(outputs[0].dtype(), outputs[0].raw_data_ptr(), call.attrs.get<double>("start"),
                               call.attrs.get<double>("step"), shape_of(outputs[0])));
}

void linspace_cuda(const OpCall& call, TensorList& outputs) {
  DeviceGuard guard(outputs[0].device());
  launch_checked(launch_linspace(outputs[0].dtype(), outputs[0].raw_data_ptr(), call.attrs.get<double>("start"),
                                 call.attrs.get<double>("end"), call.attrs.get<int64_t>("steps"), shape_of(outputs[0])));
}

// Host<->device and device<->device copies. Registered for both CPU and CUDA inputs because the
// dispatcher picks the kernel by the input's device. Copies from pageable memory and every copy
// into host memory finish before returning; non_blocking copies from pinned memory do not.
void to_device_any(const OpCall& call, TensorList& outputs) {
  const Tensor& source = call.input(0);
  const Tensor& destination = outputs[0];
  if (source.device().is_cpu() && destination.device().is_cpu()) return cpu::clone_kernel(call, outputs);
  if (destination.numel() == 0) return;
  const Tensor packed = contiguous_on_device(source);
  const bool non_blocking = call.attrs.get<bool>("non_blocking");
  const size_t bytes = destination.nbytes();
  if (destination.device().is_cuda() && source.device().is_cpu()) {
    DeviceGuard guard(destination.device());
    const auto stream = static_cast<cudaStream_t>(current_stream(destination.device()).handle);
    const bool held = non_blocking && is_pinned(packed.raw_data_ptr());
    // A graph would read the source again at every replay, long after any hold ended.
    check(!held || !capturing_on_this_thread(),
          "to_device: a non_blocking copy from host memory cannot be captured into a CUDA graph (a replay "
          "would read the host buffer long after the copy's hold ended); move the data to the device before "
          "the capture, outside the compiled function, and pass the device tensor in");
    cuda_check(cudaMemcpyAsync(destination.raw_data_ptr(), packed.raw_data_ptr(), bytes,
                               cudaMemcpyHostToDevice, stream));
    if (held) {
      try {
        hold_until_copied(packed, current_stream(destination.device()));
      } catch (...) {
        // No hold was made: the source must not go back to the pinned pool before it was read.
        cudaStreamSynchronize(stream);
        throw;
      }
    } else {
      cuda_check(cudaStreamSynchronize(stream));
      raise_device_error(destination.device());  // a sync point like any other
    }
  } else if (destination.device().is_cpu()) {
    DeviceGuard guard(source.device());
    const auto stream = static_cast<cudaStream_t>(current_stream(source.device()).handle);
    cuda_check(cudaMemcpyAsync(destination.raw_data_ptr(), packed.raw_data_ptr(), bytes,
                               cudaMemcpyDeviceToHost, stream));
    cuda_check(cudaStreamSynchronize(stream));  // the host reads the result right away
    raise_device_error(source.device());        // a bad target or index found since the last sync
  } else {
    // A copy queued on the destination GPU's stream does not wait for the source GPU's stream, and
    // `packed` may be a temporary freed on return: the source's pending work finishes first, the
    // copy before returning. (Rare: data-parallel training moves tensors through NCCL instead.)
    {
      DeviceGuard guard(source.device());
      cuda_check(cudaStreamSynchronize(static_cast<cudaStream_t>(current_stream(source.device()).handle)));
    }
    DeviceGuard guard(destination.device());
    const auto stream = static_cast<cudaStream_t>(current_stream(destination.device()).handle);
    cuda_check(cudaMemcpyPeerAsync(destination.raw_data_ptr(), destination.device().index,
                                   packed.raw_data_ptr(), source.device().index, bytes, stream));
    cuda_check(cudaStreamSynchronize(stream));
  }
}

void register_cuda_kernels(OpRegistry& registry) {
  registry.set_kernel("empty", kCuda, empty_cuda);
  registry.set_kernel("full", kCuda, full_cuda);
  registry.set_kernel("arange", kCuda, arange_cuda);
  registry.set_kernel("linspace", kCuda, linspace_cuda);
  registry.set_kernel("fill_", kCuda, fill_inplace_cuda);
  registry.set_kernel("zero_", kCuda, zero_inplace_cuda);
  registry.set_kernel("copy_", kCuda, copy_inplace_cuda);
  registry.set_kernel("add_", kCuda, binary_inplace_cuda<BinaryOp::Add>);
  registry.set_kernel("mul_", kCuda, binary_inplace_cuda<BinaryOp::Mul>);
  registry.set_kernel("mul_scalar_", kCuda, mul_scalar_inplace_cuda);
  registry.set_kernel("clone", kCuda, clone_cuda);
  registry.set_kernel("to_dtype", kCuda, clone_cuda);
  registry.set_kernel("to_device", kCuda, to_device_any);
  registry.set_kernel("to_device", DeviceType::CPU, to_device_any);
  registry.set_kernel("add", kCuda, binary_cuda<BinaryOp::Add>);
  registry.set_kernel("sub", kCuda, binary_cuda<BinaryOp::Sub>);
  registry.set_kernel("mul", kCuda, binary_cuda<BinaryOp::Mul>);
  registry.set_kernel("div", kCuda, binary_cuda<BinaryOp::Div>);
  registry.set_kernel("add_scalar", kCuda, scalar_cuda<ScalarOp::AddScalar>);
  registry.set_kernel("mul_scalar", kCuda, scalar_cuda<ScalarOp::MulScalar>);
}

const OpRegistration registration(register_cuda_kernels);

}  // namespace
}  // namespace ember::cuda
