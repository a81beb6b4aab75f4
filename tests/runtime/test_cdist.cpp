// ember::cdist (runtime/functional_cdist.h) against a float64 loop for p in {0, 0.5, 1, 2, 3, inf},
// batched with broadcasting, in both p = 2 forms; gradients by central differences and by hand at
// PyTorch's special points (zero distance, ties of the maximum); the argument errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_cdist {

using namespace ember;
using ember::testing::check_messages_name_lines;
using ember::testing::error_of;
using ember::testing::gradcheck_leaves;
using ember::testing::small_tensor;
using ember::testing::values_of;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double reference_distance(const double* a, const double* b, int64_t columns, double p) {
  double total = 0;
  for (int64_t k = 0; k < columns; ++k) {
    const double d = std::abs(a[k] - b[k]);
    if (p == 0)
      total += d != 0 ? 1 : 0;
    else if (std::isinf(p))
      total = std::max(total, d);
    else
      total += std::pow(d, p);
  }
  return p == 0 || std::isinf(p) ? total : std::pow(total, 1.0 / p);
}

// x1 [B1, R1, M] broadcast against x2 [R2, M] (batch [B1]); returns [B1, R1, R2] flat.
std::vector<double> reference_cdist(const Tensor& x1, const Tensor& x2, double p) {
  const std::vector<double> a = values_of(x1), b = values_of(x2);
  const int64_t batch = x1.size(0), rows1 = x1.size(1), rows2 = x2.size(0), columns = x1.size(2);
  std::vector<double> out;
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t i = 0; i < rows1; ++i)
      for (int64_t j = 0; j < rows2; ++j)
        out.push_back(reference_distance(&a[(n * rows1 + i) * columns], &b[j * columns], columns, p));
  return out;
}

void check_close(const std::vector<double>& actual, const std::vector<double>& expected, double tolerance) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) CHECK(actual[i] == doctest::Approx(expected[i]).epsilon(tolerance));
}

}  // namespace

TEST_CASE("cdist matches a float64 loop for every p, batched and broadcast") {
  const Tensor x1 = small_tensor({3, 4, 5}, 1);
  Tensor x2 = small_tensor({6, 5}, 2);
  // A repeated column value and a repeated row: p = 0 counts the differing columns.
  x2 = cat({slice(x1, 0, 0, 1).reshape({4, 5}).slice(0, 0, 1), x2.slice(0, 1, 6)});
  for (double p : {0.0, 0.5, 1.0, 2.0, 3.0, kInf}) {
    INFO(std::string("p = " + std::to_string(p)));
    const Tensor out = cdist(x1, x2, p);
    CHECK(out.sizes() == Dims{3, 4, 6});
    check_close(values_of(out), reference_cdist(x1, x2, p), 1e-13);
  }
  // A broadcast batch: [2, 1, R1, M] against [3, R2, M] gives [2, 3, R1, R2].
  const Tensor left = small_tensor({2, 1, 2, 3}, 3);
  const Tensor right = small_tensor({3, 4, 3}, 4);
  const Tensor out = cdist(left, right, 1.0);
  REQUIRE(out.sizes() == Dims{2, 3, 2, 4});
  CHECK(allclose(out.select(0, 1).select(0, 2), cdist(left.select(0, 1).select(0, 0), right.select(0, 2), 1.0)));
}

TEST_CASE("cdist p = 2 takes the matrix-product form past 25 rows, as PyTorch") {
  const Tensor x1 = small_tensor({2, 30, 4}, 5);
  const Tensor x2 = small_tensor({7, 4}, 6);
  const std::vector<double> expected = reference_cdist(x1, x2, 2.0);
  check_close(values_of(cdist(x1, x2)), expected, 1e-10);
  check_close(values_of(cdist(x1, x2, 2.0, CdistComputeMode::DonotUseMmForEuclidDist)), expected, 1e-13);
  check_close(values_of(cdist(x1.slice(1, 0, 3), x2, 2.0, CdistComputeMode::UseMmForEuclidDist)),
              reference_cdist(x1.slice(1, 0, 3), x2, 2.0), 1e-10);
  // The product form rounds |a|^2 - 2 a.b + |b|^2: identical rows give sqrt(1e-30) at most.
  const Tensor same = cdist(x2, x2, 2.0, CdistComputeMode::UseMmForEuclidDist);
  for (int64_t i = 0; i < 7; ++i) CHECK(values_of(same)[i * 7 + i] < 1e-7);
}

TEST_CASE("cdist gradients by central differences") {
  for (double p : {0.5, 1.0, 2.0, 3.0, kInf}) {
    INFO(std::string("p = " + std::to_string(p)));
    const Tensor x1 = small_tensor({2, 3, 4}, 7).requires_grad_();
    const Tensor x2 = small_tensor({2, 5, 4}, 8).requires_grad_();
    gradcheck_leaves([p](const std::vector<Tensor>& in) { return cdist(in[0], in[1], p); }, {x1, x2}, 1e-5);
  }
  const Tensor x1 = small_tensor({3, 4}, 9).requires_grad_();
  const Tensor x2 = small_tensor({2, 4}, 10).requires_grad_();
  gradcheck_leaves(
      [](const std::vector<Tensor>& in) { return cdist(in[0], in[1], 2.0, CdistComputeMode::UseMmForEuclidDist); },
      {x1, x2}, 1e-5);
  // p = 0 is piecewise constant: its gradient is 0, and defined.
  const Tensor y1 = small_tensor({3, 4}, 11).requires_grad_();
  cdist(y1, small_tensor({2, 4}, 12), 0.0).sum().backward();
  CHECK(values_of(y1.grad().abs().sum())[0] == 0.0);
}

TEST_CASE("cdist gradient is 0 at zero distance and whole at ties of the maximum") {
  // Row 0 of x1 equals row 0 of x2: the p = 2 root has no derivative there, PyTorch's gradient is 0.
  for (CdistComputeMode mode : {CdistComputeMode::DonotUseMmForEuclidDist, CdistComputeMode::UseMmForEuclidDist}) {
    const Tensor x1 = from_vector<double>({1, 2, 0, 0}, {2, 2}, {.dtype = kFloat64}).requires_grad_();
    const Tensor x2 = from_vector<double>({1, 2}, {1, 2}, {.dtype = kFloat64}).requires_grad_();
    cdist(x1, x2, 2.0, mode).sum().backward();
    const std::vector<double> g = values_of(x1.grad());
    const double norm = std::sqrt(5.0);  // row 1: d/dx1 |x1 - x2| = (x1 - x2) / |x1 - x2|
    CHECK(g[0] == 0.0);
    CHECK(g[1] == 0.0);
    CHECK(g[2] == doctest::Approx(-1 / norm));
    CHECK(g[3] == doctest::Approx(-2 / norm));
  }
  for (double p : {0.5, 3.0}) {  // the general p: 0 at zero distance, and for p < 1 where d = 0
    const Tensor x1 = from_vector<double>({1, 2, 1, 0}, {2, 2}, {.dtype = kFloat64}).requires_grad_();
    const Tensor x2 = from_vector<double>({1, 2}, {1, 2}, {.dtype = kFloat64});
    cdist(x1, x2, p).sum().backward();
    const std::vector<double> g = values_of(x1.grad());
    CHECK(g[0] == 0.0);
    CHECK(g[1] == 0.0);
    CHECK(g[2] == 0.0);                    // d = 0 in that column
    CHECK(g[3] == doctest::Approx(-1.0));  // one nonzero column: |d| itself
  }
  // p = inf with |d| tied at 1 in both columns: each column gets the whole gradient, times sign(d).
  const Tensor a = from_vector<double>({0, 0}, {1, 2}, {.dtype = kFloat64}).requires_grad_();
  const Tensor b = from_vector<double>({1, -1}, {1, 2}, {.dtype = kFloat64});
  const Tensor out = cdist(a, b, kInf);
  CHECK(values_of(out) == std::vector<double>{1.0});
  out.sum().backward();
  CHECK(values_of(a.grad()) == std::vector<double>{-1.0, 1.0});
}

TEST_CASE("cdist of empty inputs and no columns") {
  CHECK(cdist(small_tensor({0, 3}, 13), small_tensor({4, 3}, 14)).sizes() == Dims{0, 4});
  const Tensor no_columns = cdist(zeros({2, 0}, {.dtype = kFloat64}), zeros({3, 0}, {.dtype = kFloat64}), kInf);
  CHECK(no_columns.sizes() == Dims{2, 3});
  CHECK(values_of(no_columns) == std::vector<double>(6, 0.0));
}

TEST_CASE("cdist refuses bad arguments") {
  const Tensor x = small_tensor({3, 4}, 15);
  const Tensor five_columns = small_tensor({3, 5}, 16);
  const Tensor vector = small_tensor({4}, 17);
  const Tensor integers = zeros({3, 4}, {.dtype = kInt64});
  const Tensor single = x.to(kFloat32);
  const Tensor batch2 = small_tensor({2, 3, 4}, 18);
  const Tensor batch3 = small_tensor({3, 3, 4}, 19);
  // clang-format off: one call per line, as first + i counts them
  const int first = __LINE__ + 2;
  const std::vector<std::string> messages = {
      error_of([&] { cdist(x, x, -1.0); }),
      error_of([&] { cdist(vector, x); }),
      error_of([&] { cdist(x, vector); }),
      error_of([&] { cdist(x, five_columns); }),
      error_of([&] { cdist(integers, x); }),
      error_of([&] { cdist(x, single); }),
      error_of([&] { cdist(batch2, batch3); }),
  };
  // clang-format on
  check_messages_name_lines(
      messages,
      {"cdist: only supports non-negative p values, got p = -1", "cdist: only supports at least 2D tensors, X1 got: 1D",
       "cdist: only supports at least 2D tensors, X2 got: 1D",
       "cdist: X1 and X2 must have the same number of columns. X1: 4 X2: 5",
       "cdist: only supports floating-point dtypes, X1 got: int64",
       "cdist: X1 and X2 must have the same dtype. X1: float64 X2: float32",
       "cdist: shapes [2] and [3] cannot be broadcast"},
      first);
}

}  // namespace test_cdist
