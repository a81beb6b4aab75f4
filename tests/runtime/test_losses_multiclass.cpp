// multi_margin_loss and multilabel_margin_loss (runtime/functional_losses_multiclass.cpp): float64
// loops of PyTorch's kernels for every reduction, PyTorch's documented examples, gradients by
// finite differences and at a violation's kink, the modules, autocast and the argument errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "composite_loss_checks.h"
#include "error_of.h"
#include "numeric_check.h"

namespace test_losses_multiclass {

using namespace ember;
using namespace ember::testing;

namespace {

// PyTorch's multi_margin_loss kernel over [N, C] values, one loss per sample.
std::vector<double> multi_margin_reference(const std::vector<double>& x, const std::vector<int64_t>& y, int64_t classes,
                                           int p, double margin, const std::vector<double>& weight) {
  std::vector<double> losses;
  for (size_t n = 0; n < y.size(); ++n) {
    const double* row = &x[n * static_cast<size_t>(classes)];
    double total = 0.0;
    for (int64_t i = 0; i < classes; ++i) {
      if (i == y[n]) continue;
      const double z = margin - row[y[n]] + row[i];
      if (z > 0) total += (weight.empty() ? 1.0 : weight[static_cast<size_t>(y[n])]) * (p == 1 ? z : z * z);
    }
    losses.push_back(total / static_cast<double>(classes));
  }
  return losses;
}

// PyTorch's multilabel_margin_loss kernel: each row's listed classes end at its first negative.
std::vector<double> multilabel_margin_reference(const std::vector<double>& x, const std::vector<int64_t>& y,
                                                int64_t classes) {
  std::vector<double> losses;
  for (size_t start = 0; start < x.size(); start += static_cast<size_t>(classes)) {
    std::vector<bool> is_target(static_cast<size_t>(classes), false);
    for (int64_t k = 0; k < classes && y[start + k] >= 0; ++k) is_target[static_cast<size_t>(y[start + k])] = true;
    double total = 0.0;
    for (int64_t k = 0; k < classes && y[start + k] >= 0; ++k) {
      for (int64_t i = 0; i < classes; ++i) {
        if (is_target[static_cast<size_t>(i)]) continue;
        total += std::max(0.0, 1.0 - (x[start + static_cast<size_t>(y[start + k])] - x[start + i]));
      }
    }
    losses.push_back(total / static_cast<double>(classes));
  }
  return losses;
}

}  // namespace

TEST_CASE("multi_margin_loss matches PyTorch's kernel for p, margin, weight and every reduction") {
  const Tensor x = random_tensor({5, 4}, 1);
  const std::vector<int64_t> classes = {3, 0, 1, 3, 2};
  const Tensor y = from_vector<int64_t>(classes);
  const std::vector<double> weight_values = {0.5, 2.0, 1.0, 3.0};
  const Tensor weight = from_vector<double>(weight_values);
  for (const auto& [p, margin, weighted] : {std::tuple{1, 1.0, false}, std::tuple{2, 0.7, false},
                                             std::tuple{1, 1.5, true}, std::tuple{2, 1.0, true}}) {
    CAPTURE(p);
    CAPTURE(margin);
    CAPTURE(weighted);
    const std::vector<double> losses =
        multi_margin_reference(values_of(x), classes, 4, p, margin, weighted ? weight_values : std::vector<double>{});
    for (Reduction reduction : kLossReductions) {
      const Tensor loss = multi_margin_loss(
          x, y, {.p = p, .margin = margin, .weight = weighted ? weight : Tensor{}, .reduction = reduction});
      check_close(loss, reduced(losses, reduction), 1e-14);
    }
  }
  // torch.nn.MultiMarginLoss's documented example: 0.3250.
  const Tensor example = from_vector<double>({0.1, 0.2, 0.4, 0.8}, {1, 4});
  CHECK(multi_margin_loss(example, from_vector<int64_t>({3})).item() == doctest::Approx(0.325).epsilon(1e-15));
  // A [C] input with a 0-d target is one sample; None gives the target's shape.
  const Tensor single = multi_margin_loss(example.reshape({4}), from_vector<int64_t>({3}).reshape({}),
                                          {.reduction = Reduction::None});
  CHECK(single.dim() == 0);
  CHECK(single.item() == doctest::Approx(0.325).epsilon(1e-15));
  CHECK(multi_margin_loss(x, y, {.reduction = Reduction::None}).sizes() == Dims{5});
  CHECK(multi_margin_loss(x, from_vector<int32_t>({3, 0, 1, 3, 2})).item() == multi_margin_loss(x, y).item());
}

TEST_CASE("multilabel_margin_loss matches PyTorch's kernel: lists end at -1, duplicates count twice") {
  const Tensor x = random_tensor({4, 5}, 2);
  // Row 0 lists 3 and 0; row 1 lists every class; row 2 lists nothing; row 3 lists 2 twice and
  // ignores what follows its -1.
  const std::vector<int64_t> listed = {3, 0, -1, 1, 2, 4, 3, 2, 1, 0, -1, 2, 3, 4, 0, 2, 2, -1, 4, -1};
  const Tensor y = from_vector<int64_t>(listed, {4, 5});
  const std::vector<double> losses = multilabel_margin_reference(values_of(x), listed, 5);
  for (Reduction reduction : kLossReductions)
    check_close(multilabel_margin_loss(x, y, {.reduction = reduction}), reduced(losses, reduction), 1e-14);
  CHECK(losses[1] == 0.0);  // every class listed: no unlisted class to compare with
  CHECK(losses[2] == 0.0);  // none listed
  // torch.nn.MultiLabelMarginLoss's documented example: 0.8500.
  const Tensor example = from_vector<double>({0.1, 0.2, 0.4, 0.8}, {1, 4});
  const Tensor targets = from_vector<int64_t>({3, 0, -1, 1}, {1, 4});
  CHECK(multilabel_margin_loss(example, targets).item() == doctest::Approx(0.85).epsilon(1e-15));
  const Tensor single =
      multilabel_margin_loss(example.reshape({4}), targets.reshape({4}), {.reduction = Reduction::None});
  CHECK(single.dim() == 0);
  CHECK(single.item() == doctest::Approx(0.85).epsilon(1e-15));
  // A 0-d input is one class; PyTorch takes a 0-d or [1] target with it.
  CHECK(multilabel_margin_loss(from_vector<double>({0.5}).reshape({}), from_vector<int64_t>({0})).item() == 0.0);
}

TEST_CASE("the multi-class margin losses leave NaN violations out, as PyTorch's kernels' z > 0 does") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Class 0's violation is NaN; class 2's is 1 - 0 + 0 = 1: 1/3.
  CHECK(multi_margin_loss(from_vector<double>({nan, 0.0, 0.0}, {1, 3}), from_vector<int64_t>({1})).item() ==
        doctest::Approx(1.0 / 3).epsilon(1e-15));
  // The target's own score NaN: every violation is NaN, none counts.
  CHECK(multi_margin_loss(from_vector<double>({0.0, nan, 0.0}, {1, 3}), from_vector<int64_t>({1})).item() == 0.0);
  // Listed 3 and 0 against unlisted 1 (NaN) and 2: the NaN pairs add nothing, class 2 adds
  // 1 - (0.8 - 0.4) and 1 - (0.1 - 0.4).
  const Tensor x = from_vector<double>({0.1, nan, 0.4, 0.8}, {1, 4});
  CHECK(multilabel_margin_loss(x, from_vector<int64_t>({3, 0, -1, 1}, {1, 4})).item() ==
        doctest::Approx((0.6 + 1.3) / 4).epsilon(1e-14));
  // An infinite weight counts only where its sample has a violation: a sample with none adds 0
  // (not 0 * inf = NaN), to the value and to the gradient.
  const double inf = std::numeric_limits<double>::infinity();
  Tensor scores = from_vector<double>({5.0, 0.0, 0.0, 0.0, 0.5, 0.0}, {2, 3}).requires_grad_();
  const Tensor weighted = multi_margin_loss(scores, from_vector<int64_t>({0, 1}),
                                            {.weight = from_vector<double>({inf, 1.0, 1.0})});
  CHECK(weighted.item() == doctest::Approx((0.5 + 0.5) / 3 / 2).epsilon(1e-15));
  weighted.backward();
  for (double g : values_of(scores.grad())) CHECK(std::isfinite(g));
  Tensor leaf = from_vector<double>({nan, 0.0, 0.0}, {1, 3}).requires_grad_();
  multi_margin_loss(leaf, from_vector<int64_t>({1})).backward();
  CHECK(values_of(leaf.grad()) == std::vector<double>{0.0, -1.0 / 3, 1.0 / 3});
}

TEST_CASE("the multi-class margin losses' gradients match finite differences and are 0 at the kink") {
  const Tensor y = from_vector<int64_t>({1, 0, 2});
  const Tensor weight = from_vector<double>({0.5, 2.0, 1.5, 1.0});
  for (Reduction reduction : kLossReductions) {
    CAPTURE(static_cast<int>(reduction));
    gradcheck([&](const std::vector<Tensor>& t) { return multi_margin_loss(t[0], y, {.reduction = reduction}); },
              {random_tensor({3, 4}, 3)});
    gradcheck([&](const std::vector<Tensor>& t) {
      return multi_margin_loss(t[0], y, {.p = 2, .margin = 0.5, .weight = weight, .reduction = reduction});
    }, {random_tensor({3, 4}, 4)});
    const Tensor listed = from_vector<int64_t>({2, 0, -1, 3, 1, 1, 2, 0, -1, 1, 3, 2}, {3, 4});
    gradcheck([&](const std::vector<Tensor>& t) {
      return multilabel_margin_loss(t[0], listed, {.reduction = reduction});
    }, {random_tensor({3, 4}, 5)});
  }
  // z = margin - x[y] + x[i] = 1 - 1 + 0 = 0 exactly: PyTorch's kernels take z > 0, so no gradient.
  Tensor at_kink = from_vector<double>({0.0, 1.0}, {1, 2}).requires_grad_();
  multi_margin_loss(at_kink, from_vector<int64_t>({1})).backward();
  CHECK(values_of(at_kink.grad()) == std::vector<double>{0.0, 0.0});
  Tensor label_kink = from_vector<double>({0.0, 1.0}, {1, 2}).requires_grad_();
  multilabel_margin_loss(label_kink, from_vector<int64_t>({1, -1}, {1, 2})).backward();
  CHECK(values_of(label_kink.grad()) == std::vector<double>{0.0, 0.0});
}

TEST_CASE("MultiMarginLoss and MultiLabelMarginLoss call their functions, and autocast lifts 16-bit inputs") {
  const Tensor x = random_tensor({3, 4}, 6);
  const Tensor y = from_vector<int64_t>({1, 0, 3});
  const Tensor listed = from_vector<int64_t>({2, 0, -1, 3, 1, -1, 2, 0, 3, 3, 2, -1}, {3, 4});
  const Tensor weight = from_vector<double>({0.5, 2.0, 1.5, 1.0});
  nn::MultiMarginLoss multi({.p = 2, .weight = weight, .reduction = Reduction::Sum});
  CHECK(multi->buffers().size() == 1);
  CHECK(multi->name() == "MultiMarginLoss");
  const Tensor expected = multi_margin_loss(x, y, {.p = 2, .weight = weight, .reduction = Reduction::Sum});
  CHECK(values_of(multi(x, y)) == values_of(expected));
  nn::MultiLabelMarginLoss multilabel;
  CHECK(values_of(multilabel(x, listed)) == values_of(multilabel_margin_loss(x, listed)));
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { multilabel(x, y); });
  CHECK(message.find("multilabel_margin_loss: expected a target of the input's shape [3, 4], got shape [3]") !=
        std::string::npos);
  CHECK(names_line(message, "test_losses_multiclass.cpp", line));

  const Tensor half = x.to(kBFloat16);
  CHECK(multi_margin_loss(half, y).dtype() == kBFloat16);
  AutocastGuard autocast(kBFloat16);
  const Tensor lifted = multi_margin_loss(half, y);
  CHECK(lifted.dtype() == kFloat32);
  CHECK(lifted.item() == multi_margin_loss(half.to(kFloat32), y).item());
  CHECK(multilabel_margin_loss(half, listed).dtype() == kFloat32);
}

TEST_CASE("the multi-class margin losses refuse PyTorch's bad arguments, naming the values") {
  const Tensor x = random_tensor({3, 4}, 7);
  const Tensor y = from_vector<int64_t>({1, 0, 3});
  CHECK_THROWS_WITH_AS(multi_margin_loss(x, y, {.p = 3}),
                       doctest::Contains("multi_margin_loss: only p = 1 and p = 2 are supported, got p = 3"), Error);
  CHECK_THROWS_WITH_AS(multi_margin_loss(x, from_vector<int64_t>({1, 4, 0})),
                       doctest::Contains("multi_margin_loss: target 4 is out of range for 4 classes"), Error);
  CHECK_THROWS_WITH_AS(multi_margin_loss(x, from_vector<int64_t>({1, -1, 0})),
                       doctest::Contains("multi_margin_loss: target -1 is out of range for 4 classes"), Error);
  CHECK_THROWS_WITH_AS(multi_margin_loss(x, from_vector<int64_t>({1, 0})),
                       doctest::Contains("multi_margin_loss: expected a target of 3 class indices for an input of "
                                         "shape [3, 4], got shape [2]"),
                       Error);
  CHECK_THROWS_WITH_AS(multi_margin_loss(x, from_vector<double>({1, 0, 3})),
                       doctest::Contains("multi_margin_loss: target must hold class indices as int64 or int32, got "
                                         "float64"),
                       Error);
  CHECK_THROWS_WITH_AS(multi_margin_loss(x, y, {.weight = from_vector<double>({1.0, 2.0})}),
                       doctest::Contains("multi_margin_loss: expected a floating weight of 4 elements (one per class), "
                                         "got float64 of shape [2]"),
                       Error);
  CHECK_THROWS_WITH_AS(multi_margin_loss(random_tensor({2, 3, 4}, 8), y),
                       doctest::Contains("multi_margin_loss: expected a 0-d, [C] or [N, C] input with C > 0, got "
                                         "shape [2, 3, 4]"),
                       Error);
  CHECK_THROWS_WITH_AS(multi_margin_loss(from_vector<int64_t>({1, 2}), from_vector<int64_t>({0}).reshape({})),
                       doctest::Contains("multi_margin_loss: input must be a floating-point tensor, got int64"), Error);
  CHECK_THROWS_WITH_AS(
      multilabel_margin_loss(x, from_vector<int64_t>({1, 4, -1, 0, 0, 1, 2, 3, 3, 2, 1, 0}, {3, 4})),
      doctest::Contains("multilabel_margin_loss: target 4 is out of range for 4 classes (-1 ends a row's list)"),
      Error);
  // PyTorch checks the entries after a row's -1 too, and refuses -2.
  CHECK_THROWS_WITH_AS(multilabel_margin_loss(x, from_vector<int64_t>({1, -1, 9, 9, 0, 1, 2, 3, -1, 2, 1, 0}, {3, 4})),
                       doctest::Contains("multilabel_margin_loss: target 9 is out of range"), Error);
  CHECK_THROWS_WITH_AS(multilabel_margin_loss(x, from_vector<int64_t>({1, -2, 0, 0, 0, 1, 2, 3, -1, 2, 1, 0}, {3, 4})),
                       doctest::Contains("multilabel_margin_loss: target -2 is out of range"), Error);
}

}  // namespace test_losses_multiclass
