// The convolutions on CUDA against the CPU: conv1d/2d/3d (grouped, strided, dilated, padded),
// conv_transpose2d, unfold/fold, their gradients, and Conv2d under bf16 autocast. They are composites
// of registry ops whose CUDA kernels the conformance suite checks one by one; these cases check the
// composition (the window index built on the device, the channels-last GEMMs, index_add's sums).
// Without a GPU they say why and skip.
#include <doctest/doctest.h>

#include "cuda_test_util.h"
#include "numeric_check.h"
#include "runtime/functional_conv.h"
#include "runtime/nn/modules/conv.h"

namespace test_cuda_conv {

using namespace ember;
using namespace ember::testing;
using ember::cuda_test::kCuda0;

namespace {

Tensor cpu_tensor(const Dims& sizes, uint32_t seed, DType dtype = kFloat32) {
  return from_vector<double>(random_values(sizes.product(), seed), sizes, {.dtype = dtype, .device = kCPU});
}

// f's value and the gradients of sum(f * projection) w.r.t. its inputs, on `device`.
std::vector<Tensor> value_and_grads(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                                    const std::vector<Tensor>& inputs, Device device) {
  std::vector<Tensor> leaves;
  for (const Tensor& input : inputs) leaves.push_back(input.to(device).detach().requires_grad_());
  const Tensor out = f(leaves);
  const Tensor projection = cpu_tensor(out.sizes(), 999, out.dtype()).to(device);
  mul(out, projection).sum().backward();
  std::vector<Tensor> results = {out.detach().to(kCPU)};
  for (const Tensor& leaf : leaves) results.push_back(leaf.grad().to(kCPU));
  return results;
}

void check_same_on_cuda(const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& inputs,
                        double tolerance) {
  const std::vector<Tensor> cpu = value_and_grads(f, inputs, kCPU);
  const std::vector<Tensor> cuda = value_and_grads(f, inputs, kCuda0);
  for (size_t i = 0; i < cpu.size(); ++i) {
    INFO("result ", i, " (0: the value, then each input's gradient)");
    CHECK(cuda[i].sizes() == cpu[i].sizes());
    check_close(cuda[i], values_of(cpu[i]), tolerance);
  }
}

}  // namespace

TEST_CASE("cuda conv: conv1d/2d/3d values and gradients equal the CPU's") {
  if (!cuda_or_skip()) return;
  check_same_on_cuda(
      [](const std::vector<Tensor>& in) { return conv1d(in[0], in[1], in[2], {.stride = 2, .padding = 1}); },
      {cpu_tensor({3, 4, 17}, 1), cpu_tensor({6, 4, 3}, 2), cpu_tensor({6}, 3)}, 1e-4);
  check_same_on_cuda(
      [](const std::vector<Tensor>& in) {
        return conv2d(in[0], in[1], in[2], {.stride = {2, 1}, .padding = {1, 2}, .dilation = {1, 2}, .groups = 2});
      },
      {cpu_tensor({2, 4, 13, 11}, 4), cpu_tensor({6, 2, 3, 3}, 5), cpu_tensor({6}, 6)}, 1e-4);
  check_same_on_cuda([](const std::vector<Tensor>& in) { return conv3d(in[0], in[1], in[2], {.padding = "same"}); },
                     {cpu_tensor({1, 2, 5, 6, 4}, 7), cpu_tensor({3, 2, 3, 2, 3}, 8), cpu_tensor({3}, 9)}, 1e-4);
}

TEST_CASE("cuda conv: conv_transpose2d, unfold and fold values and gradients equal the CPU's") {
  if (!cuda_or_skip()) return;
  check_same_on_cuda(
      [](const std::vector<Tensor>& in) {
        return conv_transpose2d(in[0], in[1], in[2], {.stride = 2, .padding = 1, .output_padding = 1, .groups = 2});
      },
      {cpu_tensor({2, 4, 5, 6}, 10), cpu_tensor({4, 3, 3, 3}, 11), cpu_tensor({6}, 12)}, 1e-4);
  check_same_on_cuda(
      [](const std::vector<Tensor>& in) {
        return unfold(in[0], {2, 3}, {.padding = 1, .stride = 2});
      },
      {cpu_tensor({2, 3, 7, 8}, 13)}, 1e-6);
  check_same_on_cuda(
      [](const std::vector<Tensor>& in) {
        return fold(in[0], {6, 5}, 2, {.dilation = {1, 2}});
      },
      {cpu_tensor({2, 8, 15}, 14)}, 1e-5);
}

TEST_CASE("cuda conv: Conv2d under bf16 autocast gives bf16 close to the CPU's float64") {
  if (!cuda_or_skip()) return;
  nn::Conv2d conv(3, 8, 3, {.padding = 1, .dtype = kFloat64, .device = kCPU});
  const Tensor input = cpu_tensor({2, 3, 9, 9}, 15, kFloat64);
  const Tensor expected = conv(input);
  conv->to(kCuda0);
  conv->to(kFloat32);
  Tensor lowered;
  {
    AutocastGuard autocast(kBFloat16);
    lowered = conv(input.to(kCuda0).to(kFloat32));
  }
  CHECK(lowered.dtype() == kBFloat16);
  CHECK(lowered.device() == kCuda0);
  check_close(lowered.to(kCPU), values_of(expected), 0.05);
}

}  // namespace test_cuda_conv
