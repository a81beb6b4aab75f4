// Optimizer, scheduler and gradient-clipping behaviour checked against PyTorch 2.x where earlier
// tests left a gap: expected values come from PyTorch's documented algorithms and its source
// (torch/nn/utils/clip_grad.py, aten's linalg_vector_norm and _foreach_norm), computed here in
// float64 loops independent of ember.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "runtime/ember.h"

using namespace ember;

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("clip_grad_norm_ refuses an empty gradient for the norms without an identity, as PyTorch") {
  // PyTorch takes vector_norm (or _foreach_norm) of every gradient. The max behind the infinity
  // norm and the min behind -infinity and p < 0 have no identity, so an empty gradient raises
  // "linalg.vector_norm cannot compute the inf norm on an empty tensor because the operation does
  // not have an identity" there; ember used to skip it and clip by the other gradients.
  for (const double norm_type : {kInfinity, -kInfinity, -1.0}) {
    CAPTURE(norm_type);
    Tensor empty = zeros({0, 3}, {.dtype = kFloat64}).requires_grad_();
    Tensor full = zeros({2}, {.dtype = kFloat64}).requires_grad_();
    empty.set_grad(zeros({0, 3}, {.dtype = kFloat64}));
    full.set_grad(from_vector<double>({3.0, -4.0}));
    CHECK_THROWS_WITH_AS(optim::clip_grad_norm_({full, empty}, 1.0, norm_type),
                         doctest::Contains("clip_grad_norm_: the gradient of parameter 1 (shape [0, 3]) is empty"), Error);
    CHECK(full.grad().to_vector<double>() == std::vector<double>{3.0, -4.0});  // nothing scaled
    CHECK_THROWS_WITH_AS(nn::utils::get_total_norm({full.grad(), empty.grad()}, norm_type),
                         doctest::Contains("get_total_norm: tensor 1 (shape [0, 3]) is empty"), Error);
  }
  // The norms with an identity take an empty gradient as 0 (a zero count for p = 0), as in PyTorch:
  // the total is vector_norm([vector_norm(g, p) for g in grads], p).
  for (const double norm_type : {0.0, 0.5, 1.0, 2.0, 3.0}) {
    CAPTURE(norm_type);
    Tensor empty = zeros({0}, {.dtype = kFloat64}).requires_grad_();
    Tensor full = zeros({2}, {.dtype = kFloat64}).requires_grad_();
    empty.set_grad(zeros({0}, {.dtype = kFloat64}));
    full.set_grad(from_vector<double>({3.0, -4.0}));
    const double expected =
        norm_type == 0.0 ? 1.0 : std::pow(std::pow(3.0, norm_type) + std::pow(4.0, norm_type), 1.0 / norm_type);
    CHECK(optim::clip_grad_norm_({empty, full}, 1e9, norm_type) == doctest::Approx(expected).epsilon(1e-14));
  }
}

TEST_CASE("an optimizer takes a non-leaf tensor that retains its gradient, as PyTorch does") {
  // torch.optim.Optimizer.add_param_group refuses a parameter only when it is neither a leaf nor
  // retains_grad ("can't optimize a non-leaf Tensor"): a retain_grad()ed intermediate is stepped.
  const std::vector<double> start{0.5, -1.5, 2.0};
  Tensor leaf = from_vector<double>(start).requires_grad_();
  Tensor intermediate = leaf * 3.0;
  CHECK_THROWS_WITH_AS(optim::SGD({intermediate}, {.lr = 0.1}), doctest::Contains("not a leaf"), Error);
  intermediate.retain_grad();
  optim::SGD optimizer({intermediate}, {.lr = 0.1, .momentum = 0.9});
  (intermediate * intermediate).sum().backward();
  optimizer.step();
  // d(sum y^2)/dy = 2y; SGD's first momentum step is y - lr * 2y.
  std::vector<double> expected;
  for (double value : start) expected.push_back(3.0 * value - 0.1 * 2.0 * 3.0 * value);
  const std::vector<double> actual = intermediate.to_vector<double>();
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) CHECK(actual[i] == doctest::Approx(expected[i]).epsilon(1e-15));
  CHECK(leaf.to_vector<double>() == start);  // the leaf below is untouched
}

TEST_CASE("add_param_group takes an empty group, as PyTorch's does; the constructor still needs parameters") {
  // torch.optim refuses an empty list in the constructor ("optimizer got an empty parameter
  // list") but add_param_group appends any group; its rate is then scheduled like the others.
  Tensor param = from_vector<double>({1.0, -2.0}).requires_grad_();
  CHECK_THROWS_WITH_AS(optim::Adam(std::vector<Tensor>{}), doctest::Contains("empty parameter list"), Error);
  optim::Adam optimizer({param}, {.lr = 0.1});
  optimizer.add_param_group({}, optim::AdamOptions{.lr = 0.5});
  REQUIRE(optimizer.num_param_groups() == 2);
  optim::StepLR scheduler(optimizer, 1, 0.5);
  param.set_grad(from_vector<double>({0.25, 4.0}));
  optimizer.step();
  scheduler.step();
  CHECK(optimizer.get_lr(1) == 0.25);
  // The first Adam step moves every element by lr against its gradient's sign (up to eps).
  const std::vector<double> values = param.to_vector<double>();
  CHECK(values[0] == doctest::Approx(0.9).epsilon(1e-7));
  CHECK(values[1] == doctest::Approx(-2.1).epsilon(1e-7));
  const optim::OptimizerState state = optimizer.state_dict();
  CHECK(state.scalars.at("param_groups.1.num_params") == 0.0);
  optimizer.load_state_dict(state);
  CHECK(optimizer.get_lr(1) == 0.25);
}
