// scaled_dot_product_attention (runtime/functional_attention.cpp): a float64 loop of
// softmax(q k^T scale + mask) v for every mask kind, causal masks with L != S, fully masked rows,
// batch broadcasting, gradients by finite differences, dropout's draw, autocast and the errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "error_of.h"
#include "numeric_check.h"

namespace test_attention {

using namespace ember;
using namespace ember::testing;

namespace {

constexpr double kMinusInfinity = -std::numeric_limits<double>::infinity();

// Row-major [batches, L, Ev] of softmax(q k^T scale + bias) v over [batches, L or S, E or Ev]
// arrays; bias is [L, S] (shared by the batches) or empty. A row of nothing but -inf is 0.
std::vector<double> attention_reference(const std::vector<double>& q, const std::vector<double>& k,
                                        const std::vector<double>& v, const std::vector<double>& bias, int64_t batches,
                                        int64_t L, int64_t S, int64_t E, int64_t Ev, double scale) {
  std::vector<double> out;
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t i = 0; i < L; ++i) {
      std::vector<double> scores(static_cast<size_t>(S));
      double largest = kMinusInfinity;
      for (int64_t j = 0; j < S; ++j) {
        double dot = 0.0;
        for (int64_t e = 0; e < E; ++e) dot += q[(b * L + i) * E + e] * k[(b * S + j) * E + e];
        scores[j] = dot * scale + (bias.empty() ? 0.0 : bias[i * S + j]);
        largest = std::max(largest, scores[j]);
      }
      double total = 0.0;
      for (double& score : scores) total += (score = largest == kMinusInfinity ? 0.0 : std::exp(score - largest));
      for (int64_t f = 0; f < Ev; ++f) {
        double value = 0.0;
        for (int64_t j = 0; j < S; ++j) value += total == 0.0 ? 0.0 : scores[j] / total * v[(b * S + j) * Ev + f];
        out.push_back(value);
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("scaled_dot_product_attention matches a float64 loop with no mask, bool and float masks, and causal") {
  const int64_t L = 4, S = 6, E = 5, Ev = 3;
  const Tensor q = random_tensor({2, 3, L, E}, 1), k = random_tensor({2, 3, S, E}, 2);
  const Tensor v = random_tensor({2, 3, S, Ev}, 3);
  const std::vector<double> qv = values_of(q), kv = values_of(k), vv = values_of(v);
  const double scale = 1.0 / std::sqrt(5.0);
  check_close(scaled_dot_product_attention(q, k, v), attention_reference(qv, kv, vv, {}, 6, L, S, E, Ev, scale),
              1e-13);
  check_close(scaled_dot_product_attention(q, k, v, {}, 0.0, false, 0.3),
              attention_reference(qv, kv, vv, {}, 6, L, S, E, Ev, 0.3), 1e-13);
  // A bool mask [L, S]: false positions take no part.
  std::vector<double> keep_values(L * S), bias(L * S);
  for (int64_t n = 0; n < L * S; ++n) {
    keep_values[n] = (n % 3 != 1) ? 1.0 : 0.0;
    bias[n] = keep_values[n] != 0.0 ? 0.0 : kMinusInfinity;
  }
  const Tensor keep = ne(from_vector<double>(keep_values, {L, S}), from_vector<double>({0.0}).reshape({}));
  check_close(scaled_dot_product_attention(q, k, v, keep),
              attention_reference(qv, kv, vv, bias, 6, L, S, E, Ev, scale), 1e-13);
  // A float mask is added to the scores.
  const Tensor added = random_tensor({L, S}, 4);
  check_close(scaled_dot_product_attention(q, k, v, added),
              attention_reference(qv, kv, vv, values_of(added), 6, L, S, E, Ev, scale), 1e-13);
  // Causal, top-left aligned: query i sees keys 0..i of the 6.
  std::vector<double> causal(L * S);
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < S; ++j) causal[i * S + j] = j <= i ? 0.0 : kMinusInfinity;
  check_close(scaled_dot_product_attention(q, k, v, {}, 0.0, true),
              attention_reference(qv, kv, vv, causal, 6, L, S, E, Ev, scale), 1e-13);
}

TEST_CASE("scaled_dot_product_attention: a fully masked query row gives 0 with zero, finite gradients") {
  Tensor q = random_tensor({3, 4}, 5).requires_grad_();
  Tensor k = random_tensor({5, 4}, 6).requires_grad_();
  Tensor v = random_tensor({5, 2}, 7).requires_grad_();
  std::vector<double> keep_values(15, 1.0);
  for (int j = 0; j < 5; ++j) keep_values[5 + j] = 0.0;  // row 1 sees nothing
  const Tensor keep = gt(from_vector<double>(keep_values, {3, 5}), from_vector<double>({0.5}).reshape({}));
  const Tensor out = scaled_dot_product_attention(q, k, v, keep);
  const std::vector<double> values = values_of(out);
  CHECK(values[2] == 0.0);
  CHECK(values[3] == 0.0);
  sum(out).backward();
  for (const Tensor* leaf : {&q, &k, &v})
    for (double g : values_of(leaf->grad())) CHECK(std::isfinite(g));
  const std::vector<double> q_grad = values_of(q.grad());
  for (int e = 0; e < 4; ++e) CHECK(q_grad[4 + e] == 0.0);
}

TEST_CASE("scaled_dot_product_attention broadcasts batch dims and matches finite differences") {
  const Tensor q = random_tensor({2, 3, 4, 5}, 8), k = random_tensor({3, 6, 5}, 9), v = random_tensor({3, 6, 2}, 10);
  const Tensor out = scaled_dot_product_attention(q, k, v);
  CHECK(out.sizes() == Dims{2, 3, 4, 2});
  // Batch 1 of the query against the shared key and value.
  check_close(out.select(0, 1), values_of(scaled_dot_product_attention(q.select(0, 1), k, v)), 1e-15);
  gradcheck([](const std::vector<Tensor>& t) { return scaled_dot_product_attention(t[0], t[1], t[2]); },
            {random_tensor({2, 3, 4}, 11), random_tensor({2, 5, 4}, 12), random_tensor({2, 5, 3}, 13)});
  gradcheck([](const std::vector<Tensor>& t) { return scaled_dot_product_attention(t[0], t[1], t[2], t[3]); },
            {random_tensor({3, 4}, 14), random_tensor({5, 4}, 15), random_tensor({5, 2}, 16),
             random_tensor({3, 5}, 17)});
  gradcheck([](const std::vector<Tensor>& t) {
    return scaled_dot_product_attention(t[0], t[1], t[2], {}, 0.0, true, 0.7);
  }, {random_tensor({4, 3}, 18), random_tensor({4, 3}, 19), random_tensor({4, 2}, 20)});
}

TEST_CASE("scaled_dot_product_attention's dropout is dropout of the weights, drawn as ember::dropout draws") {
  const Tensor q = random_tensor({2, 4, 3}, 21), k = random_tensor({2, 5, 3}, 22), v = random_tensor({2, 5, 2}, 23);
  manual_seed(7);
  const Tensor dropped = scaled_dot_product_attention(q, k, v, {}, 0.4);
  manual_seed(7);
  const Tensor weights = softmax(matmul(mul(q, std::sqrt(1.0 / std::sqrt(3.0))),
                                        transpose(mul(k, std::sqrt(1.0 / std::sqrt(3.0))), -2, -1)),
                                 -1);
  const Tensor expected = matmul(dropout(weights, 0.4, true), v);
  CHECK(values_of(dropped) == values_of(expected));
  CHECK(values_of(dropped) != values_of(scaled_dot_product_attention(q, k, v)));
}

TEST_CASE("scaled_dot_product_attention: negative scales, float32 masks, dropout_p 1, -inf rows without a mask") {
  const int64_t L = 3, S = 4, E = 2, Ev = 2;
  const Tensor q = random_tensor({L, E}, 40), k = random_tensor({S, E}, 41), v = random_tensor({S, Ev}, 42);
  // A negative scale flips the scores' sign (PyTorch scales q by -sqrt(|scale|)), not NaN.
  check_close(scaled_dot_product_attention(q, k, v, {}, 0.0, false, -0.5),
              attention_reference(values_of(q), values_of(k), values_of(v), {}, 1, L, S, E, Ev, -0.5), 1e-13);
  // A float32 mask with a float64 query is taken as PyTorch takes it, its values widened.
  const Tensor mask32 = random_tensor({L, S}, 43, kFloat32);
  check_close(scaled_dot_product_attention(q, k, v, mask32),
              values_of(scaled_dot_product_attention(q, k, v, mask32.to(kFloat64))), 1e-15);
  // dropout_p = 1 drops every weight.
  check_close(scaled_dot_product_attention(q, k, v, {}, 1.0), std::vector<double>(L * Ev, 0.0), 0.0);
  // A query row of -inf scores (an infinite query) gives 0 without a mask too, as PyTorch's
  // _safe_softmax.
  const Tensor infinite = from_vector<double>({1.0, 0.5, -kMinusInfinity, -kMinusInfinity, 0.25, 1.0}, {L, E});
  const Tensor positive_keys = from_vector<double>({1.0, 1.0, 2.0, 0.5, 1.0, 3.0, 0.5, 0.5}, {S, E});
  const std::vector<double> row = values_of(scaled_dot_product_attention(mul(infinite, -1.0), positive_keys, v));
  CHECK(row[2] == 0.0);
  CHECK(row[3] == 0.0);
  CHECK(std::isfinite(row[0]));
}

TEST_CASE("scaled_dot_product_attention computes bfloat16 and float16 in float32, rounding once") {
  const Tensor q = random_tensor({2, 5, 8}, 44), k = random_tensor({2, 7, 8}, 45), v = random_tensor({2, 7, 4}, 46);
  for (DType dtype : {kBFloat16, kFloat16}) {
    CAPTURE(dtype_name(dtype));
    const Tensor low = scaled_dot_product_attention(q.to(dtype), k.to(dtype), v.to(dtype));
    CHECK(low.dtype() == dtype);
    // The float32 computation of the rounded operands, rounded once: the same bits.
    const Tensor wide = scaled_dot_product_attention(q.to(dtype).to(kFloat32), k.to(dtype).to(kFloat32),
                                                     v.to(dtype).to(kFloat32));
    CHECK(values_of(low) == values_of(wide.to(dtype)));
  }
}

TEST_CASE("scaled_dot_product_attention under autocast runs its products in bfloat16") {
  const Tensor q = random_tensor({2, 4, 8}, 24, kFloat32), k = random_tensor({2, 6, 8}, 25, kFloat32);
  const Tensor v = random_tensor({2, 6, 8}, 26, kFloat32);
  AutocastGuard autocast(kBFloat16);
  const Tensor out = scaled_dot_product_attention(q, k, v);
  CHECK(out.dtype() == kBFloat16);
  CHECK(out.sizes() == Dims{2, 4, 8});
}

TEST_CASE("scaled_dot_product_attention names itself, the shapes and the caller's line in errors") {
  const Tensor q = random_tensor({2, 4, 8}, 27), k = random_tensor({2, 6, 8}, 28), v = random_tensor({2, 6, 3}, 29);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, random_tensor({2, 6, 7}, 30), v),
                       doctest::Contains("scaled_dot_product_attention: query and key must have the same feature "
                                         "size (last dim), got shapes [2, 4, 8] and [2, 6, 7]"),
                       Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, random_tensor({2, 5, 3}, 31)),
                       doctest::Contains("key and value must have the same length (dim -2)"), Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, v.to(kFloat32)),
                       doctest::Contains("query, key and value must have one dtype, got float64, float64 and float32"),
                       Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, v, {}, 1.5),
                       doctest::Contains("dropout_p must be in [0, 1], got 1.5"), Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, random_tensor({3, 6, 8}, 36), v),
                       doctest::Contains("scaled_dot_product_attention: the batch dims (all but the last two) of "
                                         "query [2, 4, 8], key [3, 6, 8] and value [2, 6, 3] do not broadcast"),
                       Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, v, random_tensor({4, 6}, 32), 0.0, true),
                       doctest::Contains("is_causal and attn_mask cannot both be given"), Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, v, from_vector<int64_t>({0, 1}).reshape({1, 2})),
                       doctest::Contains("attn_mask must be bool (true = attend), float32 or of the query's dtype "
                                         "float64 (added to the scores), got int64"),
                       Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, v, random_tensor({3, 4, 6}, 34)),
                       doctest::Contains("scaled_dot_product_attention"), Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(random_tensor({8}, 35), k, v),
                       doctest::Contains("query must be a floating tensor of at least 2 dims"), Error);
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { scaled_dot_product_attention(q, k, v, {}, -0.5); });
  CHECK(message.find("test_attention.cpp:" + std::to_string(line)) != std::string::npos);
}

TEST_CASE("scaled_dot_product_attention with enable_gqa: each key head serves its group of query heads") {
  // 4 query heads over 2 key/value heads: query heads 0, 1 use key head 0, heads 2, 3 key head 1.
  const Tensor q = random_tensor({2, 4, 3, 5}, 71), k = random_tensor({2, 2, 6, 5}, 72);
  const Tensor v = random_tensor({2, 2, 6, 3}, 73);
  const Tensor mask = random_tensor({3, 6}, 74);
  const Tensor grouped = scaled_dot_product_attention(q, k, v, mask, 0.0, false, std::nullopt, true);
  CHECK(grouped.sizes() == Dims{2, 4, 3, 3});
  for (int64_t head = 0; head < 4; ++head) {
    INFO("query head ", head);
    const Tensor alone = scaled_dot_product_attention(q.select(1, head), k.select(1, head / 2), v.select(1, head / 2),
                                                      mask);
    check_close(grouped.select(1, head), values_of(alone), 1e-15);
  }
  // Equal head counts change nothing.
  check_close(scaled_dot_product_attention(q, q, q, {}, 0.0, true, std::nullopt, true),
              values_of(scaled_dot_product_attention(q, q, q, {}, 0.0, true)), 0.0);
  gradcheck([](const std::vector<Tensor>& t) {
    return scaled_dot_product_attention(t[0], t[1], t[2], {}, 0.0, false, std::nullopt, true);
  }, {random_tensor({1, 4, 2, 3}, 75), random_tensor({1, 2, 3, 3}, 76), random_tensor({1, 2, 3, 2}, 77)});
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, random_tensor({2, 3, 6, 5}, 78), random_tensor({2, 3, 6, 3}, 79),
                                                    {}, 0.0, false, std::nullopt, true),
                       doctest::Contains("the number of heads (dim -3) of key must divide the query's, got 3 and 4"),
                       Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q.select(0, 0).select(0, 0), k.select(0, 0).select(0, 0),
                                                    v.select(0, 0).select(0, 0), {}, 0.0, false, std::nullopt, true),
                       doctest::Contains("enable_gqa needs a heads dim (-3) in query and key"), Error);
  // Without enable_gqa the head counts must broadcast, as before.
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, v), doctest::Contains("do not broadcast"), Error);
}

}  // namespace test_attention
