// create_graph: gradients with history, differentiated again. Closed forms (x^3, tanh), a
// Hessian-vector product and a WGAN-GP gradient-penalty step against central differences of
// first-order gradients, .grad with history, and the refusal of a backward that is not
// differentiable. Every op's double backward: the conformance suite's second-order check.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"
#include "runtime/ops/registry.h"

namespace test_double_backward {

using namespace ember;
using ember::testing::error_of;
using ember::testing::small_tensor;
using ember::testing::values_of;

namespace {

void check_close(const std::vector<double>& actual, const std::vector<double>& expected, double tolerance) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("element ", i, ": ", actual[i], " vs ", expected[i]);
    CHECK(std::abs(actual[i] - expected[i]) <= tolerance * (1.0 + std::abs(expected[i])));
  }
}

// A two-layer MLP's loss on fixed data: linear, tanh, linear, gelu, linear, cross-entropy.
struct Mlp {
  Tensor input = small_tensor({4, 3}, 1);
  Tensor target = from_vector<int64_t>({0, 2, 1, 2}, {4});
  std::vector<Tensor> parameters{small_tensor({5, 3}, 2).requires_grad_(), small_tensor({5}, 3).requires_grad_(),
                                 small_tensor({4, 5}, 4).requires_grad_(), small_tensor({3, 4}, 5).requires_grad_(),
                                 small_tensor({3}, 6).requires_grad_()};
  Tensor loss(const std::vector<Tensor>& p) const {
    const Tensor hidden = tanh(linear(input, p[0], p[1]));
    const Tensor features = gelu(matmul(hidden, p[2].t()));
    return cross_entropy(linear(features, p[3], p[4]), target);
  }
};

// The parameters moved by `step` times `direction`, as new leaves.
std::vector<Tensor> moved(const std::vector<Tensor>& parameters, const std::vector<Tensor>& direction, double step) {
  NoGradGuard no_grad;
  std::vector<Tensor> result;
  for (size_t i = 0; i < parameters.size(); ++i)
    result.push_back(add(parameters[i], mul(direction[i], step)).requires_grad_());
  return result;
}

std::vector<double> flattened(const std::vector<Tensor>& tensors) {
  std::vector<double> all;
  for (const Tensor& tensor : tensors) {
    const std::vector<double> part = values_of(tensor);
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

}  // namespace

TEST_CASE("create_graph: d2/dx2 of x^3 is 6x, through pow and through mul") {
  const Tensor x = from_vector<double>({-1.5, 0.5, 2.0}, {3}, {.dtype = kFloat64}).requires_grad_();
  for (const bool through_pow : {true, false}) {
    INFO((through_pow ? "pow(x, 3)" : "x * x * x"));
    const Tensor cube = through_pow ? ember::pow(x, 3.0) : mul(mul(x, x), x);
    const Tensor first = autograd::grad({cube.sum()}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
    CHECK(first.requires_grad());
    check_close(values_of(first), {6.75, 0.75, 12.0}, 1e-14);  // 3x^2
    const Tensor second = autograd::grad({first.sum()}, {x}, {}, std::nullopt, true)[0];
    check_close(values_of(second), {-9.0, 3.0, 12.0}, 1e-14);  // 6x
    check_close(values_of(autograd::grad({second.sum()}, {x})[0]), {6.0, 6.0, 6.0}, 1e-14);
  }
}

TEST_CASE("create_graph: d2/dx2 of tanh is -2 tanh (1 - tanh^2)") {
  const std::vector<double> points{-1.2, -0.3, 0.4, 2.5};
  const Tensor x = from_vector<double>(points, {4}, {.dtype = kFloat64}).requires_grad_();
  const Tensor first = autograd::grad({tanh(x).sum()}, {x}, {}, std::nullopt, true)[0];
  const Tensor second = autograd::grad({first.sum()}, {x})[0];
  std::vector<double> expected;
  for (double p : points) expected.push_back(-2.0 * std::tanh(p) * (1.0 - std::tanh(p) * std::tanh(p)));
  check_close(values_of(second), expected, 1e-13);
}

TEST_CASE("create_graph: a Hessian-vector product of an MLP equals central differences of its gradient") {
  const Mlp mlp;
  std::vector<Tensor> direction;
  for (size_t i = 0; i < mlp.parameters.size(); ++i)
    direction.push_back(small_tensor(mlp.parameters[i].sizes(), 20 + static_cast<uint32_t>(i)));
  const std::vector<Tensor> gradient =
      autograd::grad({mlp.loss(mlp.parameters)}, mlp.parameters, {}, std::nullopt, /*create_graph=*/true);
  Tensor projected = zeros({}, {.dtype = kFloat64});
  for (size_t i = 0; i < gradient.size(); ++i) projected = add(projected, mul(gradient[i], direction[i]).sum());
  const std::vector<double> hessian_times_direction = flattened(autograd::grad({projected}, mlp.parameters));
  constexpr double kStep = 1e-6;
  const auto gradient_at = [&](double step) {
    const std::vector<Tensor> p = moved(mlp.parameters, direction, step);
    return flattened(autograd::grad({mlp.loss(p)}, p));
  };
  const std::vector<double> above = gradient_at(kStep), below = gradient_at(-kStep);
  std::vector<double> numeric;
  for (size_t i = 0; i < above.size(); ++i) numeric.push_back((above[i] - below[i]) / (2 * kStep));
  check_close(hessian_times_direction, numeric, 1e-6);
  for (const Tensor& parameter : mlp.parameters) CHECK_FALSE(parameter.grad().defined());
}

TEST_CASE("create_graph: a WGAN-GP step's parameter gradients equal central differences of its loss") {
  // critic(x) = linear(leaky_relu(linear(x))); loss = mean(critic(x)) + 10 mean((|d critic / dx|_2 - 1)^2),
  // the gradient penalty of Gulrajani et al. (2017), with x the points the penalty is taken at.
  const Tensor points = small_tensor({6, 3}, 30);
  std::vector<Tensor> parameters{small_tensor({4, 3}, 31).requires_grad_(), small_tensor({4}, 32).requires_grad_(),
                                 small_tensor({1, 4}, 33).requires_grad_(), small_tensor({1}, 34).requires_grad_()};
  const auto loss_of = [&](const std::vector<Tensor>& p, bool create_graph) {
    const Tensor x = points.detach().requires_grad_();
    const Tensor critic = linear(leaky_relu(linear(x, p[0], p[1]), 0.2), p[2], p[3]);
    const Tensor input_gradient = autograd::grad({critic.sum()}, {x}, {}, std::nullopt, create_graph)[0];
    const Tensor penalty = ember::pow(sub(norm(input_gradient, 2.0, {1}), 1.0), 2.0).mean();
    return add(critic.mean(), mul(penalty, 10.0));
  };
  loss_of(parameters, /*create_graph=*/true).backward();
  std::vector<Tensor> analytic;
  for (const Tensor& parameter : parameters) analytic.push_back(parameter.grad());
  constexpr double kStep = 1e-6;
  for (size_t i = 0; i < parameters.size(); ++i) {
    const std::vector<double> computed = values_of(analytic[i]);
    for (int64_t e = 0; e < parameters[i].numel(); ++e) {
      std::vector<double> numeric_parts;
      for (const double step : {kStep, -kStep}) {
        std::vector<Tensor> p = parameters;
        std::vector<double> shifted = values_of(parameters[i]);
        shifted[e] += step;
        p[i] = from_vector<double>(shifted, parameters[i].sizes(), {.dtype = kFloat64}).requires_grad_();
        numeric_parts.push_back(loss_of(p, false).item());
      }
      const double numeric = (numeric_parts[0] - numeric_parts[1]) / (2 * kStep);
      INFO("parameter ", i, " element ", e, ": autograd ", computed[e], ", finite difference ", numeric);
      CHECK(std::abs(computed[e] - numeric) <= 1e-6 * (1.0 + std::abs(numeric)));
    }
  }
}

TEST_CASE("create_graph: backward accumulates a .grad with history, out of place") {
  Tensor x = from_vector<double>({1.0, -2.0}, {2}, {.dtype = kFloat64}).requires_grad_();
  ember::pow(x, 3.0).sum().backward({}, std::nullopt, /*create_graph=*/true);
  const Tensor first = x.grad();
  REQUIRE(first.defined());
  CHECK(first.requires_grad());
  check_close(values_of(first), {3.0, 12.0}, 1e-14);
  // A second create_graph backward adds out of place: the .grad held above keeps its value.
  mul(x, x).sum().backward({}, std::nullopt, true);
  check_close(values_of(first), {3.0, 12.0}, 1e-14);
  check_close(values_of(x.grad()), {5.0, 8.0}, 1e-14);  // 3x^2 + 2x
  check_close(values_of(autograd::grad({x.grad().sum()}, {x})[0]), {8.0, -10.0}, 1e-14);  // 6x + 2
  // ember::backward takes the flag too; retain_graph follows it.
  Tensor y = x.detach().requires_grad_();
  const Tensor loss = exp(y).sum();
  ember::backward({loss}, {}, std::nullopt, true);
  ember::backward({loss});  // retained by create_graph
  check_close(values_of(y.grad()), values_of(mul(exp(y.detach()), 2.0)), 1e-14);
  // A .grad with history holds its leaf (the cycle PyTorch has too): cleared, both are freed.
  x.set_grad(Tensor());
  y.set_grad(Tensor());
}

TEST_CASE("create_graph: an in-place update through a view is differentiated twice (CopySlices)") {
  const Tensor x = small_tensor({2, 3}, 40).requires_grad_();
  const auto function = [&](const Tensor& input) {
    Tensor base = mul(input, input);
    Tensor row = base.slice(0, 0, 1);
    row.mul_(input.slice(0, 1, 2));  // base[0] *= input[1]
    return base.sum();
  };
  const Tensor first = autograd::grad({function(x)}, {x}, {}, std::nullopt, true)[0];
  const Tensor direction = small_tensor({2, 3}, 41);
  const std::vector<double> analytic = values_of(autograd::grad({mul(first, direction).sum()}, {x})[0]);
  constexpr double kStep = 1e-6;
  const auto projected_gradient_at = [&](double step) {
    const Tensor moved_x = add(x.detach(), mul(direction, step)).requires_grad_();
    // Central differences of the gradient along `direction` give the Hessian times it; the
    // Hessian is symmetric, so this is also d<first, direction>/dx.
    return values_of(autograd::grad({function(moved_x)}, {moved_x})[0]);
  };
  const std::vector<double> above = projected_gradient_at(kStep), below = projected_gradient_at(-kStep);
  std::vector<double> numeric;
  for (size_t i = 0; i < above.size(); ++i) numeric.push_back((above[i] - below[i]) / (2 * kStep));
  check_close(analytic, numeric, 1e-6);
}

namespace {

// An op whose backward rule calls an op without a backward rule: the case a create_graph
// backward must refuse rather than treat the inner op's result as a constant.
void same_shape(const OpCall& call, OutputMetas& outputs) {
  outputs[0].sizes = call.input(0).sizes();
  outputs[0].dtype = call.input(0).dtype();
}
void cube_kernel(const OpCall& call, TensorList& out) {
  NoGradGuard no_grad;
  const Tensor& x = call.input(0);
  out[0].copy_(mul(mul(x, x), x));
}
void cube_backward_kernel(const OpCall& call, TensorList& out) {
  NoGradGuard no_grad;
  const Tensor& x = call.input(1);
  out[0].copy_(mul(call.input(0), mul(mul(x, x), 3.0)));
}
OpDef local_op(const char* name, ShapeRule infer, Kernel kernel, BackwardRule backward) {
  OpDef op;
  op.name = name;
  op.infer = infer;
  op.kernels[static_cast<int>(DeviceType::CPU)] = kernel;
  op.backward = backward;
  op.save_inputs = 0b1;
  return op;
}
void cube_backward_shape(const OpCall& call, OutputMetas& outputs) { same_shape(call, outputs); }
const OpDef cube_backward_op = local_op("test_cube_backward", cube_backward_shape, cube_backward_kernel, nullptr);
void cube_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = dispatch_one(cube_backward_op, {ctx.grad(), ctx.input(0)});
}
const OpDef cube_op = local_op("test_cube", same_shape, cube_kernel, cube_backward);

}  // namespace

TEST_CASE("create_graph: a backward made of an op without a backward rule is refused, naming both ops") {
  const Tensor x = from_vector<double>({1.0, 2.0}, {2}, {.dtype = kFloat64}).requires_grad_();
  const Tensor y = dispatch_one(cube_op, {x}).sum();
  check_close(values_of(autograd::grad({y}, {x}, {}, true)[0]), {3.0, 12.0}, 1e-14);  // create_graph=false works
  const std::string message = error_of([&] { autograd::grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true); });
  CHECK(message.find("test_cube's backward is not differentiable (create_graph=true): it calls test_cube_backward, "
                     "which has no backward rule") != std::string::npos);
  CHECK(error_of([&] { y.backward({}, true, /*create_graph=*/true); })
            .find("test_cube's backward is not differentiable (create_graph=true)") != std::string::npos);
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("create_graph: a .grad with history holds its leaf until cleared, autograd::grad holds nothing") {
  // As in PyTorch: .grad -> its history -> the leaf's AccumulateGrad -> the leaf is a cycle.
  std::weak_ptr<TensorImpl> leaf;
  {
    Tensor x = from_vector<double>({1.0, 2.0}, {2}, {.dtype = kFloat64}).requires_grad_();
    leaf = x.impl_ptr();
    mul(mul(x, x), x).sum().backward({}, std::nullopt, /*create_graph=*/true);
    check_close(values_of(x.grad()), {3.0, 12.0}, 1e-14);
    x.set_grad(Tensor());
  }
  CHECK(leaf.expired());
  {
    const Tensor x = from_vector<double>({1.0, 2.0}, {2}, {.dtype = kFloat64}).requires_grad_();
    leaf = x.impl_ptr();
    const Tensor first = autograd::grad({mul(mul(x, x), x).sum()}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
    check_close(values_of(first), {3.0, 12.0}, 1e-14);
  }
  CHECK(leaf.expired());
}

}  // namespace test_double_backward
