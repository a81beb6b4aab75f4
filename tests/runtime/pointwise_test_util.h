// Helpers shared by the pointwise test files: random non-zero host data, float64 views of
// tensors, broadcast index arithmetic for references, tolerance checks, and a small float64
// central-difference gradient check.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "runtime/ember.h"

namespace pointwise_test {

using namespace ember;

// `count` values uniform in [low, high], each at least `min_magnitude` away from zero (tests
// never run on zeros) and from `avoid` (kinks such as clamp bounds).
inline std::vector<double> random_values(int64_t count, double low, double high, uint32_t seed,
                                         double min_magnitude = 0.05, double avoid = 0.0) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<double> uniform(low, high);
  std::vector<double> values;
  while (static_cast<int64_t>(values.size()) < count) {
    const double value = uniform(generator);
    if (std::abs(value) >= min_magnitude && std::abs(value - avoid) >= min_magnitude) values.push_back(value);
  }
  return values;
}

inline Tensor tensor_from(const std::vector<double>& values, const Dims& sizes, DType dtype = kFloat64) {
  return from_vector<double>(values, sizes, {.dtype = dtype});
}

inline Tensor random_tensor(const Dims& sizes, DType dtype, double low, double high, uint32_t seed) {
  return tensor_from(random_values(sizes.product(), low, high, seed), sizes, dtype);
}

// The tensor's elements in logical (row-major) order as doubles, whatever its dtype and strides.
inline std::vector<double> values_of(const Tensor& tensor) {
  return tensor.to(kFloat64).to_vector<double>();
}

// Flat index into a tensor of shape `in` read by flat output index `flat` when `in` is broadcast
// to `out` (NumPy rules: trailing dims aligned, size-1 dims repeat).
inline int64_t broadcast_source(int64_t flat, const Dims& out, const Dims& in) {
  int64_t source = 0;
  int64_t in_stride = 1;
  for (int d = out.size() - 1; d >= 0; --d) {
    const int64_t index = flat % out[d];
    flat /= out[d];
    const int in_dim = d - (out.size() - in.size());
    if (in_dim < 0) continue;
    if (in[in_dim] != 1) source += index * in_stride;
    in_stride *= in[in_dim];
  }
  return source;
}

// Relative and absolute tolerance for results stored in `dtype` (computed in fp32 for 16-bit
// floats, so the storage rounding dominates).
struct Tolerance {
  double relative;
  double absolute;
};
inline Tolerance tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::Float64: return {1e-12, 1e-14};
    case DType::Float32: return {1e-5, 1e-6};
    case DType::BFloat16: return {1e-2, 1e-3};
    case DType::Float16: return {2e-3, 1e-4};
    default: return {0.0, 0.0};  // integers and bools: exact
  }
}

// Every element within tolerance (NaN matches NaN, infinities must match exactly).
inline void check_close(const std::vector<double>& actual, const std::vector<double>& expected,
                        Tolerance tolerance, const std::string& what) {
  REQUIRE_MESSAGE(actual.size() == expected.size(), what);
  int reported = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double a = actual[i];
    const double e = expected[i];
    bool ok;
    if (std::isnan(e) || std::isinf(e)) {
      ok = std::isnan(e) ? std::isnan(a) : a == e;
    } else {
      ok = std::abs(a - e) <= tolerance.absolute + tolerance.relative * std::abs(e);
    }
    if (!ok && reported++ < 5) FAIL_CHECK(what << ": element " << i << " is " << a << ", expected " << e);
  }
}

// Central-difference gradient check in float64. `function` maps the inputs to one tensor; the
// check backpropagates a random cotangent `v` and compares each input's gradient with
// d(v . function)/d(input) estimated by (f(x + h) - f(x - h)) / 2h per element.
using TestFunction = std::function<Tensor(const std::vector<Tensor>&)>;
struct GradInput {
  std::vector<double> values;
  Dims sizes;
};

inline double weighted_sum(const Tensor& output, const std::vector<double>& weights) {
  const std::vector<double> values = values_of(output);
  double total = 0.0;
  for (size_t i = 0; i < values.size(); ++i) total += values[i] * weights[i];
  return total;
}

inline void gradcheck(const std::string& what, const TestFunction& function, std::vector<GradInput> inputs,
                      double step = 1e-6, Tolerance tolerance = {1e-6, 1e-8}) {
  std::vector<Tensor> leaves;
  for (const GradInput& input : inputs) leaves.push_back(tensor_from(input.values, input.sizes).requires_grad_());
  const Tensor output = function(leaves);
  REQUIRE_MESSAGE(output.dtype() == kFloat64, what);
  const std::vector<double> weights = random_values(output.numel(), -1.0, 1.0, 1234, 0.1);
  output.backward(tensor_from(weights, output.sizes()));

  NoGradGuard no_grad;
  for (size_t k = 0; k < inputs.size(); ++k) {
    REQUIRE_MESSAGE(leaves[k].grad().defined(), what << ": input " << k << " got no gradient");
    const std::vector<double> analytic = values_of(leaves[k].grad());
    std::vector<double> numeric(inputs[k].values.size());
    for (size_t j = 0; j < numeric.size(); ++j) {
      double& value = inputs[k].values[j];
      const double original = value;
      auto evaluate = [&](double x) {
        value = x;
        std::vector<Tensor> arguments;
        for (const GradInput& input : inputs) arguments.push_back(tensor_from(input.values, input.sizes));
        return weighted_sum(function(arguments), weights);
      };
      numeric[j] = (evaluate(original + step) - evaluate(original - step)) / (2.0 * step);
      value = original;
    }
    check_close(analytic, numeric, tolerance, what + " gradient of input " + std::to_string(k));
  }
}

// Exact comparison that tells -0.0 from 0.0 and takes NaN as equal to NaN.
inline void check_same(const std::vector<double>& actual, const std::vector<double>& expected,
                       const std::string& what) {
  REQUIRE_MESSAGE(actual.size() == expected.size(), what);
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO(what, " element ", i, ": ", actual[i], " expected ", expected[i]);
    if (std::isnan(expected[i])) {
      CHECK(std::isnan(actual[i]));
    } else {
      CHECK(actual[i] == expected[i]);
      CHECK(std::signbit(actual[i]) == std::signbit(expected[i]));
    }
  }
}

}  // namespace pointwise_test
