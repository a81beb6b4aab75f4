// The composites of runtime/functional_index_more.h on CUDA equal the CPU's, values and gradients
// (skipped, never passed, without a usable GPU).
#include <doctest/doctest.h>

#include <vector>

#include "cuda_test_util.h"
#include "finite_difference.h"
#include "runtime/functional_index_more.h"

namespace test_index_more_cuda {

using namespace ember;
using namespace ember::testing;
using ember::cuda_test::kCuda0;

namespace {

// Runs `function` on CPU leaves and on CUDA copies; outputs and every leaf's gradient must agree.
void check_same_on_cuda(const std::function<Tensor(const std::vector<Tensor>&, Device)>& function,
                        const std::vector<Dims>& shapes) {
  std::vector<Tensor> cpu, cuda;
  for (size_t i = 0; i < shapes.size(); ++i) {
    cpu.push_back(leaf(shapes[i], 50 + static_cast<uint32_t>(i)));
    cuda.push_back(cpu.back().detach().to(kCuda0).requires_grad_());
  }
  const Tensor expected = function(cpu, kCPU), actual = function(cuda, kCuda0);
  REQUIRE(actual.device().is_cuda());
  CHECK(actual.to(kCPU).to_vector<double>() == expected.contiguous().to_vector<double>());
  const Tensor weights = small_tensor(expected.sizes(), 99);
  expected.backward(weights);
  actual.backward(weights.to(kCuda0));
  for (size_t i = 0; i < cpu.size(); ++i) {
    INFO("input ", i);
    REQUIRE(cuda[i].grad().defined());
    const std::vector<double> e = cpu[i].grad().to_vector<double>(), a = cuda[i].grad().to(kCPU).to_vector<double>();
    REQUIRE(e.size() == a.size());
    for (size_t k = 0; k < e.size(); ++k) CHECK(a[k] == doctest::Approx(e[k]).epsilon(1e-12));
  }
}

Tensor longs(const std::vector<int64_t>& values, Device device) {
  return from_vector<int64_t>(values, Dims{static_cast<int64_t>(values.size())}, {.dtype = kInt64}).to(device);
}

}  // namespace

TEST_CASE("index_more cuda: every composite equals the CPU's, values and gradients") {
  if (!cuda_or_skip()) return;
  check_same_on_cuda([](const std::vector<Tensor>& x, Device) { return broadcast_to(x[0], {2, 3, 4}); }, {{3, 1}});
  check_same_on_cuda([](const std::vector<Tensor>& x, Device d) { return take(x[0], longs({0, -1, 5}, d)); }, {{3, 4}});
  check_same_on_cuda(
      [](const std::vector<Tensor>& x, Device d) {
        return take_along_dim(x[0], longs({2, 0}, d).reshape({1, 2}), 1);
      },
      {{3, 4}});
  check_same_on_cuda(
      [](const std::vector<Tensor>& x, Device d) {
        return index_fill(x[0], 1, longs({0, -1}, d), x[1]);
      },
      {{3, 4}, {}});
  check_same_on_cuda(
      [](const std::vector<Tensor>& x, Device d) {
        return index_copy(x[0], 0, longs({2, 0}, d), x[1]);
      },
      {{3, 4}, {2, 4}});
  check_same_on_cuda(
      [](const std::vector<Tensor>& x, Device d) {
        const Tensor mask = from_vector<bool>({true, false, true, true}, Dims{4}, {.dtype = kBool}).to(d);
        return masked_scatter(x[0], mask, x[1]);
      },
      {{3, 4}, {10}});
  check_same_on_cuda(
      [](const std::vector<Tensor>& x, Device d) {
        return put(x[0], longs({1, -2}, d), x[1], true);
      },
      {{3, 4}, {2}});
  check_same_on_cuda([](const std::vector<Tensor>& x, Device) { return select_scatter(x[0], x[1], 1, -1); },
                     {{3, 4}, {3}});
  check_same_on_cuda([](const std::vector<Tensor>& x, Device) { return slice_scatter(x[0], x[1], 1, 1, 4, 2); },
                     {{3, 4}, {3, 2}});
  check_same_on_cuda([](const std::vector<Tensor>& x, Device) { return diagonal_scatter(x[0], x[1], -1); },
                     {{3, 4}, {2}});
  const std::vector<Tensor> coords = unravel_index(longs({7, -1}, kCuda0), {3, 4});
  CHECK(coords[0].to(kCPU).to_vector<int64_t>() == std::vector<int64_t>{1, 2});
  CHECK(coords[1].to(kCPU).to_vector<int64_t>() == std::vector<int64_t>{3, 3});
}

}  // namespace test_index_more_cuda
