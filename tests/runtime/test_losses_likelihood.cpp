// poisson_nll_loss and gaussian_nll_loss (runtime/functional_losses_likelihood.cpp): float64
// loops of PyTorch's formulas (log and rate inputs, Stirling's term, the variance's shapes and its
// clamp at eps), gradients by finite differences, the modules and the errors.
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>

#include "composite_loss_checks.h"
#include "error_of.h"
#include "numeric_check.h"

namespace test_losses_likelihood {

using namespace ember;
using namespace ember::testing;

namespace {

// Counts 0..5, so that Stirling's term is both masked (y <= 1) and used.
Tensor counts(const Dims& sizes) {
  std::vector<double> values(static_cast<size_t>(sizes.product()));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i % 6);
  return from_vector<double>(values, sizes);
}

double stirling(double y) { return y > 1 ? y * std::log(y) - y + 0.5 * std::log(2 * std::numbers::pi * y) : 0.0; }

}  // namespace

TEST_CASE("poisson_nll_loss matches PyTorch's formula for log and rate inputs, with and without Stirling's term") {
  const Tensor x = random_tensor({3, 4}, 1), y = counts({3, 4});
  const Tensor rates = add(abs(x), 0.1);
  const std::vector<double> xs = values_of(x), ys = values_of(y), rs = values_of(rates);
  for (bool full : {false, true}) {
    std::vector<double> log_losses, rate_losses;
    for (size_t i = 0; i < xs.size(); ++i) {
      log_losses.push_back(std::exp(xs[i]) - ys[i] * xs[i] + (full ? stirling(ys[i]) : 0.0));
      rate_losses.push_back(rs[i] - ys[i] * std::log(rs[i] + 1e-8) + (full ? stirling(ys[i]) : 0.0));
    }
    for (Reduction reduction : kLossReductions) {
      INFO("full " << full << " reduction " << static_cast<int>(reduction));
      check_close(poisson_nll_loss(x, y, {.full = full, .reduction = reduction}), reduced(log_losses, reduction), 1e-14);
      check_close(poisson_nll_loss(rates, y, {.log_input = false, .full = full, .reduction = reduction}),
                  reduced(rate_losses, reduction), 1e-14);
    }
  }
  // A rate of 0 takes log(eps); a NaN target keeps its NaN through Stirling's mask, as masked_fill.
  check_close(poisson_nll_loss(zeros({1}, {.dtype = kFloat64}), from_vector<double>({2.0}),
                               {.log_input = false, .reduction = Reduction::None}),
              {-2.0 * std::log(1e-8)}, 1e-14);
  CHECK(std::isnan(poisson_nll_loss(zeros({1}, {.dtype = kFloat64}), from_vector<double>({NAN}), {.full = true}).item()));
}

TEST_CASE("gaussian_nll_loss matches PyTorch's formula for each shape of var, clamping it at eps") {
  const Tensor x = random_tensor({3, 4}, 2), y = random_tensor({3, 4}, 3);
  const Tensor var = add(abs(random_tensor({3, 4}, 4)), 0.05);
  const Tensor per_sample = add(abs(random_tensor({3}, 5)), 0.05);
  const std::vector<double> xs = values_of(x), ys = values_of(y), vs = values_of(var), ss = values_of(per_sample);
  for (bool full : {false, true}) {
    std::vector<double> each, shared;
    for (size_t i = 0; i < xs.size(); ++i) {
      const double constant = full ? 0.5 * std::log(2 * std::numbers::pi) : 0.0;
      const double d = xs[i] - ys[i];
      each.push_back(0.5 * (std::log(vs[i]) + d * d / vs[i]) + constant);
      const double s = ss[i / 4];
      shared.push_back(0.5 * (std::log(s) + d * d / s) + constant);
    }
    for (Reduction reduction : kLossReductions) {
      INFO("full " << full << " reduction " << static_cast<int>(reduction));
      const GaussianNLLLossOptions options{.full = full, .reduction = reduction};
      check_close(gaussian_nll_loss(x, y, var, options), reduced(each, reduction), 1e-14);
      check_close(gaussian_nll_loss(x, y, per_sample, options), reduced(shared, reduction), 1e-14);  // [3]
      check_close(gaussian_nll_loss(x, y, per_sample.view({3, 1}), options), reduced(shared, reduction), 1e-14);
    }
  }
}

TEST_CASE("gaussian_nll_loss: a variance below eps counts as eps, and its gradient passes as if unclamped") {
  // PyTorch clamps a clone of var in place under no_grad: d/dvar is that of the formula at eps.
  const Tensor var = from_vector<double>({1e-9, 0.5}).requires_grad_();
  const Tensor x = from_vector<double>({0.3, 0.3}), y = from_vector<double>({0.1, -0.2});
  const Tensor losses = gaussian_nll_loss(x, y, var, {.reduction = Reduction::None});
  const double eps = 1e-6, d0 = 0.2, d1 = 0.5;
  check_close(losses, {0.5 * (std::log(eps) + d0 * d0 / eps), 0.5 * (std::log(0.5) + d1 * d1 / 0.5)}, 1e-14);
  losses.sum().backward();
  check_close(var.grad(), {0.5 * (1 / eps - d0 * d0 / (eps * eps)), 0.5 * (1 / 0.5 - d1 * d1 / 0.25)}, 1e-12);
}

TEST_CASE("gradients of poisson_nll_loss and gaussian_nll_loss match finite differences") {
  for (Reduction reduction : kLossReductions) {
    INFO("reduction " << static_cast<int>(reduction));
    gradcheck([&](const std::vector<Tensor>& t) {
      return poisson_nll_loss(t[0], t[1], {.full = true, .reduction = reduction});
    }, {random_tensor({3, 4}, 6), add(abs(random_tensor({3, 4}, 7)), 0.5)});
    gradcheck([&](const std::vector<Tensor>& t) {
      return poisson_nll_loss(t[0], counts({3, 4}), {.log_input = false, .reduction = reduction});
    }, {add(abs(random_tensor({3, 4}, 8)), 0.1)});
    gradcheck([&](const std::vector<Tensor>& t) {
      return gaussian_nll_loss(t[0], t[1], t[2], {.full = true, .reduction = reduction});
    }, {random_tensor({3, 4}, 9), random_tensor({3, 4}, 10), add(abs(random_tensor({3, 1}, 11)), 0.1)});
  }
}

TEST_CASE("PoissonNLLLoss and GaussianNLLLoss call their functions, and bad arguments are refused with the values") {
  const Tensor x = random_tensor({3, 4}, 12), y = counts({3, 4}), var = add(abs(random_tensor({3, 4}, 13)), 0.1);
  CHECK(values_of(nn::PoissonNLLLoss({.log_input = false, .full = true})(var, y)) ==
        values_of(poisson_nll_loss(var, y, {.log_input = false, .full = true})));
  nn::GaussianNLLLoss gaussian({.eps = 1e-3});
  CHECK(values_of(gaussian(x, y, var)) == values_of(gaussian_nll_loss(x, y, var, {.eps = 1e-3})));
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { gaussian(x, y, var.slice(1, 0, 2)); });
  CHECK(message.find("gaussian_nll_loss: var must have the input's shape [3, 4], or it without the last dim, or "
                     "with a last dim of 1; got [3, 2]") != std::string::npos);
  CHECK(names_line(message, "test_losses_likelihood.cpp", line));
  CHECK_THROWS_WITH_AS(gaussian_nll_loss(x, y, sub(var, 10.0)),
                       doctest::Contains("gaussian_nll_loss: var has negative entries (the smallest is"), Error);
  CHECK_THROWS_WITH_AS(poisson_nll_loss(y.to(kInt64), x),
                       doctest::Contains("poisson_nll_loss: input must be a floating-point tensor, got int64"), Error);
  CHECK_THROWS_WITH_AS(poisson_nll_loss(x, zeros({5}, {.dtype = kFloat64})), doctest::Contains("poisson_nll_loss"),
                       Error);
  AutocastGuard autocast(kBFloat16);
  CHECK(poisson_nll_loss(x.to(kBFloat16), y.to(kBFloat16)).dtype() == kFloat32);
  CHECK(gaussian_nll_loss(x.to(kBFloat16), y.to(kBFloat16), var.to(kBFloat16)).dtype() == kFloat32);
}

TEST_CASE("poisson_nll_loss and gaussian_nll_loss take integer targets, and a 0-d input with one variance") {
  // Counts as int64, as PyTorch promotes them.
  const Tensor x = random_tensor({3, 4}, 14), y = counts({3, 4});
  CHECK(values_of(poisson_nll_loss(x, y.to(kInt64))) == values_of(poisson_nll_loss(x, y)));
  // Stirling's term of an int64 target is in float32, as PyTorch's log of an integer tensor.
  check_close(poisson_nll_loss(x, y.to(kInt64), {.full = true}), values_of(poisson_nll_loss(x, y, {.full = true})),
              1e-6);
  const Tensor var = add(abs(random_tensor({3, 4}, 15)), 0.1);
  CHECK(values_of(gaussian_nll_loss(x, y.to(kInt64), var)) == values_of(gaussian_nll_loss(x, y, var)));
  // PyTorch's third shape rule for a 0-d input: var [1] has the same (empty) leading dims and a last dim of 1.
  const Tensor loss = gaussian_nll_loss(scalar_tensor(0.5), scalar_tensor(0.0), from_vector<double>({2.0}),
                                        {.reduction = Reduction::None});
  CHECK(loss.sizes() == Dims{1});
  check_close(loss, {0.5 * (std::log(2.0) + 0.25 / 2.0)}, 1e-15);
}

}  // namespace test_losses_likelihood
