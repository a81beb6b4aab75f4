// Test helpers for the norm, indexing and dropout suites: non-zero random inputs and a float64
// central-difference gradient check of any function of tensors.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "runtime/ember.h"
#include "runtime/tensor_values.h"

namespace ember::testing {
// Names of their own: numeric_check.h's random_values, random_tensor and gradcheck take the same
// arguments and draw other values (magnitudes 0.25 to 2) or perturb copies, and both headers
// can meet in one batch of test files.

// Deterministic values in [-1, -0.1] u [0.1, 1]: never zero, so no check passes by accident.
inline std::vector<double> small_values(int64_t count, uint32_t seed) {
  std::vector<double> values(static_cast<size_t>(count));
  uint64_t state = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (double& value : values) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const double unit = static_cast<double>(state >> 11) / 9007199254740992.0;  // [0, 1)
    value = (unit < 0.5 ? -1.0 : 1.0) * (0.1 + 0.9 * std::fmod(unit * 2.0, 1.0));
  }
  return values;
}

// Options with only a dtype (designated initializers would leave the device unnamed).
inline TensorOptions dtype_options(DType dtype) {
  TensorOptions options;
  options.dtype = dtype;
  return options;
}

// A float64 tensor of literal values with `sizes`, or a vector of them.
inline Tensor doubles(const std::vector<double>& values, const Dims& sizes) {
  return from_vector<double>(values, sizes, dtype_options(kFloat64));
}
inline Tensor doubles(const std::vector<double>& values) {
  return doubles(values, Dims{static_cast<int64_t>(values.size())});
}

inline Tensor small_tensor(const Dims& sizes, uint32_t seed, DType dtype = kFloat64) {
  return from_vector<double>(small_values(sizes.product(), seed), sizes, dtype_options(dtype));
}

// Checks the gradient of L = sum(function(inputs) * weights), with fixed random weights, against
// central differences for every input that requires grad. Inputs must be contiguous float64 leaves;
// `function` may build views (transposes, slices) of them to exercise strided kernels.
inline void gradcheck_leaves(const std::function<Tensor(const std::vector<Tensor>&)>& function,
                      const std::vector<Tensor>& inputs, double tolerance = 1e-6) {
  const Tensor out = function(inputs);
  const Tensor weights = small_tensor(out.sizes(), 1234);
  const std::vector<double> weight_values = values_of(weights);
  if (out.numel() > 0) out.backward(weights);
  auto objective = [&] {
    NoGradGuard no_grad;
    const std::vector<double> values = values_of(function(inputs));
    double total = 0.0;
    for (size_t i = 0; i < values.size(); ++i) total += values[i] * weight_values[i];
    return total;
  };
  constexpr double kStep = 1e-6;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& input = inputs[k];
    if (!input.requires_grad()) continue;
    REQUIRE(input.dtype() == kFloat64);
    REQUIRE(input.is_contiguous());
    const std::vector<double> analytic =
        input.grad().defined() ? values_of(input.grad()) : std::vector<double>(input.numel(), 0.0);
    REQUIRE(static_cast<int64_t>(analytic.size()) == input.numel());
    double* data = input.data_ptr<double>();
    for (int64_t i = 0; i < input.numel(); ++i) {
      const double saved = data[i];
      data[i] = saved + kStep;
      const double above = objective();
      data[i] = saved - kStep;
      const double below = objective();
      data[i] = saved;
      const double numeric = (above - below) / (2.0 * kStep);
      INFO("input ", k, " element ", i, ": analytic ", analytic[i], ", numeric ", numeric);
      CHECK(std::abs(analytic[i] - numeric) <= tolerance * (1.0 + std::abs(numeric)));
    }
  }
}

// Leaf copies of random float64 tensors that require grad.
inline Tensor leaf(const Dims& sizes, uint32_t seed) { return small_tensor(sizes, seed).requires_grad_(); }

// A 1-d float64 leaf that requires grad, holding `values`: for checks against closed forms.
inline Tensor leaf_of(const std::vector<double>& values) {
  return from_vector<double>(values, {static_cast<int64_t>(values.size())}, {.dtype = kFloat64}).requires_grad_();
}

}  // namespace ember::testing
