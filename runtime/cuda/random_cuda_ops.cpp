// CUDA kernels of the Philox-driven ops rand, randn, randint and dropout. The seed and offset are
// the op's attributes (the functional wrappers reserve them from the device's generator), and the
// kernels in kernels/cuda/random.cu read the same stream words as the CPU kernels.
#include "kernels/cuda/random.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_op_utils.h"
#include "runtime/ops/registry.h"

namespace ember::cuda {

namespace {

constexpr DeviceType kCuda = DeviceType::CUDA;

uint64_t seed_of(const OpCall& call) { return static_cast<uint64_t>(call.attrs.get<int64_t>("seed")); }
uint64_t offset_of(const OpCall& call) { return static_cast<uint64_t>(call.attrs.get<int64_t>("offset")); }

void rand_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& out = outputs[0];
  check(is_floating(out.dtype()), "rand: expected a floating dtype, got {}", out.dtype());
  DeviceGuard guard(out.device());
  launch_checked(launch_rand(out.dtype(), out.raw_data_ptr(), seed_of(call), offset_of(call), shape_of(out)));
}

void randn_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& out = outputs[0];
  check(is_floating(out.dtype()), "randn: expected a floating dtype, got {}", out.dtype());
  DeviceGuard guard(out.device());
  launch_checked(launch_randn(out.dtype(), out.raw_data_ptr(), seed_of(call), offset_of(call), shape_of(out)));
}

void randint_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& out = outputs[0];
  const int64_t low = call.attrs.get<int64_t>("low");
  const int64_t high = call.attrs.get<int64_t>("high");
  DeviceGuard guard(out.device());  // the shape rule checked the bounds (check_randint_range)
  launch_checked(launch_randint(out.dtype(), out.raw_data_ptr(), low, high, seed_of(call), offset_of(call),
                                shape_of(out)));
}

// outputs: y (the input's dtype) and the bool mask, both fresh and contiguous.
void dropout_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& input = call.input(0);
  DeviceGuard guard(input.device());
  const LaunchShape shape = shape_of(outputs[0]);
  launch_checked(launch_dropout(input.dtype(), outputs[0].raw_data_ptr(), static_cast<bool*>(outputs[1].raw_data_ptr()),
                                operand_of(input, shape), call.attrs.get<double>("p"), seed_of(call),
                                offset_of(call), shape));
}

void register_random_cuda_kernels(OpRegistry& registry) {
  registry.set_kernel("rand", kCuda, rand_cuda);
  registry.set_kernel("randn", kCuda, randn_cuda);
  registry.set_kernel("randint", kCuda, randint_cuda);
  registry.set_kernel("dropout", kCuda, dropout_cuda);
}

const OpRegistration registration(register_random_cuda_kernels);

}  // namespace
}  // namespace ember::cuda
