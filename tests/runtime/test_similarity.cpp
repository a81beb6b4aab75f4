// normalize and cosine_similarity (runtime/functional_similarity.cpp): float64 loops of
// PyTorch's formulas, broadcasting, the zero vector, gradients by finite differences, autocast and
// the argument errors.
#include <doctest/doctest.h>

#include <cmath>

#include "error_of.h"
#include "numeric_check.h"

namespace test_similarity {

using namespace ember;
using namespace ember::testing;

namespace {

// The p-norm of each row of a row-major [rows, columns] array.
std::vector<double> row_norms(const std::vector<double>& values, int64_t columns, double p) {
  std::vector<double> norms;
  for (size_t start = 0; start < values.size(); start += static_cast<size_t>(columns)) {
    double total = 0.0;
    for (int64_t j = 0; j < columns; ++j) total += std::pow(std::abs(values[start + static_cast<size_t>(j)]), p);
    norms.push_back(std::pow(total, 1.0 / p));
  }
  return norms;
}

}  // namespace

TEST_CASE("normalize divides each vector along dim by its p-norm, and keeps a zero vector 0") {
  const Tensor x = random_tensor({4, 5}, 3);
  const std::vector<double> values = values_of(x);
  for (double p : {2.0, 1.0, 3.0}) {
    CAPTURE(p);
    const std::vector<double> norms = row_norms(values, 5, p);
    std::vector<double> expected(values.size());
    for (size_t i = 0; i < values.size(); ++i) expected[i] = values[i] / norms[i / 5];
    check_close(normalize(x, p, 1), expected, 1e-14);
    check_close(normalize(x, p, -1), expected, 1e-14);
  }
  // dim 0: the columns; the transpose's rows.
  check_close(normalize(x, 2.0, 0), values_of(normalize(x.t().contiguous(), 2.0, 1).t()), 1e-14);
  // A zero vector over eps stays 0 (not NaN); a tiny one is divided by eps.
  const Tensor zero_row = from_vector<double>({0.0, 0.0, 3.0, 4.0}, {2, 2});
  check_close(normalize(zero_row), {0.0, 0.0, 0.6, 0.8}, 1e-14);
  check_close(normalize(from_vector<double>({1e-13, 0.0}, {1, 2})), {0.1, 0.0}, 1e-14);
  CHECK(normalize(from_vector<float>({3.0f, 4.0f}, {1, 2})).dtype() == kFloat32);
}

TEST_CASE("normalize's gradient matches finite differences, zero vectors included") {
  gradcheck([](const std::vector<Tensor>& in) { return normalize(in[0], 2.0, 1); }, {random_tensor({3, 4}, 7)});
  gradcheck([](const std::vector<Tensor>& in) { return normalize(in[0], 1.5, 0); }, {random_tensor({3, 4}, 8)});
  Tensor with_zero = from_vector<double>({0.0, 0.0, 1.0, -2.0}, {2, 2}).requires_grad_();
  sum(mul(normalize(with_zero), from_vector<double>({1.0, 2.0, 3.0, 4.0}, {2, 2}))).backward();
  const std::vector<double> grad = values_of(with_zero.grad());
  CHECK(grad[0] == doctest::Approx(1e12).epsilon(1e-12));  // the zero row is divided by the constant eps
  CHECK(grad[1] == doctest::Approx(2e12).epsilon(1e-12));
  CHECK(std::isfinite(grad[2]));
}

TEST_CASE("cosine_similarity broadcasts, matches a float64 loop and stays within [-1, 1]") {
  const Tensor a = random_tensor({3, 1, 4}, 11);
  const Tensor b = random_tensor({5, 4}, 12);
  const Tensor cosine = cosine_similarity(a, b, -1);
  CHECK(cosine.sizes() == Dims{3, 5});
  const std::vector<double> av = values_of(a), bv = values_of(b);
  std::vector<double> expected;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 5; ++j) {
      double dot = 0.0, aa = 0.0, bb = 0.0;
      for (int k = 0; k < 4; ++k) {
        dot += av[i * 4 + k] * bv[j * 4 + k];
        aa += av[i * 4 + k] * av[i * 4 + k];
        bb += bv[j * 4 + k] * bv[j * 4 + k];
      }
      expected.push_back(dot / (std::sqrt(aa) * std::sqrt(bb)));
    }
  }
  check_close(cosine, expected, 1e-13);
  // The default dim is 1; parallel vectors give 1, opposite ones -1, a zero vector 0.
  const Tensor rows = from_vector<double>({1.0, 2.0, 2.0, 0.0, 0.0, 0.0, 1e150, 1e150, 1e150}, {3, 3});
  const Tensor other = from_vector<double>({2.0, 4.0, 4.0, 1.0, 1.0, 1.0, -1.0, -1.0, -1.0}, {3, 3});
  check_close(cosine_similarity(rows, other), {1.0, 0.0, -1.0}, 1e-14);
  // Integer inputs are taken in the floating result type.
  const Tensor ints = from_vector<int64_t>({1, 0});
  const Tensor floats = from_vector<float>({1.0f, 1.0f});
  const Tensor mixed = cosine_similarity(ints, floats, 0);
  CHECK(mixed.dtype() == kFloat32);
  CHECK(mixed.item() == doctest::Approx(1.0 / std::sqrt(2.0)).epsilon(1e-6));
}

TEST_CASE("cosine_similarity's gradient matches finite differences, and the eps raise carries none") {
  gradcheck([](const std::vector<Tensor>& in) { return cosine_similarity(in[0], in[1], 1); },
            {random_tensor({3, 4}, 21), random_tensor({3, 4}, 22)});
  gradcheck([](const std::vector<Tensor>& in) { return cosine_similarity(in[0], in[1], 0); },
            {random_tensor({4, 1}, 23), random_tensor({4, 3}, 24)});
  // Below eps the length is replaced by eps, but its own gradient passes, as through PyTorch's
  // no_grad clamp_min_: with x1 = (1e-9, 0) and x2 = (1, 0) the value is x1[0] / eps, and
  // d/dx1[0] = 1 / eps - x1[0] (d|x1| / dx1[0]) / eps^2 = 1e8 - 1e7. A clamp that cut the
  // gradient would give 1e8, one that was not there 0.
  Tensor tiny = from_vector<double>({1e-9, 0.0}).requires_grad_();
  const Tensor unit = from_vector<double>({1.0, 0.0});
  cosine_similarity(tiny, unit, 0).backward();
  const std::vector<double> grad = values_of(tiny.grad());
  CHECK(grad[0] == doctest::Approx(9e7).epsilon(1e-9));
  CHECK(grad[1] == 0.0);
}

TEST_CASE("normalize and cosine_similarity lift 16-bit inputs to float32 under autocast") {
  const Tensor a = random_tensor({2, 8}, 31).to(kBFloat16);
  const Tensor b = random_tensor({2, 8}, 32).to(kBFloat16);
  CHECK(cosine_similarity(a, b).dtype() == kBFloat16);
  AutocastGuard autocast(kBFloat16);
  const Tensor lifted = cosine_similarity(a, b);
  CHECK(lifted.dtype() == kFloat32);
  CHECK(values_of(lifted) == values_of(cosine_similarity(a.to(kFloat32), b.to(kFloat32))));
}

TEST_CASE("normalize and cosine_similarity name themselves and the caller's values in errors") {
  CHECK_THROWS_WITH_AS(normalize(from_vector<int64_t>({1, 2}), 2.0, 0),
                       doctest::Contains("normalize: expected a floating tensor, got int64 of shape [2]"), Error);
  CHECK_THROWS_WITH_AS(normalize(from_vector<double>({1.0, 2.0})), doctest::Contains("normalize"), Error);
  CHECK_THROWS_WITH_AS(cosine_similarity(from_vector<int64_t>({1}), from_vector<int32_t>({1}), 0),
                       doctest::Contains("cosine_similarity: expected floating inputs, got int64 and int32"), Error);
  CHECK_THROWS_WITH_AS(cosine_similarity(random_tensor({2, 3}, 1), random_tensor({4, 3}, 2)),
                       doctest::Contains("cosine_similarity"), Error);
}

TEST_CASE("nn::CosineSimilarity and nn::PairwiseDistance call their functions with their options") {
  const Tensor a = random_tensor({3, 5}, 41), b = random_tensor({3, 5}, 42);
  nn::CosineSimilarity cosine({.dim = 0, .eps = 1e-6});
  CHECK(cosine->str() == "CosineSimilarity()");
  CHECK(values_of(cosine(a, b)) == values_of(cosine_similarity(a, b, 0, 1e-6)));
  CHECK(values_of(nn::CosineSimilarity()(a, b)) == values_of(cosine_similarity(a, b)));
  nn::PairwiseDistance distance({.p = 1.0, .keepdim = true});
  CHECK(distance->str() == "PairwiseDistance()");
  CHECK(distance(a, b).sizes() == Dims{3, 1});
  CHECK(values_of(distance(a, b)) == values_of(pairwise_distance(a, b, 1.0, 1e-6, true)));
  CHECK(nn::functional::normalize(a).sizes() == a.sizes());
  // The caller's line, through the two-tensor call.
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { cosine(a, random_tensor({4, 5}, 43)); });
  CHECK(message.find("cosine_similarity") != std::string::npos);
  CHECK(message.find("test_similarity.cpp:" + std::to_string(line)) != std::string::npos);
}

}  // namespace test_similarity
