// triplet_margin_with_distance_loss (runtime/functional_losses_margin.cpp) and its module:
// float64 loops of PyTorch's composite for the default distance and a custom one, with and
// without swap, every reduction, gradients by finite differences, autocast and the errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "composite_loss_checks.h"
#include "error_of.h"
#include "numeric_check.h"

namespace test_losses_triplet_distance {

using namespace ember;
using namespace ember::testing;

namespace {

constexpr int kRows = 4, kWidth = 3;

// Row `row`'s Euclidean distance with pairwise_distance's eps added to the difference.
double euclidean(const std::vector<double>& u, const std::vector<double>& v, int row) {
  double total = 0.0;
  for (int d = 0; d < kWidth; ++d) total += std::pow(u[row * kWidth + d] - v[row * kWidth + d] + 1e-6, 2);
  return std::sqrt(total);
}

// The custom distance of the tests: 1 - cosine similarity, as written in a float64 loop.
double cosine_distance(const std::vector<double>& u, const std::vector<double>& v, int row) {
  double dot = 0.0, uu = 0.0, vv = 0.0;
  for (int d = 0; d < kWidth; ++d) {
    dot += u[row * kWidth + d] * v[row * kWidth + d];
    uu += u[row * kWidth + d] * u[row * kWidth + d];
    vv += v[row * kWidth + d] * v[row * kWidth + d];
  }
  return 1.0 - dot / std::sqrt(uu * vv);
}

// The same as ember ops, for the distance_function option.
Tensor cosine_distance_of(const Tensor& x1, const Tensor& x2) {
  const Tensor dot = sum(mul(x1, x2), {-1});
  return rsub(div(dot, sqrt(mul(sum(mul(x1, x1), {-1}), sum(mul(x2, x2), {-1})))), 1.0);
}

using RowDistance = double (*)(const std::vector<double>&, const std::vector<double>&, int);

std::vector<double> triplet_reference(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                                      RowDistance distance, double margin, bool swap) {
  const std::vector<double> a = values_of(anchor), p = values_of(positive), n = values_of(negative);
  std::vector<double> losses;
  for (int row = 0; row < kRows; ++row) {
    double to_negative = distance(a, n, row);
    if (swap) to_negative = std::min(to_negative, distance(p, n, row));
    losses.push_back(std::max(0.0, margin + distance(a, p, row) - to_negative));
  }
  return losses;
}

}  // namespace

TEST_CASE("triplet_margin_with_distance_loss follows PyTorch's composite for any distance and swap") {
  const Tensor anchor = random_tensor({kRows, kWidth}, 31), positive = random_tensor({kRows, kWidth}, 32);
  const Tensor negative = random_tensor({kRows, kWidth}, 33);
  for (bool swap : {false, true}) {
    for (Reduction reduction : kLossReductions) {
      INFO("swap " << swap << " reduction " << static_cast<int>(reduction));
      // The default distance is pairwise_distance (p = 2, eps = 1e-6), triplet_margin_loss's.
      const std::vector<double> euclidean_losses = triplet_reference(anchor, positive, negative, euclidean, 1.5, swap);
      check_close(triplet_margin_with_distance_loss(anchor, positive, negative,
                                                    {.margin = 1.5, .swap = swap, .reduction = reduction}),
                  reduced(euclidean_losses, reduction), 1e-13);
      const std::vector<double> cosine_losses =
          triplet_reference(anchor, positive, negative, cosine_distance, 0.4, swap);
      check_close(triplet_margin_with_distance_loss(anchor, positive, negative,
                                                    {.distance_function = cosine_distance_of,
                                                     .margin = 0.4,
                                                     .swap = swap,
                                                     .reduction = reduction}),
                  reduced(cosine_losses, reduction), 1e-13);
    }
  }
  // Swap matters for these inputs (the swapped distance is the smaller for some row).
  const std::vector<double> plain = triplet_reference(anchor, positive, negative, cosine_distance, 0.4, false);
  const std::vector<double> swapped = triplet_reference(anchor, positive, negative, cosine_distance, 0.4, true);
  CHECK(plain != swapped);
  check_close(triplet_margin_with_distance_loss(anchor, positive, negative),
              {values_of(triplet_margin_loss(anchor, positive, negative))[0]}, 1e-15);
}

TEST_CASE("triplet_margin_with_distance_loss's gradients match finite differences") {
  for (Reduction reduction : kLossReductions) {
    INFO("reduction " << static_cast<int>(reduction));
    gradcheck([&](const std::vector<Tensor>& t) {
      return triplet_margin_with_distance_loss(t[0], t[1], t[2], {.margin = 3.0, .swap = true, .reduction = reduction});
    }, {random_tensor({kRows, kWidth}, 34), random_tensor({kRows, kWidth}, 35), random_tensor({kRows, kWidth}, 36)});
    gradcheck([&](const std::vector<Tensor>& t) {
      return triplet_margin_with_distance_loss(
          t[0], t[1], t[2], {.distance_function = cosine_distance_of, .margin = 0.7, .reduction = reduction});
    }, {random_tensor({kRows, kWidth}, 37), random_tensor({kRows, kWidth}, 38), random_tensor({kRows, kWidth}, 39)});
  }
}

TEST_CASE("TripletMarginWithDistanceLoss calls its function with a lambda distance and swap") {
  const Tensor anchor = random_tensor({kRows, kWidth}, 40), positive = random_tensor({kRows, kWidth}, 41);
  const Tensor negative = random_tensor({kRows, kWidth}, 42);
  int calls = 0;
  const auto l1_distance = [&calls](const Tensor& x1, const Tensor& x2) {
    ++calls;
    return sum(abs(sub(x1, x2)), {-1});
  };
  nn::TripletMarginWithDistanceLoss loss({.distance_function = l1_distance, .margin = 2.0, .swap = true});
  CHECK(loss->name() == "TripletMarginWithDistanceLoss");
  CHECK(loss->options().swap);
  const auto l1 = [](const std::vector<double>& u, const std::vector<double>& v, int row) {
    double total = 0.0;
    for (int d = 0; d < kWidth; ++d) total += std::abs(u[row * kWidth + d] - v[row * kWidth + d]);
    return total;
  };
  check_close(loss(anchor, positive, negative),
              reduced(triplet_reference(anchor, positive, negative, l1, 2.0, true), Reduction::Mean), 1e-14);
  CHECK(calls == 3);  // anchor-positive, anchor-negative, positive-negative
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { loss(anchor, positive, negative.select(0, 0)); });
  CHECK(message.find("triplet_margin_with_distance_loss: the anchor, positive, and negative tensors are expected to "
                     "have the same number of dimensions, but got: anchor 2D, positive 2D, and negative 1D inputs") !=
        std::string::npos);
  CHECK(names_line(message, "test_losses_triplet_distance.cpp", line));
}

TEST_CASE("triplet_margin_with_distance_loss keeps the distance's dtype and refuses PyTorch's bad arguments") {
  const Tensor x = random_tensor({kRows, kWidth}, 43);
  // The default distance computes a 16-bit input in float32 under autocast, as norm does.
  {
    AutocastGuard autocast(kBFloat16);
    CHECK(triplet_margin_with_distance_loss(x.to(kBFloat16), x.to(kBFloat16), x.to(kBFloat16)).dtype() == kFloat32);
  }
  CHECK(triplet_margin_with_distance_loss(x.to(kFloat32), x.to(kFloat32), x.to(kFloat32)).dtype() == kFloat32);
  CHECK_THROWS_WITH_AS(triplet_margin_with_distance_loss(x, x, x, {.margin = 0.0}),
                       doctest::Contains("triplet_margin_with_distance_loss: expected margin to be greater than 0, "
                                         "got 0 instead"),
                       Error);
  CHECK_THROWS_WITH_AS(triplet_margin_with_distance_loss(x, x, x, {.margin = -1.5}),
                       doctest::Contains("expected margin to be greater than 0, got -1.5 instead"), Error);
  CHECK_THROWS_WITH_AS(triplet_margin_with_distance_loss(x.select(0, 1), x, x),
                       doctest::Contains("but got: anchor 1D, positive 2D, and negative 2D inputs"), Error);
  CHECK_THROWS_WITH_AS(triplet_margin_with_distance_loss(x, Tensor{}, x),
                       doctest::Contains("triplet_margin_with_distance_loss: positive is an undefined tensor"), Error);
  CHECK_THROWS_WITH_AS(triplet_margin_with_distance_loss(x, x, x, {.reduction = Reduction::BatchMean}),
                       doctest::Contains("triplet_margin_with_distance_loss: reduction BatchMean is kl_div's only"),
                       Error);
}

}  // namespace test_losses_triplet_distance
