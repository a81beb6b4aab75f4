// matrix_power, addmv, addbmm, baddbmm, linalg_multi_dot and chain_matmul
// (runtime/functional_math_extra.h) against float64 loops written here; beta = 0 ignoring NaN in
// input, torch's multiplication order, gradients by central differences and errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_ops_composites_linalg {

using namespace ember;
using ember::testing::check_refusal;
using ember::testing::error_of;
using ember::testing::gradcheck_leaves;
using ember::testing::leaf;
using ember::testing::small_tensor;
using ember::testing::values_of;
using Inputs = std::vector<Tensor>;

namespace {

using Matrix = std::vector<double>;  // row-major, sizes passed beside it

Matrix product(const Matrix& a, const Matrix& b, int64_t n, int64_t m, int64_t p) {
  Matrix c(n * p, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < p; ++j)
      for (int64_t k = 0; k < m; ++k) c[i * p + j] += a[i * m + k] * b[k * p + j];
  return c;
}

void check_close(const std::vector<double>& got, const std::vector<double>& expected, double tolerance = 1e-12) {
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO((std::string("element ") + std::to_string(i)));
    CHECK(std::abs(got[i] - expected[i]) <= tolerance * (1.0 + std::abs(expected[i])));
  }
}

}  // namespace

TEST_CASE("matrix_power: repeated products, batches, k = 0 and 1") {
  const Tensor a = small_tensor({2, 3, 3}, 1);
  for (int64_t k = 0; k <= 7; ++k) {
    INFO((std::string("k ") + std::to_string(k)));
    std::vector<double> expected;
    for (int b = 0; b < 2; ++b) {
      const Matrix base = values_of(a.select(0, b));
      Matrix power(9, 0.0);
      for (int i = 0; i < 3; ++i) power[i * 4] = 1.0;
      for (int64_t step = 0; step < k; ++step) power = product(power, base, 3, 3, 3);
      expected.insert(expected.end(), power.begin(), power.end());
    }
    const Tensor result = matrix_power(a, k);
    CHECK(result.sizes() == Dims{2, 3, 3});
    check_close(values_of(result), expected);
  }
  CHECK(matrix_power(zeros({0, 0}), 3).sizes() == Dims{0, 0});
  for (int64_t k : {1, 2, 3, 5, 6})
    gradcheck_leaves([k](const Inputs& in) { return matrix_power(in[0], k); },
                     {leaf({3, 3}, 2 + static_cast<uint32_t>(k))});
}

TEST_CASE("addmv, addbmm, baddbmm: beta input + alpha products, beta 0 ignores NaN") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor mat = small_tensor({3, 4}, 10), vec = small_tensor({4}, 11), input = small_tensor({3}, 12);
  const Matrix mv = product(values_of(mat), values_of(vec), 3, 4, 1);
  std::vector<double> expected;
  for (int i = 0; i < 3; ++i) expected.push_back(0.5 * values_of(input)[i] + 2.0 * mv[i]);
  check_close(values_of(addmv(input, mat, vec, 0.5, 2.0)), expected);
  const Tensor poisoned = ember::testing::doubles({nan});  // broadcasts from [1]
  std::vector<double> scaled;
  for (double value : mv) scaled.push_back(-1.5 * value);
  check_close(values_of(addmv(poisoned, mat, vec, 0.0, -1.5)), scaled);

  const Tensor b1 = small_tensor({2, 3, 4}, 13), b2 = small_tensor({2, 4, 2}, 14), in2 = small_tensor({3, 2}, 15);
  Matrix summed(6, 0.0);
  std::vector<double> batched;
  for (int b = 0; b < 2; ++b) {
    const Matrix part = product(values_of(b1.select(0, b)), values_of(b2.select(0, b)), 3, 4, 2);
    for (int i = 0; i < 6; ++i) {
      summed[i] += part[i];
      batched.push_back(3.0 * values_of(in2)[i] + 0.5 * part[i]);
    }
  }
  std::vector<double> add_summed;
  for (int i = 0; i < 6; ++i) add_summed.push_back(values_of(in2)[i] + summed[i]);
  check_close(values_of(addbmm(in2, b1, b2)), add_summed);
  check_close(values_of(baddbmm(in2, b1, b2, 3.0, 0.5)), batched);  // input [3, 2] broadcast over batches
  check_close(values_of(addbmm(ember::testing::doubles({nan}), b1, b2, 0.0)), summed);
  // No batches: only beta input remains.
  check_close(values_of(addbmm(in2, zeros({0, 3, 4}, {.dtype = kFloat64}), zeros({0, 4, 2}, {.dtype = kFloat64}), 2.0)),
              values_of(in2.mul(2.0)));
  const Tensor ints = from_vector<int64_t>({1, 2, 3, 4}, {2, 2});
  CHECK(addmv(from_vector<int64_t>({1, 1}, {2}), ints, from_vector<int64_t>({1, 1}, {2}), 2.0, 3.0)
            .to_vector<int64_t>() == std::vector<int64_t>{11, 23});
  gradcheck_leaves([](const Inputs& in) { return addmv(in[0], in[1], in[2], 0.5, 2.0); },
            {leaf({3}, 16), leaf({3, 2}, 17), leaf({2}, 18)});
  gradcheck_leaves([](const Inputs& in) { return addbmm(in[0], in[1], in[2], 1.5, -0.5); },
            {leaf({1, 2}, 19), leaf({2, 3, 2}, 20), leaf({2, 2, 2}, 21)});
  gradcheck_leaves([](const Inputs& in) { return baddbmm(in[0], in[1], in[2], 2.0, 0.25); },
            {leaf({2, 3, 2}, 22), leaf({2, 3, 4}, 23), leaf({2, 4, 2}, 24)});
}

TEST_CASE("linalg_multi_dot and chain_matmul: the chain's product, vectors at the ends") {
  // Shapes chosen so that the cheapest order is neither left-to-right nor right-to-left.
  const std::vector<int64_t> dims{5, 2, 6, 1, 4};
  std::vector<Tensor> matrices;
  for (size_t i = 0; i + 1 < dims.size(); ++i)
    matrices.push_back(small_tensor({dims[i], dims[i + 1]}, 30 + static_cast<uint32_t>(i)));
  Matrix expected = values_of(matrices[0]);
  for (size_t i = 1; i < matrices.size(); ++i)
    expected = product(expected, values_of(matrices[i]), 5, dims[i], dims[i + 1]);
  check_close(values_of(linalg_multi_dot(matrices)), expected);
  check_close(values_of(chain_matmul(matrices)), expected);
  const std::vector<Tensor> three{matrices[0], matrices[1], matrices[2]};
  check_close(
      values_of(linalg_multi_dot(three)),
      product(product(values_of(matrices[0]), values_of(matrices[1]), 5, 2, 6), values_of(matrices[2]), 5, 6, 1));
  // A row vector first and a column vector last: a 0-d result.
  const Tensor row = small_tensor({5}, 40), column = small_tensor({4}, 41);
  const Tensor scalar = linalg_multi_dot({row, matrices[0], matrices[1], matrices[2], matrices[3], column});
  CHECK(scalar.dim() == 0);
  check_close({scalar.item()}, product(product(values_of(row), expected, 1, 5, 4), values_of(column), 1, 4, 1));
  CHECK(linalg_multi_dot({row, matrices[0]}).sizes() == Dims{2});
  CHECK(values_of(chain_matmul({matrices[0]})) == values_of(matrices[0]));
  gradcheck_leaves(
      [](const Inputs& in) {
        return linalg_multi_dot({in[0], in[1], in[2], in[3]});
      },
      {leaf({3}, 42), leaf({3, 2}, 43), leaf({2, 4}, 44), leaf({4, 2}, 45)});
}

TEST_CASE("linalg products: errors name the function, the values and the caller's line") {
  const Tensor m = small_tensor({2, 3}, 50), v = small_tensor({3}, 51);
  int line = __LINE__ + 1;
  std::string message = error_of([&] { matrix_power(m, 2); });
  check_refusal(message, "linalg.matrix_power: A must be batches of square matrices, but they are 2 by 3 matrices",
                line);
  line = __LINE__ + 1;
  message = error_of([&] { matrix_power(zeros({2, 2}), -1); });  // a negative power inverts first
  check_refusal(message, "linalg.inv: The diagonal element 1 is zero", line);
  line = __LINE__ + 1;
  message = error_of([&] { addmv(v, m, small_tensor({4}, 53)); });
  check_refusal(message, "addmv: size mismatch, got input ([3]), mat (2x3), vec (4)", line);
  line = __LINE__ + 1;
  message = error_of([&] { addmv(small_tensor({3}, 54), m, v); });
  check_refusal(message, "addmv: input of shape [3] does not broadcast to the product's shape [2]", line);
  line = __LINE__ + 1;
  message = error_of([&] { addbmm(m, small_tensor({2, 2, 3}, 55), small_tensor({3, 3, 3}, 56)); });
  check_refusal(message, "addbmm: batch1 and batch2 must have same number of batches, got 2 and 3", line);
  line = __LINE__ + 1;
  message = error_of([&] { baddbmm(m, m, m); });
  check_refusal(message, "baddbmm: batch1 must be a 3D tensor, got shape [2, 3]", line);
  line = __LINE__ + 2;  // the call's own line
  message = error_of([&] {
    addmv(from_vector<int64_t>({1}, {1}), ones({1, 1}, {.dtype = kInt64}), ones({1}, {.dtype = kInt64}), 0.5);
  });
  check_refusal(message, "addmv: For integral input tensors, argument beta must not be a floating point number", line);
  line = __LINE__ + 1;
  message = error_of([&] { linalg_multi_dot({m}); });
  check_refusal(message, "multi_dot(): expected at least 2 tensors but got 1", line);
  line = __LINE__ + 1;
  message = error_of([&] { linalg_multi_dot({m, m}); });
  check_refusal(message, "multi_dot(): tensors 0 and 1 with shapes [2, 3] and [2, 3] cannot be multiplied", line);
  line = __LINE__ + 1;
  message = error_of([&] { linalg_multi_dot({m, m.t().to(kFloat32)}); });
  check_refusal(message,
                "multi_dot(): all tensors must have be the same dtype but tensor 0 is float64 and tensor 1 is float32",
                line);
  line = __LINE__ + 1;
  message = error_of([&] { chain_matmul({m, v}); });
  check_refusal(message, "chain_matmul(): Tensor dimension is 1, expected 2 instead", line);
}

}  // namespace test_ops_composites_linalg
