// Reductions where ember's result must be PyTorch's (2.x, CPU) for the same call, each expected
// value derived here from PyTorch's documented rule (named per case) with a float64 loop, never
// from ember's own output.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_reductions_pytorch_parity {

using namespace ember;
using ember::testing::leaf_of;
using ember::testing::values_of;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double mean_of(const std::vector<double>& values) {
  double total = 0.0;
  for (double value : values) total += value;
  return total / static_cast<double>(values.size());
}

// Compares element by element, NaN matching NaN and infinities matching by sign.
void check_same(const std::vector<double>& got, const std::vector<double>& expected) {
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", expected " << expected[i]);
    if (std::isnan(expected[i])) {
      CHECK(std::isnan(got[i]));
    } else if (std::isinf(expected[i])) {
      CHECK(got[i] == expected[i]);
    } else {
      CHECK(got[i] == doctest::Approx(expected[i]).epsilon(1e-12));
    }
  }
}

}  // namespace

// PyTorch's var_backward (FunctionsManual.cpp): over all elements (no dims, or a 0-d input) with
// N - correction <= 0 it is grad * where(x == mean, NaN, inf), +inf for every element off the mean
// whatever its side; with dims it is grad * 2 / (N - correction) * (x - mean), a finite negative
// factor when the correction exceeds N.
TEST_CASE("var backward with a correction of N or more: PyTorch's values, with and without dims") {
  const std::vector<double> values{1.0, 2.0, 4.0};
  const double mean = mean_of(values);
  SUBCASE("no dims, correction N: +inf off the mean on both sides") {
    const Tensor x = leaf_of(values);
    var(x, {}, 3).backward();
    check_same(values_of(x.grad()), {kInf, kInf, kInf});
  }
  SUBCASE("no dims, correction past N, an element at the mean: NaN there, +inf elsewhere") {
    const Tensor x = leaf_of({1.0, 2.0, 3.0});
    var(x, {}, 7).backward();
    check_same(values_of(x.grad()), {kInf, std::nan(""), kInf});
  }
  SUBCASE("dims given, correction past N: the finite factor 2 / (N - correction)") {
    const Tensor x = leaf_of(values);
    mul(var(x, {0}, 5), 3.0).backward();  // grad 3
    std::vector<double> expected;
    for (double value : values) expected.push_back(3.0 * 2.0 / (3.0 - 5.0) * (value - mean));
    check_same(values_of(x.grad()), expected);
  }
  SUBCASE("dims given on a matrix, keepdim false, correction past each row's N") {
    const std::vector<double> flat{1.0, 2.0, 4.0, -3.0, 0.5, 8.0};
    const Tensor x = from_vector<double>(flat, {2, 3}, {.dtype = kFloat64}).requires_grad_();
    sum(var(x, {1}, 4)).backward();
    std::vector<double> expected;
    for (int row = 0; row < 2; ++row) {
      const std::vector<double> group(flat.begin() + 3 * row, flat.begin() + 3 * row + 3);
      for (double value : group) expected.push_back(2.0 / (3.0 - 4.0) * (value - mean_of(group)));
    }
    check_same(values_of(x.grad()), expected);
  }
  SUBCASE("dims given, correction N: 2 / 0 times the deviation, signed infinities") {
    const Tensor x = leaf_of(values);
    var(x, {0}, 3).backward();
    check_same(values_of(x.grad()), {-kInf, -kInf, kInf});
  }
}

// PyTorch's norm_backward returns no gradient for p = 0 (an undefined tensor, read as zeros), but
// the result of linalg.vector_norm(x, 0) on an x that requires grad has a grad_fn: backward runs
// and gives x no nonzero gradient. Infinite and NaN elements must not make it NaN.
TEST_CASE("norm with p = 0 of a tensor that requires grad: backward runs, the gradient is zero") {
  const std::vector<double> values{0.0, -2.0, kInf, std::nan(""), 0.5};
  const Tensor x = leaf_of(values);
  const Tensor count = norm(x, 0.0);
  CHECK(count.requires_grad());
  CHECK(count.item() == 4.0);  // the nonzeros: -2, inf, NaN (nonzero), 0.5
  count.backward();
  if (x.grad().defined()) check_same(values_of(x.grad()), std::vector<double>(values.size(), 0.0));
  const Tensor rows = from_vector<double>({0.0, 1.0, -3.0, 0.0, 0.0, 0.0}, {2, 3}, {.dtype = kFloat64}).requires_grad_();
  const Tensor per_row = norm(rows, 0.0, {1}, true);
  check_same(values_of(per_row), {2.0, 0.0});
  CHECK(per_row.sizes() == Dims{2, 1});
  sum(per_row).backward();
  if (rows.grad().defined()) check_same(values_of(rows.grad()), std::vector<double>(6, 0.0));
}

}  // namespace test_reductions_pytorch_parity
