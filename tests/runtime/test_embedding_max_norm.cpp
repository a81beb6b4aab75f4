// Embedding's max_norm: the rows a lookup reads are renormed in place, under no-grad, before the
// lookup, by PyTorch's scale max_norm / (norm + 1e-7) computed in double; other rows, the
// gradient and padding_idx are left as they were. References are written out in float64.
#include <doctest/doctest.h>

#include <cmath>

#include "runtime/ember.h"

namespace test_embedding_max_norm {

using namespace ember;
namespace F = ember::nn::functional;

namespace {

// Rows of norm 5 (2-norm) / 7 (1-norm), 0.5, 10 and 10.
Tensor table(DType dtype) {
  return from_vector<double>({3, -4, 0.3, 0.4, 6, 8, -6, 8}, {4, 2}).to(dtype);
}

double scale(double norm, double max_norm) { return max_norm / (norm + 1e-7); }

}  // namespace

TEST_CASE("embedding_renorm_ scales the rows looked up whose norm exceeds max_norm, as torch's") {
  Tensor weight = table(kFloat64);
  // Row 0 is looked up twice and scaled once; row 3 exceeds max_norm but is not looked up.
  F::embedding_renorm_(weight, from_vector<int64_t>({0, 2, 0, 1}, {2, 2}), 2.0);
  const double row0 = scale(5.0, 2.0);
  const double row2 = scale(10.0, 2.0);
  CHECK(weight.to_vector<double>() == std::vector<double>{3 * row0, -4 * row0, 0.3, 0.4, 6 * row2, 8 * row2, -6, 8});
  // The result is just below max_norm, so a second renorm changes nothing.
  const std::vector<double> once = weight.to_vector<double>();
  F::embedding_renorm_(weight, from_vector<int64_t>({0, 2}), 2.0);
  CHECK(weight.to_vector<double>() == once);

  // The 1-norm; int32 indices.
  Tensor l1 = table(kFloat64);
  F::embedding_renorm_(l1, from_vector<int32_t>({0}), 2.0, 1.0);
  CHECK(l1.to_vector<double>()[1] == -4 * scale(7.0, 2.0));
  CHECK(l1.to_vector<double>()[4] == 6.0);

  // float32: the scale is computed in double from the float norm, then multiplied in float.
  Tensor single = table(kFloat32);
  F::embedding_renorm_(single, from_vector<int64_t>({2}), 2.0);
  CHECK(single.to_vector<float>()[4] == 6.0f * static_cast<float>(scale(10.0, 2.0)));
  CHECK(single.to_vector<float>()[0] == 3.0f);
}

TEST_CASE("F::embedding with max_norm renorms, then looks up, and the gradient is the plain lookup's") {
  Tensor weight = table(kFloat64).requires_grad_();
  const Tensor indices = from_vector<int64_t>({0, 2, 0});
  const Tensor rows = F::embedding(weight, indices, {.max_norm = 2.0});
  const double row0 = scale(5.0, 2.0);
  CHECK(rows.to_vector<double>() ==
        std::vector<double>{3 * row0, -4 * row0, 6 * scale(10.0, 2.0), 8 * scale(10.0, 2.0), 3 * row0, -4 * row0});
  CHECK(weight.is_leaf());
  rows.mul(from_vector<double>({1, 2, 3, 4, 5, 6}, {3, 2})).sum().backward();
  // The renorm is not part of the graph: each row's gradient sums the lookups' upstream gradients.
  CHECK(weight.grad().to_vector<double>() == std::vector<double>{6, 8, 0, 0, 3, 4, 0, 0});
  // Without max_norm nothing is written.
  Tensor untouched = table(kFloat64);
  F::embedding(untouched, indices, {.padding_idx = 1});
  CHECK(untouched.to_vector<double>() == table(kFloat64).to_vector<double>());
}

TEST_CASE("nn::Embedding with max_norm renorms its rows in forward, keeps padding_idx, prints as torch") {
  nn::Embedding embedding(4, 2, {.dtype = kFloat64, .padding_idx = 1, .max_norm = 1.0});
  {
    NoGradGuard no_grad;
    embedding->weight.copy_(table(kFloat64));
  }
  const Tensor out = embedding(from_vector<int64_t>({1, 3}));
  CHECK(out.to_vector<double>() == std::vector<double>{0.3, 0.4, -6 * scale(10.0, 1.0), 8 * scale(10.0, 1.0)});
  CHECK(embedding->weight.to_vector<double>()[0] == 3.0);  // row 0 was not looked up
  out.sum().backward();
  CHECK(embedding->weight.grad().to_vector<double>() == std::vector<double>{0, 0, 0, 0, 0, 0, 1, 1});
  CHECK(embedding->max_norm() == 1.0);
  CHECK(embedding->norm_type() == 2.0);
  // torch: repr(nn.Embedding(10, 3, padding_idx=0, max_norm=1.0)), and with max_norm=2.5, norm_type=1.0.
  CHECK(embedding->str() == "Embedding(4, 2, padding_idx=1, max_norm=1.0)");
  CHECK(nn::Embedding(10, 3, {.max_norm = 2.5, .norm_type = 1.0})->str() ==
        "Embedding(10, 3, max_norm=2.5, norm_type=1.0)");
  CHECK(nn::Embedding(10, 3, {.norm_type = 3.0})->str() == "Embedding(10, 3, norm_type=3.0)");
}

TEST_CASE("a bad index with max_norm is embedding's error, before any row is renormed") {
  Tensor weight = table(kFloat64);
  CHECK_THROWS_WITH_AS(F::embedding_renorm_(weight, from_vector<int64_t>({0, 4}), 1.0),
                       doctest::Contains("embedding: index 4 is out of range for a weight with 4 rows"), Error);
  CHECK_THROWS_WITH_AS(F::embedding(weight, from_vector<int64_t>({-1}), {.max_norm = 1.0}),
                       doctest::Contains("embedding: index -1 is out of range"), Error);
  CHECK_THROWS_WITH_AS(F::embedding_renorm_(weight, from_vector<float>({0.0f}), 1.0),
                       doctest::Contains("embedding: indices must be int64 or int32"), Error);
  Tensor flat = ones({4});
  CHECK_THROWS_WITH_AS(F::embedding_renorm_(flat, from_vector<int64_t>({0}), 1.0),
                       doctest::Contains("embedding_renorm_: weight must be 2-D"), Error);
  CHECK(weight.to_vector<double>() == table(kFloat64).to_vector<double>());
  nn::Embedding embedding(4, 2, {.max_norm = 1.0});
  const std::vector<float> before = embedding->weight.to_vector<float>();
  CHECK_THROWS_WITH_AS(embedding(from_vector<int64_t>({2, 9})), doctest::Contains("index 9 is out of range"), Error);
  CHECK(embedding->weight.to_vector<float>() == before);
}

}  // namespace test_embedding_max_norm
