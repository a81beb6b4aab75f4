// CUDA kernels of torch.special's pointwise ops (runtime/ops/special_ops.cpp has the ops, their
// shape rules and gradients): the input converted to the output's dtype as the CPU kernels do, one
// launch of kernels/cuda/pointwise_special.cu each.
#include "kernels/cuda/pointwise_special.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_op_utils.h"
#include "runtime/ops/registry.h"

namespace ember::cuda {

namespace {

constexpr DeviceType kCuda = DeviceType::CUDA;

template <SpecialUnaryOp op>
void special_unary_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& out = outputs[0];
  DeviceGuard guard(out.device());
  const Tensor input = as_dtype(call.input(0), out.dtype());
  const LaunchShape shape = shape_of(out);
  const int64_t order = op == SpecialUnaryOp::Polygamma ? call.attrs.get<int64_t>("n") : 0;
  launch_checked(launch_special_unary(op, order, out.dtype(), out.raw_data_ptr(), operand_of(input, shape), shape));
}

void register_special_cuda_kernels(OpRegistry& registry) {
  registry.set_kernel("lgamma", kCuda, special_unary_cuda<SpecialUnaryOp::Lgamma>);
  registry.set_kernel("digamma", kCuda, special_unary_cuda<SpecialUnaryOp::Digamma>);
  registry.set_kernel("polygamma", kCuda, special_unary_cuda<SpecialUnaryOp::Polygamma>);
  registry.set_kernel("erfinv", kCuda, special_unary_cuda<SpecialUnaryOp::Erfinv>);
  registry.set_kernel("i0", kCuda, special_unary_cuda<SpecialUnaryOp::I0>);
  registry.set_kernel("i0e", kCuda, special_unary_cuda<SpecialUnaryOp::I0e>);
  registry.set_kernel("i1", kCuda, special_unary_cuda<SpecialUnaryOp::I1>);
  registry.set_kernel("i1e", kCuda, special_unary_cuda<SpecialUnaryOp::I1e>);
  registry.set_kernel("ndtri", kCuda, special_unary_cuda<SpecialUnaryOp::Ndtri>);
  registry.set_kernel("log_ndtr", kCuda, special_unary_cuda<SpecialUnaryOp::LogNdtr>);
  registry.set_kernel("erfcx", kCuda, special_unary_cuda<SpecialUnaryOp::Erfcx>);
}

const OpRegistration registration(register_special_cuda_kernels);

}  // namespace
}  // namespace ember::cuda
