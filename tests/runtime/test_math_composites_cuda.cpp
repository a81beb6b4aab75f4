// The composites of runtime/functional_math_composites.h and runtime/linalg_composites.h on CUDA equal
// the CPU: values (NaN and -0.0 included), info tensors and gradients. Skipped (never passed) without a GPU.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "cuda_test_util.h"
#include "finite_difference.h"
#include "runtime/functional_math_composites.h"
#include "runtime/linalg_composites.h"

namespace test_math_composites_cuda {

using namespace ember;
using namespace ember::testing;
using ember::cuda_test::kCuda0;

namespace {

// Same values as the CPU's within `tolerance`, NaN where the CPU has NaN, zeros' signs alike.
void check_same(const Tensor& cuda, const Tensor& cpu, double tolerance) {
  CHECK(cuda.device() == kCuda0);
  CHECK(cuda.dtype() == cpu.dtype());
  const std::vector<double> actual = values_of(cuda.to(kCPU)), expected = values_of(cpu);
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("element ", i, ": ", actual[i], " vs ", expected[i]);
    if (std::isnan(expected[i])) {
      CHECK(std::isnan(actual[i]));
    } else {
      CHECK(std::abs(actual[i] - expected[i]) <= tolerance * (1.0 + std::abs(expected[i])));
      if (expected[i] == 0.0) CHECK(std::signbit(actual[i]) == std::signbit(expected[i]));
    }
  }
}

}  // namespace

TEST_CASE("math composites on CUDA equal the CPU") {
  if (!cuda_or_skip()) return;
  const double nan = std::nan("");
  const Tensor a = doubles({1.0, nan, nan, -0.0, 7.0, -7.0, 1.0, 0.5}, {2, 4});
  const Tensor b = doubles({2.0, 5.0, nan, 0.0, 2.0, 2.0, 0.1, 0.0});
  const Tensor a_cuda = a.to(kCuda0), b_cuda = b.to(kCuda0);
  check_same(fmax(a_cuda, b_cuda), fmax(a, b), 0.0);
  check_same(fmin(a_cuda, b_cuda), fmin(a, b), 0.0);
  check_same(floor_divide(a_cuda, b_cuda), floor_divide(a, b), 0.0);
  check_same(signbit(a_cuda), signbit(a), 0.0);
  check_same(float_power(abs(a_cuda), b_cuda), float_power(abs(a), b), 1e-15);
  check_same(deg2rad(a_cuda), deg2rad(a), 1e-15);
  const Tensor x = small_tensor({3, 4}, 1), y = small_tensor({5, 4}, 2);
  check_same(inner(x.to(kCuda0), y.to(kCuda0)), inner(x, y), 1e-14);
  check_same(dist(x.to(kCuda0), y.narrow(0, 0, 3).to(kCuda0), 3.0), dist(x, y.narrow(0, 0, 3), 3.0), 1e-14);
  check_same(addr(x.to(kCuda0), small_tensor({3}, 3).to(kCuda0), small_tensor({4}, 4).to(kCuda0), 0.5, 2.0),
             addr(x, small_tensor({3}, 3), small_tensor({4}, 4), 0.5, 2.0), 1e-14);
}

TEST_CASE("linalg composites on CUDA equal the CPU, info tensors included") {
  if (!cuda_or_skip()) return;
  const Tensor A = mul(small_tensor({2, 3, 3}, 5), 3.0);
  check_same(linalg::matrix_exp(A.to(kCuda0)), linalg::matrix_exp(A), 1e-12);
  check_same(linalg::vecdot(A.to(kCuda0), A.to(kCuda0)), linalg::vecdot(A, A), 1e-14);
  const Tensor singular = doubles({2.0, 1.0, -1.0, 3.0, 1.0, 2.0, 2.0, 4.0}, {2, 2, 2});
  const auto [inverse, info] = linalg::inv_ex(singular.to(kCuda0));
  const auto [inverse_cpu, info_cpu] = linalg::inv_ex(singular);
  check_same(inverse, inverse_cpu, 1e-14);
  check_same(info, info_cpu, 0.0);
  const Tensor indefinite = doubles({4.0, 2.0, 2.0, 3.0, 1.0, 2.0, 2.0, 1.0}, {2, 2, 2});
  const auto [factor, cholesky_info] = linalg::cholesky_ex(indefinite.to(kCuda0));
  const auto [factor_cpu, cholesky_info_cpu] = linalg::cholesky_ex(indefinite);
  check_same(factor, factor_cpu, 1e-14);
  check_same(cholesky_info, cholesky_info_cpu, 0.0);
  const Tensor leaf_cpu = small_tensor({3, 3}, 6).requires_grad_();
  const Tensor leaf_cuda = small_tensor({3, 3}, 6).to(kCuda0).detach().requires_grad_();
  linalg::matrix_exp(leaf_cpu).sum().backward();
  linalg::matrix_exp(leaf_cuda).sum().backward();
  check_same(leaf_cuda.grad(), leaf_cpu.grad(), 1e-12);
}

}  // namespace test_math_composites_cuda
