// PyTorch's other forms of cross_entropy and nll_loss (runtime/functional_losses.cpp): scores
// [N, C, d1, ..., dk] with class indices [N, d1, ..., dk], and class-probability targets of the
// scores' shape. float64 loops of PyTorch's formulas, the [N, C] form on the same rows, gradients
// by finite differences, and the errors.
#include <doctest/doctest.h>

#include <cmath>

#include "composite_loss_checks.h"
#include "numeric_check.h"

namespace test_cross_entropy_forms {

using namespace ember;
using namespace ember::testing;

namespace {

// Class indices in [0, classes), with every fifth position ignore_index (-100).
Tensor class_map(const Dims& sizes, int64_t classes, uint64_t seed) {
  manual_seed(seed);
  Tensor target = randint(0, classes, sizes);
  std::vector<int64_t> values = target.to_vector<int64_t>();
  for (size_t i = 0; i < values.size(); i += 5) values[i] = -100;
  return from_vector<int64_t>(values, sizes);
}

// Scores [N, C, D] laid out as rows [N * D, C] (position-major), by loops, not permute.
Tensor rows_of(const Tensor& scores) {
  const int64_t n = scores.sizes()[0], c = scores.sizes()[1], d = scores.sizes()[2];
  const std::vector<double> values = values_of(scores);
  std::vector<double> rows;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t p = 0; p < d; ++p)
      for (int64_t k = 0; k < c; ++k) rows.push_back(values[(i * c + k) * d + p]);
  return from_vector<double>(rows, {n * d, c});
}

// -sum_c w_c t_c log_softmax(x)_c for each sample of [N, C] (or one [C]) scores, smoothed targets.
std::vector<double> soft_reference(const Tensor& logits, const Tensor& target, const std::vector<double>& weight,
                                   double smoothing) {
  const int64_t c = logits.sizes()[logits.dim() - 1];
  const std::vector<double> x = values_of(logits), t = values_of(target);
  std::vector<double> losses;
  for (size_t row = 0; row < x.size() / c; ++row) {
    double top = -INFINITY, total = 0.0, loss = 0.0;
    for (int64_t k = 0; k < c; ++k) top = std::max(top, x[row * c + k]);
    for (int64_t k = 0; k < c; ++k) total += std::exp(x[row * c + k] - top);
    for (int64_t k = 0; k < c; ++k) {
      const double probability = t[row * c + k] * (1.0 - smoothing) + smoothing / static_cast<double>(c);
      const double w = weight.empty() ? 1.0 : weight[k];
      loss -= w * probability * (x[row * c + k] - top - std::log(total));
    }
    losses.push_back(loss);
  }
  return losses;
}

}  // namespace

TEST_CASE("cross_entropy over [N, C, d] scores is PyTorch's per-position loss, ignored positions left out") {
  const Tensor logits = random_tensor({2, 3, 5}, 1);
  const Tensor target = class_map({2, 5}, 3, 2);
  const std::vector<double> x = values_of(logits), y = values_of(target);
  std::vector<double> losses;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t p = 0; p < 5; ++p) {
      const auto label = static_cast<int64_t>(y[i * 5 + p]);
      double total = 0.0;
      for (int64_t k = 0; k < 3; ++k) total += std::exp(x[(i * 3 + k) * 5 + p]);
      losses.push_back(label < 0 ? 0.0 : std::log(total) - x[(i * 3 + label) * 5 + p]);
    }
  double sum = 0.0;
  for (double loss : losses) sum += loss;
  const Tensor none = cross_entropy(logits, target, {.reduction = Reduction::None});
  CHECK(none.sizes() == Dims{2, 5});
  check_close(none, losses, 1e-14);
  check_close(cross_entropy(logits, target, {.reduction = Reduction::Sum}), {sum}, 1e-14);
  check_close(cross_entropy(logits, target), {sum / 8.0}, 1e-14);  // 10 positions, 2 ignored
}

TEST_CASE("cross_entropy and nll_loss over [N, C, d1, d2] equal the [N * d1 * d2, C] form, weighted and smoothed") {
  const Tensor logits = random_tensor({2, 4, 3, 2}, 3);
  const Tensor target = class_map({2, 3, 2}, 4, 4);
  const Tensor weight = from_vector<double>({0.5, 2.0, 1.0, 3.0});
  const Tensor rows = reshape(permute(logits, {0, 2, 3, 1}), {12, 4}).contiguous();
  const Tensor flat_target = reshape(target, {12});
  for (Reduction reduction : kLossReductions) {
    INFO("reduction " << static_cast<int>(reduction));
    const CrossEntropyOptions options{.reduction = reduction, .label_smoothing = 0.2, .weight = weight};
    check_close(cross_entropy(logits, target, options), values_of(cross_entropy(rows, flat_target, options)), 1e-14);
    const Tensor log_probs = log_softmax(logits, 1);
    check_close(nll_loss(log_probs, target, weight, reduction),
                values_of(nll_loss(log_softmax(rows, 1), flat_target, weight, reduction)), 1e-14);
    check_close(nll_loss(log_probs, target, reduction), values_of(nll_loss(log_softmax(rows, 1), flat_target, reduction)),
                1e-14);
  }
  // The loop layout agrees with permute's (the comparison above is not of permute with itself).
  const Tensor three_d = random_tensor({2, 3, 4}, 5);
  CHECK(values_of(rows_of(three_d)) == values_of(reshape(permute(three_d, {0, 2, 1}), {8, 3})));
}

TEST_CASE("gradients of cross_entropy over [N, C, d] scores match finite differences") {
  const Tensor target = class_map({2, 4}, 3, 6);
  const Tensor weight = from_vector<double>({0.5, 2.0, 1.0});
  for (Reduction reduction : kLossReductions) {
    INFO("reduction " << static_cast<int>(reduction));
    gradcheck([&](const std::vector<Tensor>& t) {
      return cross_entropy(t[0], target, {.reduction = reduction, .label_smoothing = 0.1, .weight = weight});
    }, {random_tensor({2, 3, 4}, 7)});
  }
}

TEST_CASE("cross_entropy with class probabilities is -sum w t log_softmax, Mean over samples") {
  const Tensor logits = random_tensor({4, 3}, 8);
  const Tensor target = softmax(random_tensor({4, 3}, 9), 1);
  const std::vector<double> weight{0.5, 2.0, 1.0};
  const Tensor weight_tensor = from_vector<double>(weight);
  for (double smoothing : {0.0, 0.3}) {
    for (bool weighted : {false, true}) {
      INFO("smoothing " << smoothing << " weighted " << weighted);
      const std::vector<double> losses =
          soft_reference(logits, target, weighted ? weight : std::vector<double>{}, smoothing);
      const Tensor w = weighted ? weight_tensor : Tensor();
      check_close(cross_entropy(logits, target, {.reduction = Reduction::None, .label_smoothing = smoothing, .weight = w}),
                  losses, 1e-14);
      check_close(cross_entropy(logits, target, {.reduction = Reduction::Sum, .label_smoothing = smoothing, .weight = w}),
                  reduced(losses, Reduction::Sum), 1e-14);
      // Mean divides by the 4 samples, not by a sum of weights.
      check_close(cross_entropy(logits, target, {.label_smoothing = smoothing, .weight = w}),
                  reduced(losses, Reduction::Mean), 1e-14);
    }
  }
  // One sample [C], and [N, C, d] with the classes along dim 1.
  const Tensor one = random_tensor({3}, 10), one_target = softmax(random_tensor({3}, 11), 0);
  check_close(cross_entropy(one, one_target), soft_reference(one, one_target, {}, 0.0), 1e-14);
  const Tensor map = random_tensor({2, 3, 4}, 12), map_target = softmax(random_tensor({2, 3, 4}, 13), 1);
  const Tensor none = cross_entropy(map, map_target, {.reduction = Reduction::None});
  CHECK(none.sizes() == Dims{2, 4});
  check_close(none, soft_reference(rows_of(map), rows_of(map_target), {}, 0.0), 1e-14);
  // No samples: Mean is 0 / 0.
  CHECK(std::isnan(cross_entropy(zeros({0, 3}, {.dtype = kFloat64}), zeros({0, 3}, {.dtype = kFloat64})).item()));
}

TEST_CASE("cross_entropy with class probabilities under autocast smooths and sums in float32") {
  const Tensor logits = random_tensor({4, 5}, 21, kBFloat16);
  const Tensor target = softmax(random_tensor({4, 5}, 22), 1).to(kBFloat16);
  const Tensor expected = cross_entropy(logits.to(kFloat32), target.to(kFloat32), {.label_smoothing = 0.3});
  AutocastGuard autocast(kBFloat16);
  const Tensor actual = cross_entropy(logits, target, {.label_smoothing = 0.3});
  CHECK(actual.dtype() == kFloat32);
  CHECK(values_of(actual) == values_of(expected));
}

TEST_CASE("gradients of cross_entropy with class probabilities match finite differences in both operands") {
  for (Reduction reduction : kLossReductions) {
    INFO("reduction " << static_cast<int>(reduction));
    gradcheck([&](const std::vector<Tensor>& t) {
      return cross_entropy(t[0], t[1], {.reduction = reduction, .label_smoothing = 0.2,
                                        .weight = from_vector<double>({0.5, 2.0, 1.0})});
    }, {random_tensor({2, 3, 2}, 14), softmax(random_tensor({2, 3, 2}, 15), 1)});
  }
}

TEST_CASE("cross_entropy and nll_loss refuse a mismatched map and bad probability targets, with the values") {
  CHECK_THROWS_WITH_AS(cross_entropy(random_tensor({2, 3, 4}, 16), zeros({2, 3}, {.dtype = kInt64})),
                       doctest::Contains("cross_entropy: expected a target of shape [2, 4] for scores of shape "
                                         "[2, 3, 4] (class dim 1 left out), got [2, 3]"),
                       Error);
  CHECK_THROWS_WITH_AS(nll_loss(random_tensor({2, 3, 4}, 17), zeros({4}, {.dtype = kInt64})),
                       doctest::Contains("nll_loss: expected a target of shape [2, 4]"), Error);
  // Named with the caller's shapes, not the rows they become.
  CHECK_THROWS_WITH_AS(cross_entropy(random_tensor({2, 3, 4}, 16), zeros({2, 4})),
                       doctest::Contains("cross_entropy: target must hold int64 class indices, got float32 (shape "
                                         "[2, 4])"),
                       Error);
  CHECK_THROWS_WITH_AS(cross_entropy(random_tensor({2, 3, 4}, 16), zeros({2, 4}, {.dtype = kInt64}),
                                     {.weight = from_vector<double>({1.0, 2.0, 3.0, 4.0})}),
                       doctest::Contains("cross_entropy: weight must hold one value for each of the 3 classes, got "
                                         "shape [4] (scores [2, 3, 4])"),
                       Error);
  CHECK_THROWS_WITH_AS(cross_entropy(random_tensor({2, 3}, 18), zeros({2, 3}, {.dtype = kInt64})),
                       doctest::Contains("cross_entropy: a target of the scores' shape [2, 3] holds class "
                                         "probabilities and must be floating-point, got int64"),
                       Error);
  CHECK_THROWS_WITH_AS(cross_entropy(random_tensor({2, 3}, 19), zeros({2, 3}, {.dtype = kFloat64}), {.ignore_index = 1}),
                       doctest::Contains("cross_entropy: ignore_index (1) is not supported for class-probability targets"),
                       Error);
  CHECK_THROWS_WITH_AS(cross_entropy(random_tensor({2, 3}, 20), zeros({2, 3}, {.dtype = kFloat64}),
                                     {.weight = from_vector<double>({1.0, 2.0})}),
                       doctest::Contains("cross_entropy: weight must hold one value for each of the 3 classes"), Error);
}

}  // namespace test_cross_entropy_forms
