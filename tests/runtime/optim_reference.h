// Float64 reference loops of PyTorch's RMSprop and Adagrad updates (torch/optim/rmsprop.py and
// adagrad.py, _single_tensor_*), written element by element from the formulas, and a fixed
// problem (two parameters, gradients that change every step) to run them and ember side by side.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "runtime/ember.h"

namespace ember::optim_reference {

inline std::vector<double> values_of(const Tensor& tensor) { return tensor.to(kFloat64).to_vector<double>(); }

inline void check_close(const Tensor& actual, const std::vector<double>& expected, double tolerance) {
  const std::vector<double> values = values_of(actual);
  REQUIRE(values.size() == expected.size());
  for (size_t i = 0; i < values.size(); ++i) {
    INFO("element ", i);
    CHECK(values[i] == doctest::Approx(expected[i]).epsilon(tolerance));
  }
}

// Two parameters (w [2, 3], b [4]) whose gradients change sign and size from step to step and
// never vanish, so every state buffer evolves.
struct Problem {
  std::vector<std::vector<double>> initial{{0.5, -1.25, 2.0, 0.75, -0.3, 1.1}, {0.2, -0.4, 0.9, -1.6}};
  std::vector<Dims> shapes{{2, 3}, {4}};

  std::vector<Tensor> make_params(DType dtype) const {
    std::vector<Tensor> params;
    for (size_t p = 0; p < initial.size(); ++p)
      params.push_back(from_vector<double>(initial[p], shapes[p], {.dtype = dtype}).requires_grad_());
    return params;
  }
  static std::vector<double> grad(size_t param, size_t numel, int step) {
    std::vector<double> values(numel);
    for (size_t i = 0; i < numel; ++i)
      values[i] = std::sin(0.7 * static_cast<double>(i) + 1.3 * step + 0.5 * static_cast<double>(param)) + 0.2;
    return values;
  }
  // Sets step `step`'s gradients on `params` (in their dtype).
  void set_grads(const std::vector<Tensor>& params, int step) const {
    for (size_t p = 0; p < params.size(); ++p)
      Tensor(params[p]).set_grad(
          from_vector<double>(grad(p, initial[p].size(), step), shapes[p], {.dtype = params[p].dtype()}));
  }
};

struct RmspropReference {
  std::vector<double> param, square_avg, momentum_buffer, grad_avg;

  explicit RmspropReference(std::vector<double> initial)
      : param(std::move(initial)),
        square_avg(param.size(), 0.0),
        momentum_buffer(param.size(), 0.0),
        grad_avg(param.size(), 0.0) {}

  void step(const std::vector<double>& gradient, const optim::RMSpropOptions& options) {
    for (size_t i = 0; i < param.size(); ++i) {
      double grad = gradient[i];
      if (options.weight_decay != 0.0) grad += options.weight_decay * param[i];
      square_avg[i] = options.alpha * square_avg[i] + (1.0 - options.alpha) * grad * grad;
      double avg = 0.0;
      if (options.centered) {
        grad_avg[i] = options.alpha * grad_avg[i] + (1.0 - options.alpha) * grad;
        avg = std::sqrt(square_avg[i] - grad_avg[i] * grad_avg[i]) + options.eps;
      } else {
        avg = std::sqrt(square_avg[i]) + options.eps;  // eps after the square root, as PyTorch
      }
      if (options.momentum > 0.0) {
        momentum_buffer[i] = options.momentum * momentum_buffer[i] + grad / avg;
        param[i] -= options.lr * momentum_buffer[i];
      } else {
        param[i] -= options.lr * grad / avg;
      }
    }
  }
};

struct AdagradReference {
  std::vector<double> param, sum;
  int64_t steps = 0;

  AdagradReference(std::vector<double> initial, double initial_accumulator_value)
      : param(std::move(initial)), sum(param.size(), initial_accumulator_value) {}

  void step(const std::vector<double>& gradient, const optim::AdagradOptions& options) {
    ++steps;
    const double clr = options.lr / (1.0 + static_cast<double>(steps - 1) * options.lr_decay);
    for (size_t i = 0; i < param.size(); ++i) {
      double grad = gradient[i];
      if (options.weight_decay != 0.0) grad += options.weight_decay * param[i];
      sum[i] += grad * grad;
      param[i] -= clr * grad / (std::sqrt(sum[i]) + options.eps);
    }
  }
};

}  // namespace ember::optim_reference
