// Finite-difference gradient checks in float64 of every differentiable function of the solve
// family (runtime/linalg.h). The leaves are random in +-[0.1, 1]; a diagonal shift keeps the
// matrices far from singular, a symmetrization makes cholesky's input symmetric (its gradient is
// the symmetric one, as torch's, which central differences see only through a symmetric input).
#include <doctest/doctest.h>

#include "linalg_solve_test_util.h"

namespace test_linalg_gradients {

using namespace ember;
using namespace ember::linalg_test;
using ember::testing::gradcheck_leaves;
using ember::testing::leaf;

namespace {

Tensor symmetric_positive(const Tensor& x) {
  return shifted_eye(mul(add(x, transpose(x, -2, -1)), 0.5), static_cast<double>(x.size(-1)) + 1.0);
}

}  // namespace

TEST_CASE("gradients: linalg.solve on both sides, with vectors and broadcast batches") {
  gradcheck_leaves([](const auto& in) { return linalg::solve(shifted_eye(in[0], 3.0), in[1]); },
            {leaf({3, 3}, 1), leaf({3, 2}, 2)});
  gradcheck_leaves([](const auto& in) { return linalg::solve(shifted_eye(in[0], 3.0), in[1], false); },
            {leaf({2, 3, 3}, 3), leaf({2, 4, 3}, 4)});
  gradcheck_leaves([](const auto& in) { return linalg::solve(shifted_eye(in[0], 3.0), in[1]); },
            {leaf({2, 3, 3}, 5), leaf({2, 3}, 6)});
  gradcheck_leaves([](const auto& in) { return linalg::solve(shifted_eye(in[0], 3.0), in[1]); },
            {leaf({2, 1, 3, 3}, 7), leaf({4, 3, 2}, 8)});
}

TEST_CASE("gradients: inv, det (positive and negative), slogdet and logdet") {
  gradcheck_leaves([](const auto& in) { return linalg::inv(shifted_eye(in[0], 3.0)); }, {leaf({2, 3, 3}, 10)});
  gradcheck_leaves([](const auto& in) { return linalg::det(shifted_eye(in[0], 3.0)); }, {leaf({2, 3, 3}, 11)});
  gradcheck_leaves([](const auto& in) { return linalg::det(shifted_eye(in[0], -3.0)); },
                   {leaf({3, 3}, 12)});  // det < 0
  gradcheck_leaves([](const auto& in) { return std::get<1>(linalg::slogdet(shifted_eye(in[0], -3.0))); },
            {leaf({2, 3, 3}, 13)});
  gradcheck_leaves([](const auto& in) { return logdet(shifted_eye(in[0], 3.0)); }, {leaf({2, 4, 4}, 14)});
  gradcheck_leaves([](const auto& in) { return linalg::det(in[0]); },
                   {leaf({4, 4}, 15)});  // no shift: a generic matrix
}

TEST_CASE("gradients: linalg.cholesky, lower and upper") {
  for (const bool upper : {false, true}) {
    INFO("upper " << upper);
    gradcheck_leaves([upper](const auto& in) { return linalg::cholesky(symmetric_positive(in[0]), upper); },
              {leaf({2, 4, 4}, 20)});
  }
}

TEST_CASE("gradients: linalg.solve_triangular in every upper, left and unitriangular combination") {
  for (const bool upper : {false, true})
    for (const bool left : {false, true})
      for (const bool unit : {false, true}) {
        INFO("upper " << upper << " left " << left << " unitriangular " << unit);
        gradcheck_leaves(
            [=](const auto& in) { return linalg::solve_triangular(shifted_eye(in[0], 3.0), in[1], upper, left, unit); },
            {leaf({2, 3, 3}, 30), leaf(left ? Dims{2, 3, 2} : Dims{2, 2, 3}, 31)});
      }
}

TEST_CASE("gradients: cholesky_solve and cholesky_inverse in the factor and the right-hand side") {
  for (const bool upper : {false, true}) {
    INFO("upper " << upper);
    gradcheck_leaves([upper](const auto& in) { return cholesky_solve(in[1], shifted_eye(in[0], 3.0), upper); },
              {leaf({2, 3, 3}, 40), leaf({2, 3, 2}, 41)});
    gradcheck_leaves([upper](const auto& in) { return cholesky_inverse(shifted_eye(in[0], 3.0), upper); },
                     {leaf({3, 3}, 42)});
  }
}

TEST_CASE("gradients: lu_solve with respect to B, in every left and adjoint form") {
  const auto [lu, pivots] = linalg::lu_factor(small_tensor({2, 3, 3}, 50));
  for (const bool left : {false, true})
    for (const bool adjoint : {false, true}) {
      INFO("left " << left << " adjoint " << adjoint);
      gradcheck_leaves([&](const auto& in) { return linalg::lu_solve(lu, pivots, in[0], left, adjoint); },
                {leaf(left ? Dims{2, 3, 2} : Dims{2, 2, 3}, 51)});
    }
}

TEST_CASE("gradients: matrix_power with a negative exponent") {
  gradcheck_leaves([](const auto& in) { return matrix_power(shifted_eye(in[0], 3.0), -2); }, {leaf({3, 3}, 60)});
}

TEST_CASE("gradients: second derivatives of solve, slogdet and cholesky through create_graph") {
  // g(A) = <d loss / dA, v>; autograd's d g / dA (the gradient's own graph) against central
  // differences of g, which needs grad mode on, so not testing::gradcheck.
  const Tensor a = leaf({3, 3}, 70);
  const Tensor b = small_tensor({3, 2}, 71), v = small_tensor({3, 3}, 72);
  auto g = [&](bool create_graph) {
    const Tensor x = linalg::solve(shifted_eye(a, 3.0), b);
    const Tensor l = linalg::cholesky(symmetric_positive(a));
    const Tensor logabsdet = std::get<1>(linalg::slogdet(shifted_eye(a, 3.0)));
    const Tensor loss = add(add(sum(mul(x, x)), sum(mul(l, l))), logabsdet);
    const Tensor grad_a = autograd::grad({loss}, {a}, {}, create_graph, create_graph)[0];
    return sum(mul(grad_a, v));
  };
  const std::vector<double> analytic = values_of(autograd::grad({g(true)}, {a})[0]);
  double* data = a.data_ptr<double>();
  constexpr double kStep = 1e-6;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double saved = data[i];
    data[i] = saved + kStep;
    const double above = values_of(g(false))[0];
    data[i] = saved - kStep;
    const double below = values_of(g(false))[0];
    data[i] = saved;
    const double numeric = (above - below) / (2 * kStep);
    INFO("element " << i << ": autograd " << analytic[i] << ", finite difference " << numeric);
    CHECK(std::abs(analytic[i] - numeric) <= 1e-5 * (1.0 + std::abs(numeric)));
  }
}

}  // namespace test_linalg_gradients
