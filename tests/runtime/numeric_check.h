// Helpers for the reduction, linear algebra and loss tests: random non-zero inputs, values read
// back as doubles in logical order, closeness checks, and a float64 central-difference
// gradient check of autograd.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "runtime/ember.h"
#include "runtime/tensor_values.h"

namespace ember::testing {

// Values in [-2, -0.25] or [0.25, 2]: never zero, never tiny, reproducible from `seed`.
inline std::vector<double> random_values(int64_t count, uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<double> magnitude(0.25, 2.0);
  std::bernoulli_distribution negative(0.5);
  std::vector<double> values(static_cast<size_t>(count));
  for (double& value : values) value = negative(engine) ? -magnitude(engine) : magnitude(engine);
  return values;
}

inline Tensor random_tensor(const Dims& sizes, uint32_t seed, DType dtype = kFloat64) {
  return from_vector<double>(random_values(sizes.product(), seed), sizes, {.dtype = dtype});
}

// Row-major index helpers for references written with plain loops.
inline std::vector<int64_t> unravel(int64_t flat, const Dims& sizes) {
  std::vector<int64_t> index(static_cast<size_t>(sizes.size()));
  for (int d = sizes.size() - 1; d >= 0; --d) {
    index[d] = flat % sizes[d];
    flat /= sizes[d];
  }
  return index;
}

// |actual - expected| <= tolerance * max(1, |expected|) for every element; NaNs must match.
inline void check_close(const std::vector<double>& actual, const std::vector<double>& expected, double tolerance) {
  REQUIRE(actual.size() == expected.size());
  size_t bad = actual.size();
  for (size_t i = 0; i < actual.size() && bad == actual.size(); ++i) {
    const bool both_nan = std::isnan(actual[i]) && std::isnan(expected[i]);
    const bool close = std::abs(actual[i] - expected[i]) <= tolerance * std::max(1.0, std::abs(expected[i]));
    if (!both_nan && !close) bad = i;
  }
  const std::string detail =
      bad == actual.size() ? "" : fmt::format("element {}: got {}, expected {}", bad, actual[bad], expected[bad]);
  CHECK_MESSAGE(bad == actual.size(), detail);
}

inline void check_close(const Tensor& actual, const std::vector<double>& expected, double tolerance) {
  check_close(values_of(actual), expected, tolerance);
}

using Function = std::function<Tensor(const std::vector<Tensor>&)>;

// Compares autograd's gradient of sum(f(inputs) * projection) (a fixed random projection, so
// every output element matters) with central differences, all in float64. `inputs` are float64
// tensors; f may transpose or slice them to exercise strided kernels.
inline void gradcheck(const Function& f, const std::vector<Tensor>& inputs, double step = 1e-6,
                      double tolerance = 1e-6) {
  std::vector<Tensor> leaves;
  for (const Tensor& input : inputs) leaves.push_back(input.detach().clone().requires_grad_());
  const Tensor output = f(leaves);
  const Tensor projection = random_tensor(output.sizes(), 1234);
  mul(output, projection).sum().backward();
  const std::vector<double> weights = values_of(projection);

  auto objective = [&](const std::vector<Tensor>& point) {
    NoGradGuard no_grad;
    const std::vector<double> values = values_of(f(point));
    double total = 0.0;
    for (size_t i = 0; i < values.size(); ++i) total += values[i] * weights[i];
    return total;
  };
  for (size_t which = 0; which < inputs.size(); ++which) {
    INFO("input " << which);
    const std::vector<double> base = values_of(inputs[which]);
    std::vector<double> numeric(base.size());
    for (size_t j = 0; j < base.size(); ++j) {
      std::vector<Tensor> point(inputs.begin(), inputs.end());
      std::vector<double> shifted = base;
      shifted[j] = base[j] + step;
      point[which] = from_vector<double>(shifted, inputs[which].sizes(), {.dtype = kFloat64});
      const double plus = objective(point);
      shifted[j] = base[j] - step;
      point[which] = from_vector<double>(shifted, inputs[which].sizes(), {.dtype = kFloat64});
      numeric[j] = (plus - objective(point)) / (2 * step);
    }
    const Tensor analytic = leaves[which].grad();
    check_close(analytic.defined() ? values_of(analytic) : std::vector<double>(base.size(), 0.0), numeric, tolerance);
  }
}

}  // namespace ember::testing
