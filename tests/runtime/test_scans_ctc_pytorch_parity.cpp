// cumprod, logcumsumexp and ctc_loss where a review found them different from PyTorch or from the
// mathematics (each case failed on the code first reviewed, 44bce7c): ctc over no time steps or no
// sequences, cumprod's gradient with an inf after its zeros, logcumsumexp's derivatives w.r.t. its
// incoming gradient. Expected behaviour is derived from PyTorch's source (quoted by file and
// function) or checked in float64 here.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "ctc_reference.h"
#include "numeric_check.h"
#include "runtime/ember.h"

namespace test_scans_ctc_pytorch_parity {

using namespace ember;
using namespace ember::testing;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor doubles(const std::vector<double>& values) {
  return from_vector<double>(values, {static_cast<int64_t>(values.size())}, {.dtype = kFloat64});
}

// log(sum_{i <= j} exp(x_i)) for each j, in float64, summed directly (the inputs here are small).
std::vector<double> running_log_sum_exp(const std::vector<double>& x) {
  std::vector<double> result;
  double total = 0.0;
  for (double value : x) {
    total += std::exp(value);
    result.push_back(std::log(total));
  }
  return result;
}

}  // namespace

// PyTorch's CPU kernel has no check that log_probs is non-empty (aten/src/ATen/native/LossCTC.cpp,
// ctc_loss_allocate_outputs: only checkDim(log_probs, 3), blank in [0, C), the lengths' counts
// and each input length in [0, log_probs.size(0)]); ctc_loss_cpu_template then gives, for
// `input_length == 0`, `log_likelihood = target_length == 0 ? 0 : neginf` and `continue`s. So
// with T = 0 every input length must be 0 and the losses are 0 (empty target) or inf.
// ember refuses with "ctc_loss: log_probs must not be empty, got shape [0, 2, 3]".
TEST_CASE("ctc_loss over zero time steps gives 0 for an empty target and inf otherwise, as PyTorch") {
  const Tensor log_probs = zeros({0, 2, 3}, {.dtype = kFloat64});
  const Tensor targets = from_vector<int64_t>({1, 2}, Dims{2, 1});
  Tensor losses;
  CHECK_NOTHROW(losses = ctc_loss(log_probs, targets, std::vector<int64_t>{0, 0}, {0, 1},
                                  {.reduction = Reduction::None}));
  if (losses.defined()) {
    REQUIRE(losses.sizes() == Dims{2});
    const std::vector<double> values = values_of(losses);
    CHECK(values[0] == 0.0);
    CHECK(values[1] == kInf);
  }
}

// An empty batch: PyTorch's checks pass for N = 0 (input_lengths.size() == batch_size == 0,
// targets.size(0) == 0), the kernel's parallel_for over the batch does nothing, and ctc_loss_impl
// reduces the empty [0] losses: None keeps [0], Sum gives 0, Mean gives (res / lengths).mean(),
// NaN. ember refuses ("log_probs must not be empty, got shape [3, 0, 3]"); a fix must also not
// take std::max_element of the empty lengths (functional_losses_ctc.cpp, both overloads).
TEST_CASE("ctc_loss of an empty batch gives [0] losses, a sum of 0 and a NaN mean, as PyTorch") {
  const Tensor log_probs = zeros({3, 0, 3}, {.dtype = kFloat64});
  const Tensor targets = zeros({0, 2}, {.dtype = kInt64});
  const std::vector<int64_t> none_of_them;
  Tensor per_sequence, total, average;
  CHECK_NOTHROW(per_sequence = ctc_loss(log_probs, targets, none_of_them, none_of_them,
                                        {.reduction = Reduction::None}));
  CHECK_NOTHROW(total = ctc_loss(log_probs, targets, none_of_them, none_of_them, {.reduction = Reduction::Sum}));
  CHECK_NOTHROW(average = ctc_loss(log_probs, targets, zeros({0}, {.dtype = kInt64}),
                                   zeros({0}, {.dtype = kInt64})));
  if (per_sequence.defined()) CHECK(per_sequence.sizes() == Dims{0});
  if (total.defined()) CHECK(total.item() == 0.0);
  if (average.defined()) CHECK(std::isnan(average.item()));
}

// PyTorch's first-order cumprod_backward (torch/csrc/autograd/FunctionsManual.cpp, the
// `!at::GradMode::is_enabled()` branch taken by an ordinary backward) confines each case to where
// its terms can be nonzero: before the first zero z1 it sums
// `reversed_cumsum(w.masked_fill(~mask, 0.), dim)` with mask = (zeros so far == 0), and at z1 it
// multiplies `input.masked_fill(~mask, 1.).cumprod(dim)` by `grad.masked_fill(cumsum != 1, 0.)`,
// i.e. only j in [z1, z2). So an inf or NaN after the second zero, whose incoming gradient is 0,
// cannot reach the gradient. Here x = (2, 0, 3, 0, inf), g = (1, 1, 1, 1, 0):
//   k = 0: g_0 y_0 / x_0 = 1;   k = 1 (z1): x_0 (g_1 + g_2 x_2) = 2 (1 + 3) = 8;   k > 1: 0.
// ember sums g_j y_j over every j >= k (y_4 = 0 * inf = NaN, times g_4 = 0 is NaN) and gives
// (NaN, NaN, 0, 0, 0). The same holds for a NaN element in that place.
TEST_CASE("cumprod's gradient is not poisoned by a non-finite element after the zeros, as PyTorch's") {
  const Tensor x = doubles({2.0, 0.0, 3.0, 0.0, kInf}).requires_grad_();
  cumprod(x, 0).backward(doubles({1.0, 1.0, 1.0, 1.0, 0.0}));
  const std::vector<double> gradient = values_of(x.grad());
  const std::vector<double> expected = {1.0, 8.0, 0.0, 0.0, 0.0};
  for (size_t k = 0; k < expected.size(); ++k) {
    INFO("element ", k, ": got ", gradient[k], ", expected ", expected[k]);
    CHECK(gradient[k] == expected[k]);
  }
}

// logcumsumexp's gradient grad_k = sum_{j >= k} g_j exp(x_k - r_j) is linear in the incoming
// gradient g, so d grad_k / d g_j = exp(x_k - r_j) for j >= k. The rule (scan_ops.cpp,
// logcumsumexp_backward) is PyTorch's log-domain form (FunctionsManual.cpp: where(grad > 0,
// grad.abs().log(), min)), exact in g where g_j != 0; where g_j == 0 log's backward meets 1 / 0
// and the derivative is NaN, as PyTorch's (a guard there gave a silent 0, which a review caught).
TEST_CASE("logcumsumexp's gradient differentiates w.r.t. the incoming gradient, NaN where it is 0 as PyTorch's") {
  const std::vector<double> x_values = {0.3, -1.2, 2.0, 0.7};
  const std::vector<double> v_values = {0.5, 1.0, -1.0, 2.0};
  const std::vector<double> g_values = {1.0, 0.0, -0.5, 0.0};
  const Tensor x = doubles(x_values).requires_grad_();
  const Tensor g = doubles(g_values).requires_grad_();
  const std::vector<Tensor> first = autograd::grad({logcumsumexp(x, 0)}, {x}, {g}, std::nullopt, true);
  const std::vector<double> actual =
      values_of(autograd::grad({sum(mul(first[0], doubles(v_values)))}, {g})[0]);
  // d/dg_j of sum_k v_k grad_k = sum_{k <= j} v_k exp(x_k - r_j).
  const std::vector<double> r = running_log_sum_exp(x_values);
  for (size_t j = 0; j < x_values.size(); ++j) {
    double expected = 0.0;
    for (size_t k = 0; k <= j; ++k) expected += v_values[k] * std::exp(x_values[k] - r[j]);
    INFO("g_", j, ": got ", actual[j], ", expected ", expected);
    if (g_values[j] == 0.0) {
      CHECK(std::isnan(actual[j]));
    } else {
      CHECK(actual[j] == doctest::Approx(expected).epsilon(1e-12));
    }
  }
}

// The Hessian of f(x) = sum(logcumsumexp(x)^2) / 2 against the closed form
// H_ab = sum_j [dr_j/dx_a dr_j/dx_b + r_j d2r_j/dx_a dx_b], at a point where no r_j is 0 (where
// one is, f's gradient g_j is 0 and the entry is NaN, as above).
TEST_CASE("the Hessian of a function of logcumsumexp matches its closed form") {
  const std::vector<double> x_values = {0.1, -0.4, 0.9};
  const std::vector<double> r = running_log_sum_exp(x_values);
  const size_t n = x_values.size();
  // dr_j/dx_a = exp(x_a - r_j) [a <= j] = p_ja; d2r_j/dx_a dx_b = p_ja ([a == b] - p_jb) for a, b <= j.
  auto p = [&](size_t j, size_t a) { return a <= j ? std::exp(x_values[a] - r[j]) : 0.0; };
  std::vector<double> expected(n * n, 0.0);
  for (size_t a = 0; a < n; ++a)
    for (size_t b = 0; b < n; ++b)
      for (size_t j = 0; j < n; ++j)
        expected[a * n + b] += p(j, a) * p(j, b) + r[j] * p(j, a) * ((a == b ? 1.0 : 0.0) - p(j, b));
  const std::vector<double> actual = values_of(autograd::functional::hessian(
      [](const Tensor& input) { return div(sum(mul(logcumsumexp(input, 0), logcumsumexp(input, 0))), 2.0); },
      doubles(x_values)));
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("entry ", i / n, ",", i % n, ": got ", actual[i], ", expected ", expected[i]);
    CHECK(actual[i] == doctest::Approx(expected[i]).epsilon(1e-12));
  }
}

}  // namespace test_scans_ctc_pytorch_parity
