// The margin and embedding losses (runtime/functional_losses_margin.cpp): float64 loops of
// PyTorch's formulas for every reduction, gradients by finite differences, the modules, autocast
// and the argument errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "composite_loss_checks.h"
#include "error_of.h"
#include "numeric_check.h"

namespace test_losses_margin {

using namespace ember;
using namespace ember::testing;

namespace {

// 1 or -1 for each element (and a 0 where `with_zero` says so, every fourth element).
Tensor signs(const Dims& sizes, uint32_t seed, bool with_zero = false) {
  std::vector<double> values = random_values(sizes.product(), seed);
  for (size_t i = 0; i < values.size(); ++i) values[i] = with_zero && i % 4 == 3 ? 0.0 : (values[i] > 0 ? 1.0 : -1.0);
  return from_vector<double>(values, sizes);
}

double log_sigmoid(double x) { return x >= 0 ? -std::log1p(std::exp(-x)) : x - std::log1p(std::exp(x)); }

}  // namespace

TEST_CASE("margin_ranking_loss, hinge_embedding_loss and soft_margin_loss match PyTorch's formulas") {
  const Tensor x1 = random_tensor({3, 4}, 1), x2 = random_tensor({3, 4}, 2), y = signs({3, 4}, 3);
  const Tensor y_with_zero = signs({3, 4}, 4, true);
  const std::vector<double> a = values_of(x1), b = values_of(x2), t = values_of(y), t0 = values_of(y_with_zero);
  std::vector<double> ranking, hinge, soft;
  for (size_t i = 0; i < a.size(); ++i) {
    ranking.push_back(std::max(0.0, -t[i] * (a[i] - b[i]) + 0.5));
    hinge.push_back((t0[i] != 1.0 ? std::max(0.0, 1.5 - a[i]) : 0.0) + (t0[i] != -1.0 ? a[i] : 0.0));
    soft.push_back(std::log1p(std::exp(-t[i] * a[i])));
  }
  for (Reduction reduction : kLossReductions) {
    INFO("reduction " << static_cast<int>(reduction));
    check_close(margin_ranking_loss(x1, x2, y, {.margin = 0.5, .reduction = reduction}), reduced(ranking, reduction),
                1e-14);
    check_close(hinge_embedding_loss(x1, y_with_zero, {.margin = 1.5, .reduction = reduction}),
                reduced(hinge, reduction), 1e-14);
    check_close(soft_margin_loss(x1, y, {.reduction = reduction}), reduced(soft, reduction), 1e-14);
  }
  // An int64 target works as PyTorch's (promoted), and soft_margin stays finite past exp's range.
  check_close(margin_ranking_loss(x1, x2, y.to(kInt64), {.margin = 0.5}), reduced(ranking, Reduction::Mean), 1e-14);
  const Tensor far = soft_margin_loss(from_vector<float>({-200.0f, 200.0f}), from_vector<float>({1.0f, 1.0f}),
                                      {.reduction = Reduction::None});
  check_close(far, {200.0, 0.0}, 1e-6);
}

TEST_CASE("multilabel_soft_margin_loss is the class mean of the weighted binary losses per sample") {
  const Tensor x = mul(random_tensor({3, 4}, 5), 3.0);
  const Tensor y = from_vector<double>({1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0}, {3, 4});
  const std::vector<double> weight{0.5, 2.0, 1.0, 3.0};
  const std::vector<double> xs = values_of(x), ys = values_of(y);
  for (bool weighted : {false, true}) {
    std::vector<double> losses;
    for (int n = 0; n < 3; ++n) {
      double total = 0.0;
      for (int c = 0; c < 4; ++c) {
        const double v = xs[n * 4 + c], t = ys[n * 4 + c];
        total += -(weighted ? weight[c] : 1.0) * (t * log_sigmoid(v) + (1 - t) * log_sigmoid(-v));
      }
      losses.push_back(total / 4.0);
    }
    for (Reduction reduction : kLossReductions) {
      INFO("weighted " << weighted << " reduction " << static_cast<int>(reduction));
      const Tensor w = weighted ? from_vector<double>(weight) : Tensor();
      check_close(multilabel_soft_margin_loss(x, y, {.weight = w, .reduction = reduction}), reduced(losses, reduction),
                  1e-14);
    }
  }
}

TEST_CASE("cosine_embedding_loss follows PyTorch's cosine (with its 1e-12) for 1-D and 0-d targets") {
  const Tensor x1 = random_tensor({3, 5}, 6), x2 = random_tensor({3, 5}, 7);
  const Tensor y = from_vector<double>({1.0, -1.0, 0.0});
  const std::vector<double> a = values_of(x1), b = values_of(x2);
  std::vector<double> losses;
  for (int n = 0; n < 3; ++n) {
    double dot = 0.0, aa = 1e-12, bb = 1e-12;
    for (int d = 0; d < 5; ++d) {
      dot += a[n * 5 + d] * b[n * 5 + d];
      aa += a[n * 5 + d] * a[n * 5 + d];
      bb += b[n * 5 + d] * b[n * 5 + d];
    }
    const double cosine = dot / std::sqrt(aa * bb);
    const double target = values_of(y)[n];
    losses.push_back(target == 1.0 ? 1.0 - cosine : target == -1.0 ? std::max(0.0, cosine - 0.1) : 0.0);
  }
  for (Reduction reduction : kLossReductions) {
    INFO("reduction " << static_cast<int>(reduction));
    check_close(cosine_embedding_loss(x1, x2, y, {.margin = 0.1, .reduction = reduction}), reduced(losses, reduction),
                1e-14);
  }
  check_close(cosine_embedding_loss(x1.select(0, 0), x2.select(0, 0), scalar_tensor(1.0)), {losses[0]}, 1e-14);
  // A zero vector has cosine 0 (the 1e-12 keeps it from 0 / 0).
  check_close(cosine_embedding_loss(zeros({1, 3}, {.dtype = kFloat64}), x1.slice(1, 0, 3).slice(0, 0, 1),
                                    from_vector<double>({1.0})),
              {1.0}, 1e-14);
}

TEST_CASE("triplet_margin_loss uses pairwise_distance (eps added to the difference), p-norms and swap") {
  const Tensor anchor = random_tensor({4, 3}, 8), positive = random_tensor({4, 3}, 9);
  const Tensor negative = random_tensor({4, 3}, 10);
  const std::vector<double> a = values_of(anchor), p = values_of(positive), q = values_of(negative);
  auto distance = [](const std::vector<double>& u, const std::vector<double>& v, int row, double norm) {
    double total = 0.0;
    for (int d = 0; d < 3; ++d) total += std::pow(std::abs(u[row * 3 + d] - v[row * 3 + d] + 1e-6), norm);
    return std::pow(total, 1.0 / norm);
  };
  for (double norm : {2.0, 1.0}) {
    for (bool swap : {false, true}) {
      std::vector<double> losses;
      for (int row = 0; row < 4; ++row) {
        double to_negative = distance(a, q, row, norm);
        if (swap) to_negative = std::min(to_negative, distance(p, q, row, norm));
        losses.push_back(std::max(0.0, 1.0 + distance(a, p, row, norm) - to_negative));
      }
      for (Reduction reduction : kLossReductions) {
        INFO("p " << norm << " swap " << swap << " reduction " << static_cast<int>(reduction));
        check_close(triplet_margin_loss(anchor, positive, negative, {.p = norm, .swap = swap, .reduction = reduction}),
                    reduced(losses, reduction), 1e-13);
      }
    }
  }
  const Tensor distances = pairwise_distance(anchor, positive, 2.0, 1e-6, true);
  CHECK(distances.sizes() == Dims{4, 1});
  check_close(distances, {distance(a, p, 0, 2.0), distance(a, p, 1, 2.0), distance(a, p, 2, 2.0), distance(a, p, 3, 2.0)},
              1e-14);
}

TEST_CASE("gradients of the margin and embedding losses match finite differences") {
  for (Reduction reduction : kLossReductions) {
    INFO("reduction " << static_cast<int>(reduction));
    const Tensor y = signs({3, 4}, 11);
    gradcheck([&](const std::vector<Tensor>& t) {
      return margin_ranking_loss(t[0], t[1], y, {.margin = 0.3, .reduction = reduction});
    }, {random_tensor({3, 4}, 12), random_tensor({3, 4}, 13)});
    gradcheck([&](const std::vector<Tensor>& t) {
      return hinge_embedding_loss(t[0], signs({3, 4}, 14, true), {.margin = 0.7, .reduction = reduction});
    }, {random_tensor({3, 4}, 15)});
    gradcheck([&](const std::vector<Tensor>& t) { return soft_margin_loss(t[0], y, {.reduction = reduction}); },
              {random_tensor({3, 4}, 16)});
    gradcheck([&](const std::vector<Tensor>& t) {
      return multilabel_soft_margin_loss(t[0], t[1], {.weight = from_vector<double>({0.5, 2.0, 1.0, 3.0}),
                                                      .reduction = reduction});
    }, {random_tensor({3, 4}, 17), softmax(random_tensor({3, 4}, 18), 1)});
    gradcheck([&](const std::vector<Tensor>& t) {
      return cosine_embedding_loss(t[0], t[1], from_vector<double>({1.0, -1.0, -1.0}),
                                   {.margin = -0.9, .reduction = reduction});
    }, {random_tensor({3, 5}, 19), random_tensor({3, 5}, 20)});
    gradcheck([&](const std::vector<Tensor>& t) {
      return triplet_margin_loss(t[0], t[1], t[2], {.margin = 5.0, .p = 3.0, .swap = true, .reduction = reduction});
    }, {random_tensor({3, 4}, 21), random_tensor({3, 4}, 22), random_tensor({3, 4}, 23)});
  }
}

TEST_CASE("the margin loss modules call their functions with their options, and compute in float32 under autocast") {
  const Tensor x1 = random_tensor({3, 4}, 24), x2 = random_tensor({3, 4}, 25), x3 = random_tensor({3, 4}, 26);
  const Tensor y = signs({3, 4}, 27), rows = signs({3}, 28);
  auto same = [](const Tensor& a, const Tensor& b) { return values_of(a) == values_of(b); };
  CHECK(same(nn::MarginRankingLoss({.margin = 0.2})(x1, x2, y), margin_ranking_loss(x1, x2, y, {.margin = 0.2})));
  CHECK(same(nn::HingeEmbeddingLoss({.reduction = Reduction::Sum})(x1, y),
             hinge_embedding_loss(x1, y, {.reduction = Reduction::Sum})));
  CHECK(same(nn::SoftMarginLoss()(x1, y), soft_margin_loss(x1, y)));
  const Tensor weight = from_vector<double>({0.5, 2.0, 1.0, 3.0});
  nn::MultiLabelSoftMarginLoss multilabel({.weight = weight});
  CHECK(multilabel->buffers().size() == 1);
  CHECK(same(multilabel(x1, sigmoid(x2)), multilabel_soft_margin_loss(x1, sigmoid(x2), {.weight = weight})));
  CHECK(same(nn::CosineEmbeddingLoss({.margin = 0.1})(x1, x2, rows), cosine_embedding_loss(x1, x2, rows, {.margin = 0.1})));
  nn::TripletMarginLoss triplet({.margin = 0.5, .swap = true});
  CHECK(same(triplet(x1, x2, x3), triplet_margin_loss(x1, x2, x3, {.margin = 0.5, .swap = true})));
  CHECK(triplet->name() == "TripletMarginLoss");
  // The caller's line, through the three-tensor call.
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { triplet(x1, x2, x3.select(0, 0)); });
  CHECK(message.find("triplet_margin_loss: anchor, positive and negative must have one number of dims") !=
        std::string::npos);
  CHECK(names_line(message, "test_losses_margin.cpp", line));

  AutocastGuard autocast(kBFloat16);
  const Tensor h1 = x1.to(kBFloat16), h2 = x2.to(kBFloat16), h3 = x3.to(kBFloat16);
  CHECK(margin_ranking_loss(h1, h2, y.to(kBFloat16)).dtype() == kFloat32);
  CHECK(cosine_embedding_loss(h1, h2, rows).dtype() == kFloat32);
  CHECK(triplet_margin_loss(h1, h2, h3).dtype() == kFloat32);
  CHECK(soft_margin_loss(h1, y.to(kBFloat16)).dtype() == kFloat32);
}

TEST_CASE("the margin and embedding losses refuse PyTorch's bad arguments, naming the values") {
  const Tensor x = random_tensor({3, 4}, 29);
  CHECK_THROWS_WITH_AS(margin_ranking_loss(x, x, signs({3}, 30)),
                       doctest::Contains("margin_ranking_loss: input1, input2 and target must have one number of "
                                         "dims, got shapes [3, 4], [3, 4] and [3]"),
                       Error);
  CHECK_THROWS_WITH_AS(cosine_embedding_loss(x, x, signs({3, 4}, 31)),
                       doctest::Contains("cosine_embedding_loss: expected a 0-d or 1-D target, got shape [3, 4]"),
                       Error);
  CHECK_THROWS_WITH_AS(cosine_embedding_loss(x, x, scalar_tensor(1.0)),
                       doctest::Contains("cosine_embedding_loss: a 0-D target expects 1-D inputs, got shapes [3, 4] "
                                         "and [3, 4]"),
                       Error);
  CHECK_THROWS_WITH_AS(multilabel_soft_margin_loss(x, zeros({3, 5}, {.dtype = kFloat64})),
                       doctest::Contains("multilabel_soft_margin_loss: shapes [3, 4] and [3, 5]"), Error);
  CHECK_THROWS_WITH_AS(multilabel_soft_margin_loss(scalar_tensor(1.0), scalar_tensor(1.0)),
                       doctest::Contains("multilabel_soft_margin_loss: expected an input with a class dim (its "
                                         "last), got a 0-d tensor"),
                       Error);
  CHECK_THROWS_WITH_AS(soft_margin_loss(x, ones({2, 3, 4})),
                       doctest::Contains("soft_margin_loss: target of shape [2, 3, 4] must broadcast to the input's "
                                         "shape [3, 4]"),
                       Error);
  CHECK_THROWS_WITH_AS(soft_margin_loss(ones({2}, {.dtype = kInt64}), ones({2})),
                       doctest::Contains("soft_margin_loss: input must be a floating-point tensor, got int64"), Error);
  CHECK_THROWS_WITH_AS(margin_ranking_loss(x, x, ones({3, 4}, {.dtype = kBool})),
                       doctest::Contains("margin_ranking_loss: target must hold 1 or -1 as numbers, got bool"), Error);
  CHECK_THROWS_WITH_AS(hinge_embedding_loss(x, Tensor()),
                       doctest::Contains("hinge_embedding_loss: target is an undefined tensor"), Error);
  CHECK_THROWS_WITH_AS(triplet_margin_loss(x, x, x, {.reduction = static_cast<Reduction>(7)}),
                       doctest::Contains("triplet_margin_loss: reduction must be None (0), Mean (1) or Sum (2), got 7"),
                       Error);
}

TEST_CASE("the margin losses take PyTorch's other operands: bool targets, wider targets, more dims, 0-d tensors") {
  const Tensor x = random_tensor({3, 4}, 32);
  // A bool target is compared or multiplied, as in PyTorch: false is neither 1 nor -1 for hinge.
  const Tensor flags = from_vector<bool>({true, false, true, false, true, false, true, false, true, false, true, false},
                                         {3, 4});
  check_close(hinge_embedding_loss(x, flags, {.reduction = Reduction::None}),
              values_of(hinge_embedding_loss(x, flags.to(kFloat64), {.reduction = Reduction::None})), 0.0);
  check_close(soft_margin_loss(x, flags), values_of(soft_margin_loss(x, flags.to(kFloat64))), 1e-15);
  const Tensor rows = from_vector<bool>({true, false, true});
  check_close(cosine_embedding_loss(x, x.flip({1}), rows, {.reduction = Reduction::None}),
              values_of(cosine_embedding_loss(x, x.flip({1}), rows.to(kFloat64), {.reduction = Reduction::None})), 0.0);
  // soft_margin_loss keeps the input's dtype with a float64 target (PyTorch's in-place result).
  const Tensor x32 = x.to(kFloat32);
  const Tensor y = signs({3, 4}, 33);
  CHECK(soft_margin_loss(x32, y).dtype() == kFloat32);
  // multilabel_soft_margin_loss over [..., C] with a broadcast target and an integer weight.
  const Tensor x3 = random_tensor({2, 3, 4}, 34);
  const Tensor target = from_vector<double>({1.0, 0.0, 1.0, 1.0});
  const Tensor weight = from_vector<int64_t>({1, 2, 1, 3});
  const Tensor none = multilabel_soft_margin_loss(x3, target, {.weight = weight, .reduction = Reduction::None});
  CHECK(none.sizes() == Dims{2, 3});
  const Tensor full_target = target.expand({2, 3, 4}).contiguous();
  check_close(none, values_of(multilabel_soft_margin_loss(x3, full_target,
                                                          {.weight = weight.to(kFloat64), .reduction = Reduction::None})),
              1e-15);
  // Two 0-d tensors: the distance is |x1 - x2 + eps|, and a triplet of them runs.
  auto scalar = [](double value) { return scalar_tensor(value, {.dtype = kFloat64}); };
  check_close(pairwise_distance(scalar(1.0), scalar(3.0)), {2.0 - 1e-6}, 1e-15);
  check_close(triplet_margin_loss(scalar(2.0), scalar(2.5), scalar(2.6)), {1.0 + (0.5 - 1e-6) - (0.6 - 1e-6)}, 1e-15);
}

TEST_CASE("the softplus forms have sigmoid's curvature at a zero logit: 1/4, as PyTorch's") {
  // A zero-initialised head: a Hessian through these losses at x = 0 must not vanish.
  const Tensor x = zeros({2}, {.dtype = kFloat64}).requires_grad_();
  const Tensor y = from_vector<double>({1.0, -1.0}), labels = from_vector<double>({1.0, 0.0});
  auto curvature = [&](const Tensor& loss) {
    const Tensor first = autograd::grad({loss}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
    return values_of(autograd::grad({first.sum()}, {x})[0]);
  };
  CHECK(curvature(soft_margin_loss(x, y, {.reduction = Reduction::Sum})) == std::vector<double>{0.25, 0.25});
  CHECK(curvature(binary_cross_entropy_with_logits(x, labels, {}, Reduction::Sum)) == std::vector<double>{0.25, 0.25});
  CHECK(curvature(multilabel_soft_margin_loss(x, labels, {.reduction = Reduction::Sum})) ==
        std::vector<double>{0.125, 0.125});  // the mean over the 2 classes
}

}  // namespace test_losses_margin
