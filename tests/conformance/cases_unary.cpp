// Conformance cases for pointwise unary ops, the host-scalar forms (add_scalar, pow_scalar, ...)
// and the activations' registered backward ops (relu_backward, ...), which broadcast like binary ops.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "reference.h"

namespace conformance::cases_unary {
namespace {

double gelu_exact(double x) { return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2)); }
double gelu_tanh(double x) {
  const double inner = std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x);
  return 0.5 * x * (1.0 + std::tanh(inner));
}
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double relu6_of_x_plus_3(double x) { return std::min(std::max(x + 3.0, 0.0), 6.0); }
double mish(double x) { return x * std::tanh(std::log1p(std::exp(x))); }
double mish_derivative(double x) {
  const double t = std::tanh(std::log1p(std::exp(x)));
  return t + x * sigmoid(x) * (1.0 - t * t);
}
// Inputs that reach all three sides of hardswish and hardsigmoid, away from their kinks at -3 and 3.
Domain around_three() { return avoiding({-3.0, 3.0}, -5.0, 5.0); }
double softplus(double x, double beta, double threshold) {
  return beta * x > threshold ? x : std::log1p(std::exp(beta * x)) / beta;
}

// The rounding ops jump at whole numbers (round at halves): their inputs stay away from both.
Domain away_from_halves() { return avoiding({-2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2}); }

// Inputs avoid each op's kinks (0 for abs, relu, sign) and stay inside its domain.
const UnaryOp kUnaryOps[] = {
    {"neg", [](double x) { return -x; }, real()},
    {"exp", [](double x) { return std::exp(x); }, real()},
    {"expm1", [](double x) { return std::expm1(x); }, real()},
    {"erf", [](double x) { return std::erf(x); }, real(-3.0, 3.0)},
    {"sin", [](double x) { return std::sin(x); }, real(-4.0, 4.0)},
    {"cos", [](double x) { return std::cos(x); }, real(-4.0, 4.0)},
    {"log", [](double x) { return std::log(x); }, positive()},
    {"log1p", [](double x) { return std::log1p(x); }, real(-0.75, 2.0)},
    {"sqrt", [](double x) { return std::sqrt(x); }, positive()},
    {"rsqrt", [](double x) { return 1.0 / std::sqrt(x); }, positive()},
    {"abs", [](double x) { return std::abs(x); }, avoiding({0.0})},
    {"sign", [](double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }, avoiding({0.0})},
    {"reciprocal", [](double x) { return 1.0 / x; }, avoiding({0.0}, -2.0, 2.0)},
    {"relu", [](double x) { return x > 0 ? x : 0.0; }, avoiding({0.0})},
    {"silu", [](double x) { return x * sigmoid(x); }, real(-4.0, 4.0)},
    {"sigmoid", sigmoid, real(-4.0, 4.0)},
    {"tanh", [](double x) { return std::tanh(x); }, real(-3.0, 3.0)},
    {"hardswish", [](double x) { return x * relu6_of_x_plus_3(x) / 6.0; }, around_three()},
    {"hardsigmoid", [](double x) { return relu6_of_x_plus_3(x) / 6.0; }, around_three()},
    {"mish", mish, real(-4.0, 4.0)},
    {"log_sigmoid", [](double x) { return std::log(sigmoid(x)); }, real(-4.0, 4.0)},
    {"floor", [](double x) { return std::floor(x); }, away_from_halves()},
    {"ceil", [](double x) { return std::ceil(x); }, away_from_halves()},
    {"round", [](double x) { return std::nearbyint(x); }, away_from_halves()},
    {"trunc", [](double x) { return std::trunc(x); }, away_from_halves()},
};

Case unary_case(const char* op, const Variant& variant, Attrs attrs, std::function<double(double)> math,
                const std::string& suffix = "") {
  Case c{.op = op,
         .label = variant.label + suffix,
         .inputs = variant.inputs,
         .attrs = attrs,
         .reference = [math](const std::vector<RefTensor>& in, const Attrs&) {
           return std::vector<RefTensor>{unary(in[0], math)};
         },
         .gradcheck = variant.gradcheck};
  return with_half(c, 1e-2);
}

struct ScalarOp {
  const char* op;
  double (*math)(double x, double value);
  Domain domain;
  double values[2];  // two attribute values per op
};

const ScalarOp kScalarOps[] = {
    {"add_scalar", [](double x, double v) { return x + v; }, real(), {1.5, -0.25}},
    {"mul_scalar", [](double x, double v) { return x * v; }, real(), {-2.5, 0.5}},
    {"div_scalar", [](double x, double v) { return x / v; }, real(), {3.0, -0.75}},
    {"pow_scalar", [](double x, double v) { return std::pow(x, v); }, positive(), {2.0, -1.5}},
    {"rsub_scalar", [](double x, double v) { return v - x; }, real(), {1.25, -3.0}},
    {"rdiv_scalar", [](double x, double v) { return v / x; }, avoiding({0.0}, -2.0, 2.0), {2.0, -0.5}},
};

double clamp_between(double x, double low, double high) { return std::min(std::max(x, low), high); }

double gelu_exact_derivative(double x) {
  const double normal_density = std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi);
  return 0.5 * (1.0 + std::erf(x / std::numbers::sqrt2)) + x * normal_density;
}
double gelu_tanh_derivative(double x) {
  const double beta = std::sqrt(2.0 / std::numbers::pi), kappa = 0.044715;
  const double t = std::tanh(beta * (x + kappa * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * beta * (1.0 + 3.0 * kappa * x * x);
}

// (grad, saved) -> grad_input, where `saved` is the forward's output or input.
struct ActivationBackward {
  const char* op;
  double (*math)(double grad, double saved);
  Domain saved;
  Attrs attrs;
};

std::vector<ActivationBackward> activation_backwards() {
  return {
      {"relu_backward", [](double g, double y) { return y > 0 ? g : 0.0; }, integers(-1, 3), {}},  // zeros included
      {"sigmoid_backward", [](double g, double y) { return g * (1.0 - y) * y; }, real(0.01, 0.99), {}},
      {"tanh_backward", [](double g, double y) { return g * (1.0 - y * y); }, real(-0.99, 0.99), {}},
      {"silu_backward", [](double g, double x) { return g * sigmoid(x) * (1.0 + x * (1.0 - sigmoid(x))); }, real(-4, 4), {}},
      {"gelu_backward", [](double g, double x) { return g * gelu_exact_derivative(x); }, real(-3, 3), {{"tanh", false}}},
      {"gelu_backward", [](double g, double x) { return g * gelu_tanh_derivative(x); }, real(-3, 3), {{"tanh", true}}},
      // leaky_relu's at 0 is its negative_slope, as PyTorch's: whole numbers put zeros in.
      {"leaky_relu_backward", [](double g, double x) { return x > 0 ? g : 0.2 * g; }, integers(-2, 3),
       {{"negative_slope", 0.2}}},
      {"elu_backward", [](double g, double x) { return x > 0 ? g : g * 0.5 * std::exp(x); }, real(-3, 3),
       {{"alpha", 0.5}}},
      {"softplus_backward", [](double g, double x) { return 2 * x > 1 ? g : g * sigmoid(2 * x); },
       avoiding({0.5}, -3, 3), {{"beta", 2.0}, {"threshold", 1.0}}},
      {"hardtanh_backward", [](double g, double x) { return x <= -0.5 || x >= 0.75 ? 0.0 : g; },
       avoiding({-0.5, 0.75}), {{"min_val", -0.5}, {"max_val", 0.75}}},
      {"hardswish_backward", [](double g, double x) { return x < -3 ? 0.0 : x <= 3 ? g * (x / 3 + 0.5) : g; },
       around_three(), {}},
      {"hardsigmoid_backward", [](double g, double x) { return x > -3 && x < 3 ? g / 6 : 0.0; }, around_three(), {}},
      {"mish_backward", [](double g, double x) { return g * mish_derivative(x); }, real(-4, 4), {}},
      {"log_sigmoid_backward", [](double g, double x) { return g * (1.0 - sigmoid(x)); }, real(-4, 4), {}},
  };
}

std::vector<Case> unary_cases() {
  std::vector<Case> cases;
  for (const UnaryOp& op : kUnaryOps)
    for (const Variant& variant : unary_variants(op.domain))
      cases.push_back(unary_case(op.op, variant, {}, op.math));

  for (const Variant& variant : unary_variants(real(-3.0, 3.0))) {
    cases.push_back(unary_case("gelu", variant, {{"tanh", false}}, gelu_exact, ", erf form"));
    cases.push_back(unary_case("gelu", variant, {{"tanh", true}}, gelu_tanh, ", tanh approximation"));
  }

  // The parametrized activations with PyTorch's defaults on every layout, then with other values;
  // inputs avoid the kink at 0 and softplus' switch to x at beta x = threshold.
  for (const Variant& variant : unary_variants(avoiding({0.0}))) {
    cases.push_back(unary_case("leaky_relu", variant, {{"negative_slope", 0.01}},
                               [](double x) { return x > 0 ? x : 0.01 * x; }, ", negative_slope 0.01"));
    cases.push_back(unary_case("elu", variant, {{"alpha", 1.0}}, [](double x) { return x > 0 ? x : std::expm1(x); },
                               ", alpha 1"));
    cases.push_back(unary_case("softplus", variant, {{"beta", 1.0}, {"threshold", 20.0}},
                               [](double x) { return softplus(x, 1.0, 20.0); }, ", beta 1 threshold 20"));
  }
  // hardtanh with PyTorch's bounds on every layout, then with others; inputs avoid the bounds.
  for (const Variant& variant : unary_variants(avoiding({-1.0, 1.0}))) {
    cases.push_back(unary_case("hardtanh", variant, {{"min_val", -1.0}, {"max_val", 1.0}},
                               [](double x) { return clamp_between(x, -1.0, 1.0); }, ", min_val -1 max_val 1"));
  }
  cases.push_back(unary_case("hardtanh", unary_variants(avoiding({-0.5, 0.75}))[0],
                             {{"min_val", -0.5}, {"max_val", 0.75}},
                             [](double x) { return clamp_between(x, -0.5, 0.75); }, ", min_val -0.5 max_val 0.75"));
  const Variant away_from_kinks = unary_variants(avoiding({0.0, 0.5}))[0];
  cases.push_back(unary_case("leaky_relu", away_from_kinks, {{"negative_slope", 0.2}},
                             [](double x) { return x > 0 ? x : 0.2 * x; }, ", negative_slope 0.2"));
  cases.push_back(unary_case("elu", away_from_kinks, {{"alpha", 0.5}},
                             [](double x) { return x > 0 ? x : 0.5 * std::expm1(x); }, ", alpha 0.5"));
  cases.push_back(unary_case("softplus", away_from_kinks, {{"beta", 2.0}, {"threshold", 1.0}},
                             [](double x) { return softplus(x, 2.0, 1.0); }, ", beta 2 threshold 1"));

  // clamp: both bounds, only a lower and only an upper bound; inputs avoid the bounds.
  for (const Variant& variant : unary_variants(avoiding({-0.5, 0.75}))) {
    cases.push_back(unary_case("clamp", variant, {{"min", -0.5}, {"max", 0.75}},
                               [](double x) { return clamp_between(x, -0.5, 0.75); }, ", min -0.5 max 0.75"));
  }
  const Variant contiguous = unary_variants(avoiding({-0.5, 0.75}))[0];
  cases.push_back(unary_case("clamp", contiguous, {{"min", -0.5}}, [](double x) { return std::max(x, -0.5); },
                             ", min only"));
  cases.push_back(unary_case("clamp", contiguous, {{"max", 0.75}}, [](double x) { return std::min(x, 0.75); },
                             ", max only"));

  for (const ScalarOp& op : kScalarOps) {
    for (const Variant& variant : unary_variants(op.domain)) {
      const double value = op.values[0];
      auto math = op.math;
      cases.push_back(unary_case(op.op, variant, {{"value", value}},
                                 [math, value](double x) { return math(x, value); },
                                 fmt::format(", value {}", value)));
    }
    const double value = op.values[1];
    auto math = op.math;
    cases.push_back(unary_case(op.op, unary_variants(op.domain)[1], {{"value", value}},
                               [math, value](double x) { return math(x, value); },
                               fmt::format(", value {}", value)));
  }

  for (const ActivationBackward& backward : activation_backwards()) {
    auto math = backward.math;
    const std::string suffix = backward.attrs.size() == 0 ? "" : ", " + backward.attrs.str();
    for (const Variant& variant : binary_variants(real(), backward.saved)) {
      Case c{.op = backward.op, .label = variant.label + suffix, .inputs = variant.inputs, .attrs = backward.attrs,
             .reference = [math](const std::vector<RefTensor>& in, const Attrs&) {
               return std::vector<RefTensor>{binary(in[0], in[1], math)};
             }};
      // Their backward rules (create_graph) are checked on the small shapes; the large one is
      // there for the parallel path's values, and central differences over each of its 33,667
      // elements would take minutes.
      c.gradcheck = variant.inputs[0].sizes.product() < 10000;
      cases.push_back(with_half(c, 1e-2));
    }
  }
  return cases;
}

const CaseRegistration registration("unary", unary_cases);

TEST_CASE("conformance: pointwise unary and scalar ops match float64 references and finite differences") {
  run_cases(unary_cases());
}

}  // namespace
}  // namespace conformance::cases_unary
