// cummax, cummin and logcumsumexp: values and indices against float64 references written here
// (ties take the later index, NaN is carried and each later NaN records its own index), every
// dtype for cummax / cummin, -inf, inf, NaN and large values for logcumsumexp, negative dims, 0-d
// and empty inputs, the errors; gradients against central differences and closed forms (the
// gradient goes to the recorded index; exp(x_k - r_j) summed over j >= k), CPU against CUDA bit
// for bit where a GPU runs.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"
#include "skip_case.h"

namespace test_cummax_logcumsumexp {

using namespace ember;
using ember::testing::doubles;
using ember::testing::error_of;
using ember::testing::gradcheck_leaves;
using ember::testing::leaf;
using ember::testing::names_line;
using ember::testing::values_of;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Values and indices of the running maximum (minimum) of one slice, as PyTorch defines them.
std::pair<std::vector<double>, std::vector<int64_t>> running_extremum(const std::vector<double>& x, bool max) {
  std::vector<double> values;
  std::vector<int64_t> indices;
  for (size_t i = 0; i < x.size(); ++i) {
    const bool replaces = i == 0 || std::isnan(x[i]) ||
                          (!std::isnan(values.back()) && (max ? x[i] >= values.back() : x[i] <= values.back()));
    values.push_back(replaces ? x[i] : values.back());
    indices.push_back(replaces ? static_cast<int64_t>(i) : indices.back());
  }
  return {values, indices};
}

// Same values, NaN equal to NaN.
bool same(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

// log(sum_{i <= j} exp(x_i)) from the largest element so far: an independent float64 reference.
std::vector<double> log_running_sum_exp(const std::vector<double>& x) {
  std::vector<double> out;
  for (size_t j = 0; j < x.size(); ++j) {
    double largest = -kInf;
    for (size_t i = 0; i <= j; ++i) largest = std::max(largest, x[i]);
    if (std::isinf(largest)) {
      out.push_back(largest);
      continue;
    }
    double total = 0.0;
    for (size_t i = 0; i <= j; ++i) total += std::exp(x[i] - largest);
    out.push_back(largest + std::log(total));
  }
  return out;
}

}  // namespace

TEST_CASE("cummax and cummin along a dim, with ties, against a float64 reference, in every dtype") {
  // Whole numbers in [-3, 3]: plenty of ties, exact in every dtype (bool takes x != 0).
  const std::vector<double> values = {1, -2, 1, 3, 3, 0, -1, 2, 2, 2, -3, 0, 0, 1, -1, 3, -2, -2, 0, 1};
  for (DType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16, kInt32, kInt64, kBool}) {
    INFO(dtype);
    const Tensor x = to_dtype(doubles(values).reshape({4, 5}), dtype);
    const std::vector<double> rounded = values_of(to_dtype(x, kFloat64));
    for (bool max : {true, false}) {
      for (int64_t dim : {int64_t{1}, int64_t{-2}}) {
        INFO("max ", max, " dim ", dim);
        const auto [result, indices] = max ? cummax(x, dim) : x.cummin(dim);
        CHECK(result.dtype() == dtype);
        CHECK(indices.dtype() == kInt64);
        CHECK(result.sizes() == Dims{4, 5});
        const std::vector<double> got = values_of(to_dtype(result, kFloat64));
        const std::vector<int64_t> got_indices = indices.to_vector<int64_t>();
        const bool rows = dim == 1;
        for (int64_t line = 0; line < (rows ? 4 : 5); ++line) {
          std::vector<double> slice;
          for (int64_t i = 0; i < (rows ? 5 : 4); ++i) slice.push_back(rounded[rows ? line * 5 + i : i * 5 + line]);
          const auto [expected, expected_indices] = running_extremum(slice, max);
          for (int64_t i = 0; i < static_cast<int64_t>(slice.size()); ++i) {
            const int64_t at = rows ? line * 5 + i : i * 5 + line;
            CHECK(got[at] == expected[i]);
            CHECK(got_indices[at] == expected_indices[i]);
          }
        }
      }
    }
  }
}

TEST_CASE("cummax and cummin carry NaN, each later NaN taking its own index, and a tie takes the later index") {
  const Tensor x = doubles({1.0, kNaN, 3.0, kNaN, 0.0});
  const auto [maximum, max_index] = cummax(x, 0);
  CHECK(same(values_of(maximum), {1.0, kNaN, kNaN, kNaN, kNaN}));
  CHECK(max_index.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 1, 3, 3});
  const auto [minimum, min_index] = cummin(x, 0);
  CHECK(same(values_of(minimum), {1.0, kNaN, kNaN, kNaN, kNaN}));
  CHECK(min_index.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 1, 3, 3});
  const auto [tied, tied_index] = cummax(doubles({2.0, 5.0, 5.0, 1.0, 5.0}), 0);
  CHECK(values_of(tied) == std::vector<double>{2.0, 5.0, 5.0, 5.0, 5.0});
  CHECK(tied_index.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 2, 4});
  // -0.0 ties with 0.0 (>= holds both ways), so the later zero and its sign are taken.
  const auto [zero, zero_index] = cummax(doubles({0.0, -0.0}), 0);
  CHECK(std::signbit(values_of(zero)[1]));
  CHECK(zero_index.to_vector<int64_t>() == std::vector<int64_t>{0, 1});
  const auto [infinite, infinite_index] = cummin(doubles({kInf, 2.0, -kInf, -kInf}), 0);
  CHECK(values_of(infinite) == std::vector<double>{kInf, 2.0, -kInf, -kInf});
  CHECK(infinite_index.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3});
}

TEST_CASE("cummax and cummin of 0-d, empty and strided inputs, and their errors") {
  const auto [value, index] = cummax(scalar_tensor(-1.5), 0);
  CHECK(value.dim() == 0);
  CHECK(value.item() == -1.5);
  CHECK(index.item<int64_t>() == 0);
  CHECK(std::get<1>(cummin(scalar_tensor(4.0), -1)).dim() == 0);
  CHECK(std::get<0>(cummax(zeros({0, 3}), 0)).sizes() == Dims{0, 3});
  CHECK(std::get<1>(cummin(zeros({2, 0}), 1)).sizes() == Dims{2, 0});
  const Tensor x = ember::testing::small_tensor({4, 3}, 71);
  CHECK(values_of(std::get<0>(cummax(x.t(), 1))) == values_of(std::get<0>(cummax(x, 0)).t()));
  CHECK(std::get<1>(cummin(x.t(), 1)).to_vector<int64_t>() ==
        std::get<1>(cummin(x, 0)).t().contiguous().to_vector<int64_t>());
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { (void)cummax(x, 2); });
  CHECK(message.find("cummax: dim 2 is out of range for a tensor of rank 2") != std::string::npos);
  CHECK(names_line(message, line));
  CHECK_THROWS_WITH_AS((void)x.cummin(-3), doctest::Contains("cummin: dim -3 is out of range"), Error);
}

TEST_CASE("cummax's and cummin's gradients go to the recorded index, ties included") {
  gradcheck_leaves([](const std::vector<Tensor>& in) { return std::get<0>(cummax(in[0], 1)); }, {leaf({3, 5}, 72)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return std::get<0>(cummin(in[0], -2)); }, {leaf({3, 5}, 73)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return std::get<0>(cummax(in[0].t(), 0)); }, {leaf({3, 5}, 74)});
  // x = (1, 3, 3, 2, 5): the maxima come from elements 0, 1, 2, 2, 4.
  const Tensor x = doubles({1.0, 3.0, 3.0, 2.0, 5.0}).requires_grad_();
  std::get<0>(cummax(x, 0)).backward(doubles({1.0, 10.0, 100.0, 1000.0, 10000.0}));
  CHECK(values_of(x.grad()) == std::vector<double>{1.0, 10.0, 1100.0, 0.0, 10000.0});
  // The minima of (2, 1, 1, 3) come from elements 0, 1, 2, 2.
  const Tensor y = doubles({2.0, 1.0, 1.0, 3.0}).requires_grad_();
  std::get<0>(cummin(y, 0)).backward(doubles({1.0, 10.0, 100.0, 1000.0}));
  CHECK(values_of(y.grad()) == std::vector<double>{1.0, 10.0, 1100.0, 0.0});
  // The gradient is linear in the incoming gradient: d/dg of <grad_x, v> is v gathered at the indices.
  const Tensor z = doubles({0.5, 2.0, 1.0}).requires_grad_();
  const Tensor g = doubles({1.0, 2.0, 3.0}).requires_grad_();
  const std::vector<Tensor> first = autograd::grad({std::get<0>(cummax(z, 0))}, {z}, {g}, std::nullopt, true);
  const std::vector<Tensor> second = autograd::grad({mul(first[0], doubles({1.0, 10.0, 100.0})).sum()}, {g});
  CHECK(values_of(second[0]) == std::vector<double>{1.0, 10.0, 10.0});
  const Tensor scalar = scalar_tensor(2.0, {.dtype = kFloat64}).requires_grad_();
  mul(std::get<0>(cummin(scalar, 0)), 3.0).backward();
  CHECK(scalar.grad().item() == 3.0);
}

TEST_CASE("logcumsumexp against a float64 reference, large and tiny values side by side, negative dims") {
  const Tensor x64 = mul(ember::testing::small_tensor({3, 6}, 81), 4.0);
  for (DType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16}) {
    INFO(dtype);
    const double tolerance = dtype == kFloat64 ? 1e-14 : dtype == kFloat32 ? 1e-6 : 1e-2;
    const Tensor x = to_dtype(x64, dtype);
    const std::vector<double> rounded = values_of(x);
    const Tensor rows = logcumsumexp(x, -1);
    CHECK(rows.dtype() == dtype);
    for (int64_t r = 0; r < 3; ++r) {
      const std::vector<double> expected =
          log_running_sum_exp(std::vector<double>(rounded.begin() + r * 6, rounded.begin() + r * 6 + 6));
      for (int64_t c = 0; c < 6; ++c)
        CHECK(std::abs(values_of(rows)[r * 6 + c] - expected[c]) <= tolerance * (1.0 + std::abs(expected[c])));
    }
  }
  CHECK(values_of(logcumsumexp(x64.t(), 1)) == values_of(x64.logcumsumexp(0).t()));
  // exp(1000) overflows double; the running log-add-exp does not.
  const std::vector<double> large = values_of(logcumsumexp(doubles({1000.0, 1000.0, 999.0, -1000.0}), 0));
  const std::vector<double> expected = log_running_sum_exp({1000.0, 1000.0, 999.0, -1000.0});
  for (size_t i = 0; i < 4; ++i) CHECK(large[i] == doctest::Approx(expected[i]).epsilon(1e-15));
  CHECK(large[1] == doctest::Approx(1000.0 + std::log(2.0)).epsilon(1e-15));
  // A small term beside a large one is not lost: log(e^0 + e^-30) = log1p(e^-30).
  CHECK(values_of(logcumsumexp(doubles({0.0, -30.0}), 0))[1] == std::log1p(std::exp(-30.0)));
}

TEST_CASE("logcumsumexp: -inf is the identity, equal infinities stay, NaN propagates, 0-d and empty") {
  CHECK(values_of(logcumsumexp(doubles({-kInf, -kInf, 0.0, -kInf}), 0)) ==
        std::vector<double>{-kInf, -kInf, 0.0, 0.0});
  CHECK(values_of(logcumsumexp(doubles({kInf, kInf, 1.0, -kInf}), 0)) ==
        std::vector<double>{kInf, kInf, kInf, kInf});
  CHECK(values_of(logcumsumexp(doubles({1.0, kInf, -kInf}), 0)) == std::vector<double>{1.0, kInf, kInf});
  CHECK(same(values_of(logcumsumexp(doubles({1.0, kNaN, 2.0}), 0)), {1.0, kNaN, kNaN}));
  CHECK(same(values_of(logcumsumexp(doubles({kInf, kNaN}), 0)), {kInf, kNaN}));
  CHECK(logcumsumexp(scalar_tensor(-2.0), 0).item() == -2.0);
  CHECK(logcumsumexp(scalar_tensor(-2.0), -1).dim() == 0);
  CHECK(logcumsumexp(zeros({0, 3}), 1).sizes() == Dims{0, 3});
  CHECK(logcumsumexp(zeros({2, 0}), 1).sizes() == Dims{2, 0});
}

TEST_CASE("logcumsumexp refuses integer and bool inputs and a dim out of range, naming the op and the line") {
  const Tensor ints = from_vector<int64_t>({1, 2, 3});
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { (void)logcumsumexp(ints, 0); });
  CHECK(message.find("logcumsumexp: expected a floating-point input, got int64 (shape [3])") != std::string::npos);
  CHECK(names_line(message, line));
  CHECK_THROWS_WITH_AS((void)to_dtype(ints, kBool).logcumsumexp(0),
                       doctest::Contains("logcumsumexp: expected a floating-point input, got bool"), Error);
  CHECK_THROWS_WITH_AS((void)logcumsumexp(ones({2, 3}), 2),
                       doctest::Contains("logcumsumexp: dim 2 is out of range for a tensor of rank 2"), Error);
}

TEST_CASE("logcumsumexp's gradient matches central differences and the closed form, -inf inputs without NaN") {
  gradcheck_leaves([](const std::vector<Tensor>& in) { return logcumsumexp(in[0], 1); }, {leaf({3, 5}, 82)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return logcumsumexp(in[0], -2); }, {leaf({3, 5}, 83)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return logcumsumexp(mul(in[0].t(), 300.0), 0); },
            {leaf({3, 5}, 84)}, 1e-5);
  // grad_k = sum_{j >= k} g_j exp(x_k - r_j), in float64 here; -inf elements after a finite one
  // get 0, large values do not overflow, and gradients of both signs are summed.
  for (const std::vector<double>& x : {std::vector<double>{1.0, -kInf, 2.0, -kInf, 0.5},
                                       std::vector<double>{800.0, 801.0, -kInf, 799.0, 802.0},
                                       std::vector<double>{0.0, -40.0, 3.0, -2.0, 1.0}}) {
    const std::vector<double> g = {1.0, -2.0, 0.0, 3.0, -0.5};
    const Tensor input = doubles(x).requires_grad_();
    logcumsumexp(input, 0).backward(doubles(g));
    const std::vector<double> actual = values_of(input.grad());
    const std::vector<double> result = log_running_sum_exp(x);
    for (size_t k = 0; k < x.size(); ++k) {
      double expected = 0.0;
      for (size_t j = k; j < x.size(); ++j) expected += g[j] * std::exp(x[k] - result[j]);
      INFO("x_0 ", x[0], ", element ", k);
      CHECK(std::isfinite(actual[k]));
      CHECK(actual[k] == doctest::Approx(expected).epsilon(1e-12).scale(1.0));
    }
  }
  const Tensor scalar = scalar_tensor(0.5, {.dtype = kFloat64}).requires_grad_();
  mul(logcumsumexp(scalar, 0), 4.0).backward();
  CHECK(scalar.grad().item() == 4.0);
}

TEST_CASE("logcumsumexp's second derivative: autograd through its gradient matches central differences") {
  // d/dx of the gradient of sum(w * logcumsumexp(x)) in the direction v, against differences of
  // the gradient itself.
  const std::vector<double> x0 = {0.3, -1.2, 2.0, 0.7};
  const Tensor w = doubles({1.0, -0.5, 2.0, 0.25});
  const Tensor v = doubles({0.5, 1.0, -1.0, 2.0});
  auto gradient_at = [&](const std::vector<double>& at, bool create_graph, Tensor* leaf_out) {
    const Tensor x = doubles(at).requires_grad_();
    if (leaf_out != nullptr) *leaf_out = x;
    return autograd::grad({sum(mul(logcumsumexp(x, 0), w))}, {x}, {}, std::nullopt, create_graph)[0];
  };
  Tensor x;
  const Tensor first = gradient_at(x0, true, &x);
  const std::vector<double> analytic = values_of(autograd::grad({sum(mul(first, v))}, {x})[0]);
  constexpr double kStep = 1e-6;
  for (size_t k = 0; k < x0.size(); ++k) {
    std::vector<double> above = x0, below = x0;
    above[k] += kStep;
    below[k] -= kStep;
    const std::vector<double> up = values_of(gradient_at(above, false, nullptr));
    const std::vector<double> down = values_of(gradient_at(below, false, nullptr));
    const std::vector<double> vv = values_of(v);
    double numeric = 0.0;
    for (size_t i = 0; i < x0.size(); ++i) numeric += vv[i] * (up[i] - down[i]) / (2.0 * kStep);
    CHECK(analytic[k] == doctest::Approx(numeric).epsilon(1e-6));
  }
}

TEST_CASE("cumprod, cummax, cummin and logcumsumexp on CUDA equal the CPU bit for bit") {
  if (!ember::testing::cuda_or_skip()) return;
  const Device cuda{DeviceType::CUDA, 0};
  const Tensor base = ember::testing::small_tensor({37, 129}, 91, kFloat32).to(kCPU);
  const Tensor ties = floor(mul(base, 2.0));
  for (DType dtype : {kFloat32, kFloat64, kBFloat16, kInt32, kBool}) {
    INFO(dtype);
    const Tensor x = to_dtype(is_floating(dtype) ? base : ties, dtype);
    const Tensor on_device = x.to(cuda);
    for (int64_t dim : {int64_t{0}, int64_t{-1}}) {
      INFO("dim ", dim);
      const Tensor product = cumprod(x, dim), device_product = cumprod(on_device, dim).to(kCPU);
      if (is_floating(dtype)) {
        CHECK(values_of(product) == values_of(device_product));
      } else {
        CHECK(product.to_vector<int64_t>() == device_product.to_vector<int64_t>());
      }
      for (bool max : {true, false}) {
        const auto [values, indices] = max ? cummax(x, dim) : cummin(x, dim);
        const auto [device_values, device_indices] = max ? cummax(on_device, dim) : cummin(on_device, dim);
        CHECK(values_of(to_dtype(values, kFloat64)) == values_of(to_dtype(device_values.to(kCPU), kFloat64)));
        CHECK(indices.to_vector<int64_t>() == device_indices.to(kCPU).to_vector<int64_t>());
      }
      if (is_floating(dtype))
        CHECK(values_of(logcumsumexp(x, dim)) == values_of(logcumsumexp(on_device, dim).to(kCPU)));
    }
  }
}

}  // namespace test_cummax_logcumsumexp
