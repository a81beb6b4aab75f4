// torch.diagonal's gradients (runtime/ops/diagonal_ops.cpp's backward): central differences of
// reads, of in-place updates through the view and of its base, and second derivatives.
#include <doctest/doctest.h>

#include <cmath>
#include <optional>
#include <vector>

#include "diagonal_reference.h"
#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_diagonal_autograd {

using namespace ember;
using ember::testing::diagonal_positions;
using ember::testing::gradcheck_leaves;
using ember::testing::leaf;
using ember::testing::small_tensor;
using ember::testing::values_of;

TEST_CASE("diagonal: gradients equal central differences") {
  using Inputs = std::vector<Tensor>;
  gradcheck_leaves([](const Inputs& in) { return diagonal(in[0]).exp(); }, {leaf({3, 4}, 30)});
  gradcheck_leaves([](const Inputs& in) { return diagonal(in[0], 2).exp(); }, {leaf({3, 4}, 31)});
  gradcheck_leaves([](const Inputs& in) { return diagonal(in[0], -1).exp(); }, {leaf({3, 4}, 32)});
  gradcheck_leaves([](const Inputs& in) { return diagonal(in[0].t(), 1, 1, 0).exp(); }, {leaf({3, 4}, 33)});
  gradcheck_leaves([](const Inputs& in) { return diagonal(in[0], 1, 0, 2).tanh(); }, {leaf({2, 3, 4}, 34)});
  gradcheck_leaves([](const Inputs& in) { return diagonal(in[0], -1, -1, -3).tanh(); }, {leaf({3, 2, 4}, 35)});
  gradcheck_leaves([](const Inputs& in) { return diagonal(in[0].slice(1, 1, 5, 2), 0, 0, 1).exp(); },
                   {leaf({3, 5}, 36)});
  // A diagonal read twice, and the diagonal of a diagonal (a 4-D input).
  gradcheck_leaves([](const Inputs& in) { return diagonal(in[0]).mul(diagonal(in[0], 1)); }, {leaf({3, 4}, 37)});
  gradcheck_leaves([](const Inputs& in) { return diagonal(diagonal(in[0], 0, 0, 2), 0, 0, 1).exp(); },
            {leaf({3, 2, 3, 2}, 38)});
  // The offset past the plane: an empty result, so every gradient is 0.
  Tensor x = leaf({3, 4}, 39);
  diagonal(x, 5).sum().backward();
  REQUIRE(x.grad().defined());
  CHECK(x.grad().sizes() == Dims{3, 4});
  for (double g : values_of(x.grad())) CHECK(g == 0.0);
}

TEST_CASE("diagonal: in-place updates through the view and of its base differentiate as the values") {
  using Inputs = std::vector<Tensor>;
  // Through the view: the base's gradient passes the update's backward on the diagonal (CopySlices).
  gradcheck_leaves(
      [](const Inputs& in) {
        Tensor t = mul(in[0], 2.0);
        t.diagonal(1).mul_(in[1]);
        return mul(t, exp(t));
      },
      {leaf({3, 4}, 40), leaf({3}, 41)});
  gradcheck_leaves(
      [](const Inputs& in) {
        Tensor t = mul(in[0], 1.5);
        t.transpose(0, 2).diagonal(-1, 0, 1).copy_(tanh(in[1]));  // overwritten: no gradient to in[0] there
        t.diagonal(0, -1, 0).fill_(0.25);
        return mul(t, t);
      },
      {leaf({2, 3, 3}, 42), leaf({2, 2}, 43)});
  // Of the base after the view was taken: the view's history is remade from the base's.
  gradcheck_leaves(
      [](const Inputs& in) {
        Tensor t = mul(in[0], 2.0);
        const Tensor view = t.diagonal(-1);
        t.mul_(in[1]);
        return add(exp(view), sum(t));
      },
      {leaf({4, 3}, 44), leaf({4, 3}, 45)});
}

TEST_CASE("diagonal: in-place updates through views of diagonal views differentiate as the values") {
  using Inputs = std::vector<Tensor>;
  // The diagonal of a diagonal (a[i, i, i]) updated in place: CopySlices over two view levels.
  gradcheck_leaves(
      [](const Inputs& in) {
        Tensor t = mul(in[0], 2.0);
        t.diagonal(0, 0, 1).diagonal(0, 0, 1).mul_(in[1]);
        return mul(t, t);
      },
      {leaf({3, 3, 3}, 46), leaf({3}, 47)});
  // A view of a view taken first, its base updated after: the view's history is remade twice.
  gradcheck_leaves(
      [](const Inputs& in) {
        Tensor t = mul(in[0], 2.0);
        const Tensor view = t.diagonal(1, 0, 2).diagonal(0, 0, 1);
        t.mul_(in[1]);
        return add(exp(view), sum(t));
      },
      {leaf({3, 3, 4}, 48), leaf({3, 3, 4}, 49)});
  // Through a permuted, sliced base (a storage offset), then a second write read back through the first.
  gradcheck_leaves(
      [](const Inputs& in) {
        Tensor t = mul(in[0], 1.0);
        t.permute({2, 0, 1}).slice(1, 1, 3).diagonal(-1, 1, 2).add_(in[1]);
        Tensor d = t.diagonal(0, 1, 2);
        d.mul_(sum(in[1]));
        t.transpose(1, 2).diagonal(1, 1, 2).copy_(d.slice(1, 0, 3));
        return mul(t, exp(t));
      },
      {leaf({3, 4, 4}, 70), leaf({4, 1}, 71)});
}

TEST_CASE("diagonal: the view shares its base's version, so a stale saved tensor is refused as in PyTorch") {
  // pow saves its input: the view saved, then the base written; the base saved, then the view written.
  Tensor x = leaf({3, 3}, 72);
  Tensor base = exp(x);
  const Tensor from_view = pow(base.diagonal(), 2.0);
  base.mul_(2.0);
  CHECK_THROWS_WITH_AS(sum(from_view).backward(), doctest::Contains("modified by an in-place operation"), Error);
  Tensor other = exp(x);
  const Tensor from_base = pow(other, 2.0);
  other.diagonal(1).mul_(2.0);
  CHECK_THROWS_WITH_AS(sum(from_base).backward(), doctest::Contains("modified by an in-place operation"), Error);
}

TEST_CASE("diagonal: the gradient reaches its positions also from a strided upstream gradient") {
  Tensor x = leaf({4, 5}, 73);
  const Tensor upstream = small_tensor({6}, 74).slice(0, 0, 6, 2);  // [3], stride 2
  diagonal(x.t(), -1, 1, 0).backward(upstream);                     // x[i + 1, i]: x's diagonal -1
  std::vector<double> expected(20, 0.0);
  Dims sizes;
  const std::vector<int64_t> positions = diagonal_positions({4, 5}, -1, 0, 1, sizes);
  for (size_t k = 0; k < positions.size(); ++k) expected[positions[k]] = values_of(upstream)[k];
  CHECK(values_of(x.grad()) == expected);
}

TEST_CASE("diagonal: second derivatives equal central differences of the first") {
  // L = sum(w * diagonal(x)^3) and s = sum(v * dL/dx): d s / d x by double backward against
  // central differences of s computed from first-order gradients.
  struct Plane {
    Dims sizes;
    int64_t offset, dim1, dim2;
  };
  const Plane planes[] = {{{3, 4}, 1, 0, 1}, {{3, 4}, -1, 1, 0}, {{2, 3, 4}, 0, 2, 0}};
  uint32_t seed = 50;
  for (const Plane& plane : planes) {
    INFO("shape ", plane.sizes, ", offset ", plane.offset, ", dims ", plane.dim1, ", ", plane.dim2);
    Tensor x = leaf(plane.sizes, seed++);
    const Tensor v = small_tensor(plane.sizes, seed++);
    Dims diagonal_sizes;
    diagonal_positions(plane.sizes, plane.offset, plane.dim1, plane.dim2, diagonal_sizes);
    const Tensor w = small_tensor(diagonal_sizes, seed++);
    const auto loss = [&](const Tensor& input) {
      return sum(mul(w, pow(diagonal(input, plane.offset, plane.dim1, plane.dim2), 3.0)));
    };
    const auto directional = [&](const Tensor& input, bool create_graph) {
      const Tensor first = autograd::grad({loss(input)}, {input}, {}, std::nullopt, create_graph)[0];
      return sum(mul(v, first));
    };
    const Tensor second = autograd::grad({directional(x, true)}, {x})[0];
    const std::vector<double> analytic = values_of(second);
    double* data = x.data_ptr<double>();
    constexpr double kStep = 1e-6;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double saved = data[i];
      data[i] = saved + kStep;
      const double above = directional(x, false).item();
      data[i] = saved - kStep;
      const double below = directional(x, false).item();
      data[i] = saved;
      const double numeric = (above - below) / (2.0 * kStep);
      INFO("element ", i, ": analytic ", analytic[i], ", numeric ", numeric);
      CHECK(std::abs(analytic[i] - numeric) <= 1e-6 * (1.0 + std::abs(numeric)));
    }
  }
}

}  // namespace test_diagonal_autograd
