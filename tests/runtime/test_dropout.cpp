// dropout: the mask is a pure function of (seed, offset, element), independent of the thread
// count; kept values are scaled by 1 / (1 - p); gradients; generator reproducibility; errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "finite_difference.h"
#include "kernels/philox.h"
#include "runtime/ember.h"

namespace test_dropout {

using namespace ember;
using ember::testing::dtype_options;
using ember::testing::gradcheck_leaves;
using ember::testing::leaf;
using ember::testing::small_tensor;
using ember::testing::values_of;

namespace {

// y and mask of the op at an explicit stream position.
TensorList dropout_op(const Tensor& input, double p, int64_t seed, int64_t offset) {
  const std::array<Tensor, 1> inputs{input};
  const Attrs attrs{{"p", p}, {"seed", seed}, {"offset", offset}};
  return dispatch(OpCall{lookup_op("dropout"), inputs, attrs});
}

// The documented rule, element by element: keep iff uniform(word i) >= p.
std::vector<bool> expected_mask(int64_t count, double p, uint64_t seed, uint64_t offset) {
  std::vector<bool> mask;
  for (int64_t i = 0; i < count; ++i)
    mask.push_back(static_cast<double>(uniform_from_word(philox_word(seed, offset, static_cast<uint64_t>(i)))) >= p);
  return mask;
}

}  // namespace

TEST_CASE("dropout keeps element i iff uniform(philox word i) >= p and scales kept values") {
  const Tensor x = small_tensor({37, 11}, 1);
  for (int64_t offset : {0, 3, 1000001}) {
    CAPTURE(offset);
    TensorList outputs = dropout_op(x, 0.4, 77, offset);
    CHECK(outputs[1].dtype() == kBool);
    const std::vector<bool> mask = outputs[1].to_vector<bool>();
    CHECK(mask == expected_mask(x.numel(), 0.4, 77, static_cast<uint64_t>(offset)));
    const std::vector<double> xs = values_of(x);
    const std::vector<double> ys = values_of(outputs[0]);
    for (size_t i = 0; i < xs.size(); ++i) CHECK(ys[i] == doctest::Approx(mask[i] ? xs[i] / 0.6 : 0.0).epsilon(1e-15));
  }
}

TEST_CASE("dropout mask does not depend on the thread count and keeps about 1 - p") {
  const Tensor x = small_tensor({300, 400}, 2, kFloat32);  // above the parallel grain
  const int threads = get_num_threads();
  set_num_threads(1);
  manual_seed(123);
  const Tensor one = dropout(x, 0.3, true);
  set_num_threads(2);
  manual_seed(123);
  const Tensor two = dropout(x, 0.3, true);
  set_num_threads(threads);
  const std::vector<float> a = one.to_vector<float>();
  CHECK(a == two.to_vector<float>());
  int64_t kept = 0;
  for (float value : a) kept += value != 0.0f;
  CHECK(static_cast<double>(kept) / static_cast<double>(a.size()) == doctest::Approx(0.7).epsilon(0.02));
  // The same mask straight from the rule, with both thread counts.
  for (int count : {1, 2}) {
    set_num_threads(count);
    CHECK(dropout_op(x, 0.3, 9, 5)[1].to_vector<bool>() == expected_mask(x.numel(), 0.3, 9, 5));
  }
  set_num_threads(threads);
}

TEST_CASE("dropout draws from the default generator: manual_seed reproduces, later calls differ") {
  const Tensor x = small_tensor({64}, 3);
  manual_seed(5);
  const std::vector<double> first = values_of(dropout(x, 0.5, true));
  const std::vector<double> second = values_of(dropout(x, 0.5, true));
  manual_seed(5);
  CHECK(values_of(dropout(x, 0.5, true)) == first);
  CHECK(values_of(dropout(x, 0.5, true)) == second);
  CHECK(first != second);
}

TEST_CASE("dropout edge cases: eval, p = 0, p = 1, strided, 16-bit and empty inputs") {
  const Tensor x = small_tensor({4, 6}, 4);
  CHECK(dropout(x, 0.5, false).is_same(x));
  CHECK(dropout(x, 0.0, true).is_same(x));

  Tensor leaf_x = small_tensor({4, 6}, 5).requires_grad_();
  const Tensor dropped = dropout(leaf_x, 1.0, true);
  CHECK(values_of(dropped) == std::vector<double>(24, 0.0));
  dropped.backward(small_tensor({4, 6}, 6));
  CHECK(values_of(leaf_x.grad()) == std::vector<double>(24, 0.0));  // zero, not 0 * inf

  // A strided input: element i is the i-th in row-major order of the logical shape.
  const Tensor strided = x.transpose(0, 1);
  TensorList outputs = dropout_op(strided, 0.5, 11, 0);
  const std::vector<bool> mask = expected_mask(24, 0.5, 11, 0);
  CHECK(outputs[1].to_vector<bool>() == mask);
  const std::vector<double> xs = values_of(strided);
  const std::vector<double> ys = values_of(outputs[0]);
  for (size_t i = 0; i < xs.size(); ++i) CHECK(ys[i] == doctest::Approx(mask[i] ? 2.0 * xs[i] : 0.0));

  const Tensor half = small_tensor({8}, 7, kBFloat16);
  TensorList half_outputs = dropout_op(half, 0.25, 3, 0);
  CHECK(half_outputs[0].dtype() == kBFloat16);
  const std::vector<bool> half_mask = half_outputs[1].to_vector<bool>();
  const std::vector<double> half_in = values_of(half);
  const std::vector<double> half_out = values_of(half_outputs[0]);
  for (size_t i = 0; i < half_in.size(); ++i)
    CHECK(half_out[i] == doctest::Approx(half_mask[i] ? half_in[i] / 0.75 : 0.0).epsilon(1e-2));

  CHECK(dropout_op(small_tensor({0, 3}, 8), 0.5, 1, 0)[0].sizes() == Dims{0, 3});
}

TEST_CASE("dropout gradient is grad * mask / (1 - p)") {
  // A fixed stream position makes every evaluation use one mask, as finite differences need.
  gradcheck_leaves([](const std::vector<Tensor>& in) { return dropout_op(in[0], 0.35, 21, 8)[0]; }, {leaf({5, 7}, 9)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return dropout_op(in[0].transpose(0, 1), 0.5, 22, 0)[0]; },
            {leaf({3, 4}, 10)});

  Tensor x = small_tensor({50}, 11).requires_grad_();
  TensorList outputs = dropout_op(x, 0.2, 4, 0);
  const Tensor grad = small_tensor({50}, 12);
  outputs[0].backward(grad);
  const std::vector<bool> mask = outputs[1].to_vector<bool>();
  const std::vector<double> g = values_of(grad);
  const std::vector<double> dx = values_of(x.grad());
  for (size_t i = 0; i < g.size(); ++i) CHECK(dx[i] == doctest::Approx(mask[i] ? g[i] / 0.8 : 0.0).epsilon(1e-15));
}

TEST_CASE("dropout errors name the op and the values") {
  const Tensor x = small_tensor({3}, 13);
  CHECK_THROWS_WITH_AS(dropout(x, 1.5, true), doctest::Contains("dropout: probability must be in [0, 1], got 1.5"), Error);
  CHECK_THROWS_WITH_AS(dropout_op(x, -0.1, 1, 0), doctest::Contains("dropout: probability must be in [0, 1], got -0.1"), Error);
  CHECK_THROWS_WITH_AS(dropout(from_vector<int64_t>({1, 2}, {2}, dtype_options(kInt64)), 0.5, true),
                       doctest::Contains("dropout: expected a floating-point input, got int64 (shape [2])"), Error);
}

TEST_CASE("dropout computes input * mask * scale as PyTorch does: a dropped NaN or inf is NaN, not 0") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> values{nan, inf, -inf, nan, 2.0, -3.0, nan, inf, 1.5, -0.5, nan, -inf};
  for (DType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16}) {
    CAPTURE(dtype_name(dtype));
    const Tensor x = from_vector<double>(values, {12}).to(dtype);
    const TensorList outputs = dropout_op(x, 0.5, 31, 0);
    const std::vector<bool> mask = expected_mask(12, 0.5, 31, 0);
    REQUIRE(outputs[1].to_vector<bool>() == mask);
    REQUIRE(std::count(mask.begin(), mask.end(), false) > 0);
    const std::vector<double> y = values_of(outputs[0]);
    for (size_t i = 0; i < values.size(); ++i) {
      CAPTURE(i);
      // x * 0 for a dropped element: NaN for NaN and inf, a signed zero otherwise.
      const double expected = values[i] * (mask[i] ? 2.0 : 0.0);
      if (std::isnan(expected)) {
        CHECK(std::isnan(y[i]));
      } else {
        CHECK(y[i] == expected);
        CHECK(std::signbit(y[i]) == std::signbit(expected));
      }
    }
    // p = 1 keeps nothing: PyTorch's input * 0.
    const std::vector<double> all = values_of(dropout_op(x, 1.0, 31, 0)[0]);
    for (size_t i = 0; i < values.size(); ++i) {
      CAPTURE(i);
      CHECK(std::isnan(all[i]) == !std::isfinite(values[i]));
      if (std::isfinite(values[i])) CHECK(all[i] == 0.0);
    }
  }
  // The module and the functional call go through the same kernel.
  manual_seed(0);
  const Tensor nans = full({64}, nan);
  const std::vector<double> through_module = values_of(nn::Dropout(0.5)(nans));
  CHECK(std::all_of(through_module.begin(), through_module.end(), [](double v) { return std::isnan(v); }));
}

}  // namespace test_dropout
