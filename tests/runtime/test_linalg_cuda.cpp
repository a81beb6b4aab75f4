// The solve family on CUDA equals the CPU (cuSOLVER's getrf/getrs/potrf and the substitution
// kernel against Eigen): values, errors and gradients, float32 and float64. Skipped (never
// passed) without a GPU.
#include <doctest/doctest.h>

#include "cuda_test_util.h"
#include "error_of.h"
#include "linalg_solve_test_util.h"

namespace test_linalg_cuda {

using namespace ember;
using namespace ember::linalg_test;
using ember::cuda_test::kCuda0;

namespace {

void check_same(const Tensor& cuda, const Tensor& cpu, double tolerance) {
  CHECK(cuda.device() == kCuda0);
  CHECK(cuda.dtype() == cpu.dtype());
  CHECK(max_difference(cuda.to(kCPU), cpu) <= tolerance);
}

}  // namespace

TEST_CASE("linalg on CUDA: solve, inv, det, slogdet, lu_factor and lu_solve equal the CPU") {
  if (!ember::testing::cuda_or_skip()) return;
  for (const DType dtype : {kFloat64, kFloat32}) {
    INFO("dtype " << dtype);
    const double tolerance = dtype == kFloat64 ? 1e-11 : 1e-4;
    const Tensor a = small_tensor({2, 1, 4, 4}, 1, dtype), b = small_tensor({3, 4, 2}, 2, dtype);
    const Tensor a_cuda = a.to(kCuda0), b_cuda = b.to(kCuda0);
    check_same(linalg::solve(a_cuda, b_cuda), linalg::solve(a, b), tolerance * 10);
    check_same(linalg::solve(transpose(a_cuda, -2, -1), b_cuda.select(0, 0), false),
               linalg::solve(transpose(a, -2, -1), b.select(0, 0), false), tolerance * 10);
    check_same(linalg::inv(a_cuda), linalg::inv(a), tolerance * 10);
    check_same(linalg::det(a_cuda), linalg::det(a), tolerance);
    const auto [sign, logabsdet] = linalg::slogdet(a_cuda);
    const auto [sign_cpu, logabsdet_cpu] = linalg::slogdet(a);
    check_same(sign, sign_cpu, 0.0);
    check_same(logabsdet, logabsdet_cpu, tolerance);
    const auto [lu, pivots] = linalg::lu_factor(a_cuda);
    const auto [lu_cpu, pivots_cpu] = linalg::lu_factor(a);
    CHECK(pivots.dtype() == kInt32);
    CHECK(pivots.to(kCPU).contiguous().to_vector<int32_t>() == pivots_cpu.contiguous().to_vector<int32_t>());
    check_same(lu, lu_cpu, tolerance);
    for (const bool adjoint : {false, true})
      check_same(linalg::lu_solve(lu, pivots, b_cuda.select(0, 0), true, adjoint),
                 linalg::lu_solve(lu_cpu, pivots_cpu, b.select(0, 0), true, adjoint), tolerance * 10);
  }
}

TEST_CASE("linalg on CUDA: cholesky, solve_triangular, cholesky_solve and cholesky_inverse equal the CPU") {
  if (!ember::testing::cuda_or_skip()) return;
  for (const DType dtype : {kFloat64, kFloat32}) {
    INFO("dtype " << dtype);
    const double tolerance = dtype == kFloat64 ? 1e-11 : 1e-4;
    const Tensor spd = positive_definite({3, 5, 5}, 10, dtype), b = small_tensor({3, 5, 2}, 11, dtype);
    for (const bool upper : {false, true}) {
      const Tensor factor = linalg::cholesky(spd.to(kCuda0), upper);
      check_same(factor, linalg::cholesky(spd, upper), tolerance);
      check_same(cholesky_solve(b.to(kCuda0), factor, upper), cholesky_solve(b, linalg::cholesky(spd, upper), upper),
                 tolerance * 10);
      check_same(cholesky_inverse(factor, upper), cholesky_inverse(linalg::cholesky(spd, upper), upper),
                 tolerance * 10);
      for (const bool left : {false, true})
        for (const bool unit : {false, true}) {
          const Tensor rhs = left ? b : transpose(b, -2, -1);
          check_same(linalg::solve_triangular(spd.to(kCuda0), rhs.to(kCuda0), upper, left, unit),
                     linalg::solve_triangular(spd, rhs, upper, left, unit), tolerance * 10);
        }
    }
  }
}

TEST_CASE("linalg on CUDA: singular and indefinite matrices raise the CPU's errors, and gradients equal the CPU's") {
  if (!ember::testing::cuda_or_skip()) return;
  const Tensor singular = testing::doubles({1, 2, 3, 2, 4, 6, 1, 0, 1}, {3, 3});
  const Tensor batch = stack({well_conditioned({3, 3}, 1), singular}).to(kCuda0);
  CHECK(ember::testing::error_of([&] { linalg::inv(batch); }).find("linalg.inv: (Batch element 1): The diagonal") !=
        std::string::npos);
  const Tensor indefinite = testing::doubles({1, 2, 2, 1}, {2, 2}).to(kCuda0);
  CHECK(ember::testing::error_of([&] { linalg::cholesky(indefinite); }).find("leading minor of order 2") !=
        std::string::npos);
  // d/dA and d/dB of a loss through solve, logdet and cholesky.
  auto grads_on = [](Device device) {
    const Tensor a = well_conditioned({2, 3, 3}, 20).to(device).requires_grad_();
    const Tensor b = small_tensor({2, 3, 2}, 21).to(device).requires_grad_();
    const Tensor spd = add(matmul(a, transpose(a, -2, -1)), 1.0);
    const Tensor loss = add(add(sum(linalg::solve(a, b)), sum(logdet(spd))), sum(linalg::cholesky(spd)));
    loss.backward();
    return std::pair{a.grad().to(kCPU), b.grad().to(kCPU)};
  };
  const auto [grad_a, grad_b] = grads_on(kCuda0);
  const auto [grad_a_cpu, grad_b_cpu] = grads_on(kCPU);
  CHECK(max_difference(grad_a, grad_a_cpu) < 1e-10);
  CHECK(max_difference(grad_b, grad_b_cpu) < 1e-10);
}

}  // namespace test_linalg_cuda
