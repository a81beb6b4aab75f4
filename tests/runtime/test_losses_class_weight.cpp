// cross_entropy and nll_loss with per-class weights (composites of the fused ops,
// runtime/functional_losses.cpp): PyTorch's weighted Mean (divided by the sum of w[y] over
// counted rows), its weighted label smoothing, ignore_index, all-ignored and empty batches,
// gradients by finite differences, and the weight's errors.
#include <doctest/doctest.h>

#include <cmath>

#include "composite_loss_checks.h"
#include "error_of.h"
#include "loss_reference.h"
#include "numeric_check.h"

namespace test_losses_class_weight {

using namespace ember;
using namespace ember::testing;

namespace {

// PyTorch's formula with loops: row i loses (1 - e) w[y_i] (-log p[i, y_i]) + e / C sum_c w_c
// (-log p[i, c]); ignored rows lose 0 and weigh 0; Mean divides by the sum of w[y_i].
std::vector<double> weighted_reference(const Tensor& logits, const std::vector<int64_t>& target,
                                       const std::vector<double>& weight, Reduction reduction,
                                       double smoothing = 0.0, int64_t ignore_index = -100) {
  const std::vector<double> log_probs = reference_softmax(logits, 1, true);
  const auto classes = static_cast<int64_t>(weight.size());
  std::vector<double> rows;
  double total = 0.0, total_weight = 0.0;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == ignore_index) {
      rows.push_back(0.0);
      continue;
    }
    double smooth = 0.0;
    for (int64_t c = 0; c < classes; ++c) smooth -= weight[c] * log_probs[i * classes + c];
    const double nll = -weight[target[i]] * log_probs[i * classes + target[i]];
    rows.push_back((1 - smoothing) * nll + smoothing / static_cast<double>(classes) * smooth);
    total += rows.back();
    total_weight += weight[target[i]];
  }
  if (reduction == Reduction::None) return rows;
  return {reduction == Reduction::Sum ? total : total / total_weight};
}

const std::vector<double> kWeight{0.5, 2.0, 1.0, 3.0, 0.25};

}  // namespace

TEST_CASE("weighted cross_entropy matches PyTorch's formula with smoothing and ignored rows") {
  const std::vector<int64_t> labels{1, -100, 4, 0, 3, 1};
  for (DType dtype : {kFloat64, kFloat32}) {
    const double tolerance = dtype == kFloat64 ? 1e-13 : 1e-6;
    const Tensor logits = random_tensor({6, 5}, 50, dtype);
    const Tensor weight = from_vector<double>(kWeight, {5}, {.dtype = dtype});
    for (double smoothing : {0.0, 0.2, 1.0}) {
      for (Reduction reduction : kLossReductions) {
        INFO(dtype_name(dtype) << " smoothing " << smoothing << " reduction " << static_cast<int>(reduction));
        const Tensor loss = cross_entropy(logits, targets(labels),
                                          {.reduction = reduction, .label_smoothing = smoothing, .weight = weight});
        CHECK(loss.dtype() == dtype);
        check_close(loss, weighted_reference(logits, labels, kWeight, reduction, smoothing), tolerance);
      }
    }
  }
}

TEST_CASE("weighted nll_loss matches loops, and unit weights give the unweighted fused op's values") {
  const std::vector<int64_t> labels{2, 0, 7, 4, 7};
  const Tensor logits = random_tensor({5, 5}, 51);
  const Tensor log_probs = log_softmax(logits, 1);
  const Tensor weight = from_vector<double>(kWeight);
  for (Reduction reduction : kLossReductions) {
    INFO("reduction " << static_cast<int>(reduction));
    check_close(nll_loss(log_probs, targets(labels), weight, reduction, 7),
                weighted_reference(logits, labels, kWeight, reduction, 0.0, 7), 1e-13);
    const Tensor ones_weight = ones({5}, {.dtype = kFloat64});
    check_close(nll_loss(log_probs, targets(labels), ones_weight, reduction, 7),
                values_of(nll_loss(log_probs, targets(labels), reduction, 7)), 1e-15);
    const CrossEntropyOptions unweighted{.reduction = reduction, .ignore_index = 7, .label_smoothing = 0.3};
    CrossEntropyOptions weighted = unweighted;
    weighted.weight = ones_weight;
    check_close(cross_entropy(logits, targets(labels), weighted),
                values_of(cross_entropy(logits, targets(labels), unweighted)), 1e-14);
  }
  // 1-D scores with a 0-d target: -w[y] log p[y], and Mean divides by w[y] again.
  const Tensor row = random_tensor({5}, 52);
  const Tensor label = from_vector<int64_t>({3}, Dims{});
  const double expected = -kWeight[3] * reference_softmax(row.view({1, 5}), 1, true)[3];
  CHECK(cross_entropy(row, label, {.reduction = Reduction::Sum, .weight = weight}).item() ==
        doctest::Approx(expected).epsilon(1e-14));
  CHECK(nll_loss(log_softmax(row, 0), label, weight).item() == doctest::Approx(expected / kWeight[3]).epsilon(1e-14));
}

TEST_CASE("weighted class losses of an all-ignored or empty batch: Mean is nan, Sum 0, as PyTorch") {
  const Tensor weight = from_vector<double>(kWeight);
  const Tensor logits = random_tensor({3, 5}, 53);
  const Tensor ignored = targets({-100, -100, -100});
  CHECK(std::isnan(cross_entropy(logits, ignored, {.weight = weight}).item()));
  CHECK(cross_entropy(logits, ignored, {.reduction = Reduction::Sum, .label_smoothing = 0.1, .weight = weight})
            .item() == 0.0);
  CHECK(values_of(nll_loss(logits, ignored, weight, Reduction::None)) == std::vector<double>{0.0, 0.0, 0.0});
  const Tensor empty_logits = zeros({0, 5}, {.dtype = kFloat64});
  const Tensor empty_target = zeros({0}, {.dtype = kInt64});
  CHECK(std::isnan(cross_entropy(empty_logits, empty_target, {.label_smoothing = 0.2, .weight = weight}).item()));
  CHECK(nll_loss(empty_logits, empty_target, weight, Reduction::Sum).item() == 0.0);
  // No gradient reaches the logits of ignored rows.
  const Tensor leaf_logits = random_tensor({3, 5}, 54).requires_grad_();
  cross_entropy(leaf_logits, ignored, {.reduction = Reduction::Sum, .weight = weight}).backward();
  CHECK(values_of(leaf_logits.grad()) == std::vector<double>(15, 0.0));
}

TEST_CASE("gradients of the weighted class losses match finite differences") {
  const Tensor weight = from_vector<double>(kWeight);
  const Tensor labels = targets({1, -100, 4, 0});
  for (Reduction reduction : kLossReductions) {
    for (double smoothing : {0.0, 0.3}) {
      INFO("reduction " << static_cast<int>(reduction) << " smoothing " << smoothing);
      gradcheck([&](const std::vector<Tensor>& t) {
        return cross_entropy(t[0], labels, {.reduction = reduction, .label_smoothing = smoothing, .weight = weight});
      }, {random_tensor({4, 5}, 55)});
    }
    gradcheck([&](const std::vector<Tensor>& t) { return nll_loss(t[0], labels, weight, reduction); },
              {random_tensor({4, 5}, 56)});
  }
}

TEST_CASE("the class weight is checked against the class count, naming the caller's line") {
  const Tensor logits = random_tensor({2, 5}, 57);
  const Tensor labels = targets({1, 2});
  const std::string file = "test_losses_class_weight.cpp";
  int line = __LINE__ + 1;
  std::string message = error_of([&] { cross_entropy(logits, labels, {.weight = ones({3})}); });
  CHECK(message.find("cross_entropy: weight must hold one value for each of the 5 classes, got shape [3] (scores "
                     "[2, 5])") != std::string::npos);
  CHECK(names_line(message, file, line));
  line = __LINE__ + 1;
  message = error_of([&] { nll_loss(logits, labels, ones({5}, {.dtype = kInt64})); });
  CHECK(message.find("nll_loss: weight must be floating-point, got int64") != std::string::npos);
  CHECK(names_line(message, file, line));
  // The class indices are checked by the fused op, under the function's name.
  CHECK(error_of([&] { cross_entropy(logits, targets({1, 5}), {.weight = ones({5})}); })
            .find("cross_entropy: target 5 at position 1 is out of range for 5 classes") != std::string::npos);
  CHECK(error_of([&] { nll_loss(logits, labels, ones({5}), Reduction::BatchMean); })
            .find("nll_loss: reduction BatchMean is kl_div's only") != std::string::npos);
}

}  // namespace test_losses_class_weight
