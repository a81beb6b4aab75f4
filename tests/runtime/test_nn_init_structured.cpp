// nn::init's eye_, dirac_ and orthogonal_ against torch.nn.init's rules: values from index
// arithmetic, dirac_'s identity through a convolution, orthogonal_ against a float64 Gram-Schmidt
// of the same normal draws (the unique QR with a positive diagonal), and the refusals.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "runtime/ember.h"

namespace test_nn_init_structured {

using namespace ember;

namespace {

std::vector<double> values_of(const Tensor& tensor) { return tensor.to(kFloat64).contiguous().to_vector<double>(); }

// Q of the QR factorisation of the tall matrix `a` (m x n, m >= n, row-major) with R's diagonal
// positive, by modified Gram-Schmidt in float64: an algorithm of its own, not Householder's.
std::vector<double> gram_schmidt_q(std::vector<double> a, int64_t m, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    for (int64_t j = 0; j < k; ++j) {
      double dot = 0.0;
      for (int64_t i = 0; i < m; ++i) dot += a[i * n + j] * a[i * n + k];
      for (int64_t i = 0; i < m; ++i) a[i * n + k] -= dot * a[i * n + j];
    }
    double norm = 0.0;
    for (int64_t i = 0; i < m; ++i) norm += a[i * n + k] * a[i * n + k];
    for (int64_t i = 0; i < m; ++i) a[i * n + k] /= std::sqrt(norm);
  }
  return a;
}

}  // namespace

TEST_CASE("nn::init::eye_ writes the identity into any 2-D tensor and refuses other ranks") {
  Tensor weight = nn::Linear(5, 3)->weight;  // [3, 5], a leaf that requires grad
  nn::init::eye_(weight);
  CHECK(weight.requires_grad());
  CHECK(weight.is_leaf());
  std::vector<double> expected(15, 0.0);
  for (int i = 0; i < 3; ++i) expected[i * 5 + i] = 1.0;
  CHECK(values_of(weight) == expected);
  Tensor integers = full({4, 2}, 7.0, {.dtype = kInt64});
  nn::init::eye_(integers);
  CHECK(integers.to_vector<int64_t>() == std::vector<int64_t>{1, 0, 0, 1, 0, 0, 0, 0});
  CHECK_THROWS_WITH_AS(nn::init::eye_(zeros({2, 2, 2})),
                       doctest::Contains("nn::init::eye_: only tensors with 2 dimensions are supported, got shape "
                                         "[2, 2, 2]"),
                       Error);
}

TEST_CASE("nn::init::dirac_ puts 1 at each kernel centre and a 'same' convolution passes its input through") {
  Tensor weight = zeros({6, 4, 3, 2});
  nn::init::dirac_(weight, 2);  // 3 output channels per group, 3 = min(3, 4) ones per group
  std::vector<double> expected(6 * 4 * 3 * 2, 0.0);
  for (int g = 0; g < 2; ++g)
    for (int d = 0; d < 3; ++d) expected[(((g * 3 + d) * 4 + d) * 3 + 1) * 2 + 1] = 1.0;  // centre (1, 1)
  CHECK(values_of(weight) == expected);

  const Tensor x = randn({2, 3, 5, 7});
  for (const int64_t spatial : {1, 2, 3}) {
    CAPTURE(spatial);
    Dims shape = {3, 3};
    for (int64_t d = 0; d < spatial; ++d) shape.push_back(3);
    Tensor kernel = empty(shape);
    nn::init::dirac_(kernel);
    if (spatial == 2) CHECK(values_of(conv2d(x, kernel, {}, {.padding = 1})) == values_of(x));
    if (spatial == 1) {
      const Tensor line = reshape(x, {2, 3, 35});
      CHECK(values_of(conv1d(line, kernel, {}, {.padding = 1})) == values_of(line));
    }
    if (spatial == 3) {
      const Tensor cube = reshape(x, {1, 3, 2, 5, 7});
      CHECK(values_of(conv3d(cube, kernel, {}, {.padding = 1})) == values_of(cube));
    }
  }
  CHECK_THROWS_WITH_AS(nn::init::dirac_(zeros({3, 3})),
                       doctest::Contains("nn::init::dirac_: only tensors with 3, 4, or 5 dimensions are supported"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::init::dirac_(zeros({5, 2, 3}), 2),
                       doctest::Contains("nn::init::dirac_: dim 0 (5) must be divisible by groups (2)"), Error);
}

TEST_CASE("nn::init::orthogonal_ is Q of the normal draws' QR with a positive diagonal, tall, wide or conv-shaped") {
  for (const Dims& shape : {Dims{7, 4}, Dims{3, 8}, Dims{4, 3, 2, 2}}) {
    CAPTURE(shape);
    const int64_t rows = shape[0], columns = shape.product() / rows;
    manual_seed(1234);
    const std::vector<double> draws = randn({rows, columns}, {.dtype = kFloat64}).to_vector<double>();
    manual_seed(1234);
    Tensor weight = zeros(shape);
    nn::init::orthogonal_(weight, 2.0);
    // The reference factors the tall orientation, as PyTorch does, and turns back when wide.
    const bool wide = rows < columns;
    const int64_t m = wide ? columns : rows, n = wide ? rows : columns;
    std::vector<double> tall(draws.size());
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < columns; ++j) (wide ? tall[j * n + i] : tall[i * n + j]) = draws[i * columns + j];
    const std::vector<double> q = gram_schmidt_q(tall, m, n);
    const std::vector<double> got = values_of(weight);
    REQUIRE(got.size() == draws.size());
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < columns; ++j) {
        const double expected = 2.0 * (wide ? q[j * n + i] : q[i * n + j]);
        CHECK(got[i * columns + j] == doctest::Approx(expected).epsilon(1e-6));
      }
  }
  Tensor empty_weight = zeros({0, 3});
  CHECK(nn::init::orthogonal_(empty_weight).numel() == 0);  // nothing to fill, as PyTorch's
  CHECK_THROWS_WITH_AS(nn::init::orthogonal_(zeros({4})),
                       doctest::Contains("nn::init::orthogonal_: only tensors with 2 or more dimensions are supported"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::init::orthogonal_(zeros({2, 2}, {.dtype = kInt64})),
                       doctest::Contains("nn::init::orthogonal_: expected a floating-point tensor, got int64"), Error);
}

}  // namespace test_nn_init_structured
