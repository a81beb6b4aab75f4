// F::gumbel_softmax (runtime/nn/functional_activations_more.h): samples are distributions, tau
// scales the perturbed logits, manual_seed reproduces a draw, hard samples are one-hot with the
// soft sample's gradient, and the argmax of a draw follows softmax(logits) (the Gumbel-max trick).
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"
#include "runtime/nn/nn.h"

namespace test_gumbel_softmax {

using namespace ember;
namespace F = ember::nn::functional;
using ember::testing::check_messages_name_lines;
using ember::testing::error_of;
using ember::testing::small_tensor;
using ember::testing::values_of;

TEST_CASE("gumbel_softmax rows are distributions along dim") {
  const Tensor logits = small_tensor({4, 5, 3}, 1);
  for (int64_t dim : {-1, 1, 0}) {
    INFO(std::string("dim " + std::to_string(dim)));
    const Tensor sample = F::gumbel_softmax(logits, 0.7, false, dim);
    CHECK(sample.sizes() == logits.sizes());
    CHECK(allclose(sample.sum({dim}), ones_like(logits.sum({dim})), 1e-12, 1e-12));
    CHECK(values_of(sample.min())[0] > 0.0);
  }
}

TEST_CASE("gumbel_softmax draws are reproducible under manual_seed and differ otherwise") {
  const Tensor logits = small_tensor({3, 6}, 2).to(kFloat32);
  manual_seed(123);
  const Tensor first = F::gumbel_softmax(logits);
  const Tensor second = F::gumbel_softmax(logits);
  manual_seed(123);
  const Tensor again = F::gumbel_softmax(logits);
  CHECK(values_of(first) == values_of(again));
  CHECK(values_of(first) != values_of(second));
}

TEST_CASE("gumbel_softmax tau divides the perturbed logits") {
  // With z = logits + g, log y_tau = z / tau - logsumexp(z / tau): the log-ratios of two classes
  // at tau = 0.5 are twice those at tau = 1, for the same draw.
  const Tensor logits = small_tensor({2, 4}, 3);
  manual_seed(7);
  const std::vector<double> one = values_of(F::gumbel_softmax(logits, 1.0).log());
  manual_seed(7);
  const std::vector<double> half = values_of(F::gumbel_softmax(logits, 0.5).log());
  for (int row = 0; row < 2; ++row)
    for (int k = 1; k < 4; ++k)
      CHECK(half[row * 4 + k] - half[row * 4] == doctest::Approx(2 * (one[row * 4 + k] - one[row * 4])));
}

TEST_CASE("gumbel_softmax hard is one-hot at the soft argmax with the soft sample's gradient") {
  const Tensor leaf_soft = small_tensor({5, 4}, 4).requires_grad_();
  const Tensor leaf_hard = small_tensor({5, 4}, 4).requires_grad_();
  const Tensor weights = small_tensor({5, 4}, 5);
  manual_seed(11);
  const Tensor soft = F::gumbel_softmax(leaf_soft, 0.8, false, 1);
  manual_seed(11);
  const Tensor hard = F::gumbel_softmax(leaf_hard, 0.8, true, 1);
  const std::vector<double> s = values_of(soft), h = values_of(hard);
  for (int row = 0; row < 5; ++row) {
    int best = 0;
    for (int k = 1; k < 4; ++k) best = s[row * 4 + k] > s[row * 4 + best] ? k : best;
    for (int k = 0; k < 4; ++k) CHECK(h[row * 4 + k] == (k == best ? 1.0 : 0.0));
  }
  (soft * weights).sum().backward();
  (hard * weights).sum().backward();
  const std::vector<double> expected = values_of(leaf_soft.grad());
  CHECK(values_of(leaf_hard.grad().abs().sum())[0] > 0.0);
  const std::vector<double> actual = values_of(leaf_hard.grad());
  for (size_t i = 0; i < actual.size(); ++i) CHECK(actual[i] == doctest::Approx(expected[i]).epsilon(1e-12));
}

TEST_CASE("gumbel_softmax hard samples follow softmax(logits)") {
  // Gumbel-max: argmax(logits + g) is distributed as softmax(logits). 20000 draws of 3 classes at
  // once; each frequency's standard error is below 0.0036, the tolerance 0.015 is over 4 of them.
  const std::vector<double> logit_values = {0.5, -1.0, 1.5};
  const Tensor logits = from_vector<double>(logit_values, {1, 3}, {.dtype = kFloat32}).expand({20000, 3});
  manual_seed(2024);
  const std::vector<double> frequencies = values_of(F::gumbel_softmax(logits, 1.0, true).mean({0}));
  double total = 0;
  for (double l : logit_values) total += std::exp(l);
  for (int k = 0; k < 3; ++k) CHECK(std::abs(frequencies[k] - std::exp(logit_values[k]) / total) < 0.015);
}

TEST_CASE("gumbel_softmax refuses integer logits and a bad dim") {
  const Tensor integers = zeros({2, 3}, {.dtype = kInt64});
  const Tensor logits = small_tensor({2, 3}, 6);
  const int first = __LINE__ + 2;
  const std::vector<std::string> messages = {
      error_of([&] { F::gumbel_softmax(integers); }),
      error_of([&] { F::gumbel_softmax(logits, 1.0, false, 2); }),
  };
  check_messages_name_lines(messages, {"gumbel_softmax: expected floating logits, got int64", "gumbel_softmax"}, first);
}

}  // namespace test_gumbel_softmax
