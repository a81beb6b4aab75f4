// The CUDA sort and topk (kernels/cuda/sort.cu) against the CPU ops, bit for bit, on what the
// conformance suite's small rows never reach: rows past the shared-memory bound (the global
// workspace path), rows of a non-power-of-two length, sorting along a middle dim (strided rows),
// ties and NaN in every dtype. Without a GPU each case says why it is skipped and checks nothing.
#include <doctest/doctest.h>

#include "runtime/ember.h"
#include "skip_case.h"
#include "sort_reference.h"

namespace test_cuda_sort {

using namespace ember;
using namespace ember::testing;

namespace {

const Device kCuda0{DeviceType::CUDA, 0};

void check_same(const std::tuple<Tensor, Tensor>& on_cuda, const std::tuple<Tensor, Tensor>& on_cpu) {
  const auto& [cuda_values, cuda_indices] = on_cuda;
  const auto& [cpu_values, cpu_indices] = on_cpu;
  REQUIRE(cuda_values.device() == kCuda0);
  REQUIRE(cuda_values.sizes() == cpu_values.sizes());
  CHECK(cuda_values.dtype() == cpu_values.dtype());
  CHECK(cuda_indices.to(kCPU).to_vector<int64_t>() == cpu_indices.to_vector<int64_t>());
  const std::vector<double> got = values_of(cuda_values.to(kCPU));
  const std::vector<double> want = values_of(cpu_values);
  for (size_t i = 0; i < got.size(); ++i)
    CHECK_MESSAGE((got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i]))), "element " << i);
}

}  // namespace

TEST_CASE("cuda sort and topk equal the CPU's, in shared memory and in the global workspace") {
  if (!cuda_or_skip()) return;
  for (int64_t length : {1, 7, 64, 2048, 2049, 5000}) {
    for (DType dtype : {kFloat32, kFloat64, kBFloat16, kInt64, kInt32, kBool}) {
      const bool with_nan = is_floating(dtype);
      const Tensor cpu = from_vector<double>(tied_values(3 * length, 101, with_nan, dtype == kBool ? 0 : -50,
                                                         dtype == kBool ? 1 : 50),
                                             {3, length})
                             .to(dtype);
      const Tensor cuda = cpu.to(kCuda0);
      for (bool descending : {false, true}) {
        INFO("length " << length << " " << dtype_name(dtype) << " descending " << descending);
        check_same(sort(cuda, 1, descending), sort(cpu, 1, descending));
        check_same(sort(cuda, 0, descending), sort(cpu, 0, descending));
        if (dtype == kBool) continue;
        for (int64_t k : {int64_t{0}, std::min<int64_t>(length, 5), length})
          check_same(topk(cuda, k, 1, descending), topk(cpu, k, 1, descending));
      }
    }
  }
}

TEST_CASE("cuda sort along a middle dim, of 0-d and empty inputs, and its gradient") {
  if (!cuda_or_skip()) return;
  const Tensor cpu = from_vector<double>(tied_values(4 * 300 * 3, 102, true), {4, 300, 3}).to(kFloat32);
  check_same(sort(cpu.to(kCuda0), 1, true), sort(cpu, 1, true));
  check_same(topk(cpu.to(kCuda0).transpose(0, 2), 2, 1), topk(cpu.transpose(0, 2), 2, 1));
  check_same(sort(scalar_tensor(3.0).to(kCuda0)), sort(scalar_tensor(3.0)));
  check_same(topk(scalar_tensor(3.0).to(kCuda0), 0), topk(scalar_tensor(3.0), 0));
  check_same(sort(zeros({0, 4}).to(kCuda0), 1), sort(zeros({0, 4}), 1));
  const Tensor x = random_tensor({3, 5}, 103).to(kCuda0).requires_grad_();
  mul(std::get<0>(topk(x, 2, 1)), 3.0).sum().backward();
  const Tensor x_cpu = x.detach().to(kCPU).requires_grad_();
  mul(std::get<0>(topk(x_cpu, 2, 1)), 3.0).sum().backward();
  CHECK(values_of(x.grad().to(kCPU)) == values_of(x_cpu.grad()));
}

}  // namespace test_cuda_sort
