// rot90, block_diag, cartesian_prod, combinations, tril_indices, triu_indices and vander
// (runtime/functional_arrange.h) against float64 references written here as index loops; edge
// cases (negative and large k, empty inputs, r past numel), gradients and errors.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_ops_composites_arrange {

using namespace ember;
using ember::testing::check_refusal;
using ember::testing::error_of;
using ember::testing::gradcheck_leaves;
using ember::testing::leaf;
using ember::testing::small_tensor;
using ember::testing::values_of;

namespace {

// rot90 of a [rows, cols] matrix turned k times (k in 0..3) from dim 0 towards dim 1, by the
// definition: one turn maps element (i, j) of the result to a[j, cols - 1 - i].
std::vector<double> rotated(const std::vector<double>& a, int64_t rows, int64_t cols, int k) {
  std::vector<double> current = a;
  for (int turn = 0; turn < k; ++turn) {
    std::vector<double> next(current.size());
    for (int64_t i = 0; i < cols; ++i)
      for (int64_t j = 0; j < rows; ++j) next[i * rows + j] = current[j * cols + (cols - 1 - i)];
    current = next;
    std::swap(rows, cols);
  }
  return current;
}

std::vector<int64_t> ints_of(const Tensor& t) { return t.to(kInt64).contiguous().to_vector<int64_t>(); }

}  // namespace

TEST_CASE("rot90: every k, negative and past 4, equals turning by the definition") {
  const Tensor a = small_tensor({3, 4}, 1);
  const std::vector<double> values = values_of(a);
  for (int64_t k = -6; k <= 9; ++k) {
    INFO((std::string("k ") + std::to_string(k)));
    const int turns = static_cast<int>(((k % 4) + 4) % 4);
    const Tensor result = rot90(a, k);
    CHECK(result.sizes() == (turns % 2 ? Dims{4, 3} : Dims{3, 4}));
    CHECK(values_of(result) == rotated(values, 3, 4, turns));
  }
  // dims {1, 0} turns the other way; a 3-D input turns each plane of dims (0, 2).
  CHECK(values_of(rot90(a, 1, {1, 0})) == rotated(values, 3, 4, 3));
  const Tensor cube = small_tensor({2, 3, 2}, 2);
  const Tensor turned = rot90(cube, 1, {0, 2});
  CHECK(turned.sizes() == Dims{2, 3, 2});
  for (int64_t j = 0; j < 3; ++j)
    CHECK(values_of(turned.select(1, j)) == rotated(values_of(cube.select(1, j)), 2, 2, 1));
  CHECK(rot90(zeros({0, 3}), 1).sizes() == Dims{3, 0});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return rot90(in[0], 3).exp(); }, {leaf({2, 3}, 3)});
}

TEST_CASE("block_diag: blocks on the diagonal, promoted dtype, empty and 0-d blocks") {
  const Tensor a = small_tensor({2, 3}, 4), b = small_tensor({3}, 5);
  const Tensor c = scalar_tensor(7.0, {.dtype = kFloat64});
  const Tensor empty_rows = zeros({0, 2}, {.dtype = kFloat64});
  const Tensor result = block_diag({a, b, empty_rows, c});
  REQUIRE(result.sizes() == Dims{4, 9});
  std::vector<double> expected(36, 0.0);
  const std::vector<double> av = values_of(a), bv = values_of(b);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) expected[i * 9 + j] = av[i * 3 + j];
  for (int j = 0; j < 3; ++j) expected[2 * 9 + 3 + j] = bv[j];
  expected[3 * 9 + 8] = 7.0;  // after the two empty columns of empty_rows
  CHECK(values_of(result) == expected);
  CHECK(block_diag({ones({1, 1}, {.dtype = kInt32}), ones({1}, {.dtype = kFloat64})}).dtype() == kFloat64);
  const Tensor none = block_diag({});
  CHECK(none.sizes() == Dims{1, 0});
  CHECK(none.dtype() == kFloat32);
  gradcheck_leaves(
      [](const std::vector<Tensor>& in) {
        return block_diag({in[0], in[1]}).exp();
      },
      {leaf({2, 2}, 6), leaf({3}, 7)});
}

TEST_CASE("cartesian_prod and combinations: rows in lexicographic order of positions") {
  const Tensor x = small_tensor({3}, 8), y = small_tensor({2}, 9);
  const std::vector<double> xv = values_of(x), yv = values_of(y);
  std::vector<double> expected;
  for (double u : xv)
    for (double v : yv) expected.insert(expected.end(), {u, v});
  const Tensor product = cartesian_prod({x, y});
  CHECK(product.sizes() == Dims{6, 2});
  CHECK(values_of(product) == expected);
  CHECK(cartesian_prod({x}).sizes() == Dims{3});

  const Tensor v = small_tensor({4}, 10);
  const std::vector<double> vv = values_of(v);
  for (const bool replace : {false, true}) {
    for (int64_t r = 1; r <= 3; ++r) {
      INFO((std::string("r ") + std::to_string(r) + " with_replacement " + std::to_string(replace)));
      // Reference: all r-tuples of positions, kept when ascending (non-decreasing with replacement).
      std::vector<double> reference;
      int64_t rows = 0;
      for (int64_t code = 0; code < static_cast<int64_t>(std::pow(4, r)); ++code) {
        std::vector<int64_t> position(r);
        for (int64_t i = r - 1, rest = code; i >= 0; --i, rest /= 4) position[i] = rest % 4;
        bool keep = true;
        for (int64_t i = 1; i < r; ++i)
          keep = keep && (replace ? position[i - 1] <= position[i] : position[i - 1] < position[i]);
        if (!keep) continue;
        ++rows;
        for (int64_t p : position) reference.push_back(vv[p]);
      }
      const Tensor result = combinations(v, r, replace);
      CHECK(result.sizes() == Dims{rows, r});
      CHECK(values_of(result) == reference);
    }
  }
  CHECK(combinations(v, 0).sizes() == Dims{0});
  CHECK(combinations(v, 5).sizes() == Dims{0, 5});         // r > numel without replacement
  CHECK(combinations(v, 5, true).sizes() == Dims{56, 5});  // C(4 + 5 - 1, 5)
  CHECK(combinations(zeros({0}), 2).sizes() == Dims{0, 2});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return combinations(in[0], 2).exp(); }, {leaf({4}, 11)});
}

TEST_CASE("tril_indices and triu_indices: coordinates of the triangle, every offset") {
  for (int64_t rows : {0, 1, 3, 4})
    for (int64_t cols : {0, 2, 5})
      for (int64_t offset = -5; offset <= 6; ++offset) {
        INFO((std::string("row ") + std::to_string(rows) + " col " + std::to_string(cols) + " offset " +
              std::to_string(offset)));
        std::vector<int64_t> lower_r, lower_c, upper_r, upper_c;
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < cols; ++j) {
            if (j - i <= offset) lower_r.push_back(i), lower_c.push_back(j);
            if (j - i >= offset) upper_r.push_back(i), upper_c.push_back(j);
          }
        lower_r.insert(lower_r.end(), lower_c.begin(), lower_c.end());
        upper_r.insert(upper_r.end(), upper_c.begin(), upper_c.end());
        const Tensor lower = tril_indices(rows, cols, offset), upper = triu_indices(rows, cols, offset);
        CHECK(lower.dtype() == kInt64);
        CHECK(lower.sizes() == Dims{2, static_cast<int64_t>(lower_c.size())});
        CHECK(ints_of(lower) == lower_r);
        CHECK(upper.sizes() == Dims{2, static_cast<int64_t>(upper_c.size())});
        CHECK(ints_of(upper) == upper_r);
      }
  CHECK(tril_indices(3, 3, 0, {.dtype = kInt32}).dtype() == kInt32);
}

TEST_CASE("vander: powers by columns, dtypes, N and increasing") {
  const Tensor x = small_tensor({4}, 12);
  const std::vector<double> xv = values_of(x);
  for (int64_t n : {0, 1, 3, 4, 6})
    for (const bool increasing : {false, true}) {
      INFO((std::string("N ") + std::to_string(n) + " increasing " + std::to_string(increasing)));
      std::vector<double> expected;
      for (double value : xv)
        for (int64_t j = 0; j < n; ++j) expected.push_back(std::pow(value, increasing ? j : n - 1 - j));
      const Tensor result = vander(x, n, increasing);
      CHECK(result.sizes() == Dims{4, n});
      const std::vector<double> got = values_of(result);
      REQUIRE(got.size() == expected.size());
      for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(expected[i]).epsilon(1e-14));
    }
  CHECK(vander(x).sizes() == Dims{4, 4});
  const Tensor ints = from_vector<int32_t>({2, -3}, {2});
  CHECK(vander(ints).dtype() == kInt64);
  CHECK(ints_of(vander(ints, 3)) == std::vector<int64_t>{4, 2, 1, 9, -3, 1});
  CHECK(vander(from_vector<bool>({true, false}, {2})).dtype() == kInt64);
  CHECK(vander(zeros({0})).sizes() == Dims{0, 0});
  // cumprod's gradient is exact at a zero sample.
  gradcheck_leaves([](const std::vector<Tensor>& in) { return vander(in[0], 4); },
            {from_vector<double>({0.0, 0.5, -1.5}, {3}, {.dtype = kFloat64}).requires_grad_()});
}

TEST_CASE("arrange composites: errors name the function, the values and the caller's line") {
  const Tensor m = small_tensor({2, 3}, 13), v = small_tensor({3}, 14);
  int line = __LINE__ + 1;
  std::string message = error_of([&] { rot90(v); });
  check_refusal(message, "rot90: expected total dims >= 2, but got total dims = 1", line);
  line = __LINE__ + 1;
  message = error_of([&] { rot90(m, 1, {0}); });
  check_refusal(message, "rot90: expected total rotation dims == 2, but got dims = 1", line);
  line = __LINE__ + 1;
  message = error_of([&] { rot90(m, 1, {1, -1}); });
  check_refusal(message, "rot90: expected rotation dims to be different", line);
  line = __LINE__ + 1;
  message = error_of([&] { block_diag({m, zeros({1, 1, 1})}); });
  check_refusal(message, "block_diag: Input tensors must have 2 or fewer dimensions. Input 1 has 3 dimensions", line);
  line = __LINE__ + 1;
  message = error_of([&] { cartesian_prod({v, m}); });
  check_refusal(message, "cartesian_prod: Expect a 1D vector, but got shape [2, 3] (input 1)", line);
  line = __LINE__ + 1;
  message = error_of([&] { combinations(v, -1); });
  check_refusal(message, "combinations: Expect a non-negative number, but got -1", line);
  line = __LINE__ + 1;
  message = error_of([&] { combinations(m); });
  check_refusal(message, "combinations: Expect a 1D vector, but got shape [2, 3]", line);
  line = __LINE__ + 1;
  message = error_of([&] { tril_indices(-1, 3); });
  check_refusal(message, "tril_indices: row must be non-negative, got -1", line);
  line = __LINE__ + 1;
  message = error_of([&] { triu_indices(2, -4); });
  check_refusal(message, "triu_indices: col must be non-negative, got -4", line);
  line = __LINE__ + 1;
  message = error_of([&] { vander(m); });
  check_refusal(message, "vander: x must be a one-dimensional tensor, got shape [2, 3]", line);
  line = __LINE__ + 1;
  message = error_of([&] { vander(v, -2); });
  check_refusal(message, "vander: N must be non-negative, got -2", line);
}

}  // namespace test_ops_composites_arrange
