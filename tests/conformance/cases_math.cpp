// Conformance cases for the less common elementwise math (runtime/ops/math_ops.cpp): the inverse
// and hyperbolic trigonometric functions, log2, log10, exp2, erfc, atan2, fmod and remainder,
// against float64 references and finite differences on every layout and dtype the harness runs.
#include <doctest/doctest.h>

#include <cmath>

#include "reference.h"

namespace conformance::cases_math {
namespace {

// Domains stay inside each function's domain and away from its poles (tan at pi/2, atanh at 1).
const UnaryOp kUnaryMath[] = {
    {"tan", [](double x) { return std::tan(x); }, real(-1.2, 1.2)},
    {"asin", [](double x) { return std::asin(x); }, real(-0.9, 0.9)},
    {"acos", [](double x) { return std::acos(x); }, real(-0.9, 0.9)},
    {"atan", [](double x) { return std::atan(x); }, real(-3.0, 3.0)},
    {"sinh", [](double x) { return std::sinh(x); }, real(-3.0, 3.0)},
    {"cosh", [](double x) { return std::cosh(x); }, real(-3.0, 3.0)},
    {"asinh", [](double x) { return std::asinh(x); }, real(-3.0, 3.0)},
    {"acosh", [](double x) { return std::acosh(x); }, positive(1.1, 4.0)},
    {"atanh", [](double x) { return std::atanh(x); }, real(-0.9, 0.9)},
    {"log2", [](double x) { return std::log2(x); }, positive()},
    {"log10", [](double x) { return std::log10(x); }, positive()},
    {"exp2", [](double x) { return std::exp2(x); }, real(-3.0, 3.0)},
    {"erfc", [](double x) { return std::erfc(x); }, real(-3.0, 3.0)},
};

double python_remainder(double a, double b) {
  const double mod = std::fmod(a, b);
  return (mod != 0.0 && ((b < 0.0) != (mod < 0.0))) ? mod + b : mod;
}

struct BinaryMath {
  const char* op;
  double (*math)(double, double);
  Domain a, b;
};

// fmod and remainder jump where a / b is whole: random continuous values land there with
// probability 0, and the divisor stays away from 0.
const BinaryMath kBinaryMath[] = {
    {"atan2", [](double a, double b) { return std::atan2(a, b); }, real(), avoiding({0.0})},
    {"fmod", [](double a, double b) { return std::fmod(a, b); }, real(-4.0, 4.0), avoiding({0.0}, -1.5, 1.5)},
    {"remainder", python_remainder, real(-4.0, 4.0), avoiding({0.0}, -1.5, 1.5)},
};

using Reference = std::function<std::vector<RefTensor>(const std::vector<RefTensor>&)>;

Case math_case(const char* op, const Variant& variant, Reference reference) {
  Case c{.op = op,
         .label = variant.label,
         .inputs = variant.inputs,
         .reference = [reference](const std::vector<RefTensor>& in, const Attrs&) { return reference(in); },
         .gradcheck = variant.gradcheck};
  return with_half(c, 1e-2);
}

std::vector<Case> math_cases() {
  std::vector<Case> cases;
  for (const UnaryOp& op : kUnaryMath) {
    for (const Variant& variant : unary_variants(op.domain)) {
      auto math = op.math;
      cases.push_back(math_case(op.op, variant, [math](const std::vector<RefTensor>& in) {
        return std::vector<RefTensor>{unary(in[0], math)};
      }));
    }
  }
  for (const BinaryMath& op : kBinaryMath) {
    for (const Variant& variant : binary_variants(op.a, op.b)) {
      auto math = op.math;
      cases.push_back(math_case(op.op, variant, [math](const std::vector<RefTensor>& in) {
        return std::vector<RefTensor>{binary(in[0], in[1], math)};
      }));
    }
  }
  // Integers keep their dtype in fmod and remainder; divisors of both signs, never 0.
  for (const auto& [op, math] : {std::pair{"fmod", +[](double a, double b) { return std::fmod(a, b); }},
                                 std::pair{"remainder", +python_remainder}}) {
    for (const auto& [label, divisor] : {std::pair{"int64 [3,4] by positive [4]", indices(1, 5)},
                                         std::pair{"int64 [3,4] by negative [4]", indices(-4, 0)}}) {
      Case c{.op = op,
             .label = label,
             .inputs = {{{3, 4}, indices(-9, 10)}, {{4}, divisor}},
             .reference = [math](const std::vector<RefTensor>& in, const Attrs&) {
               return std::vector<RefTensor>{binary(in[0], in[1], math, ember::kInt64)};
             }};
      cases.push_back(c);
    }
  }
  // atan2 of integers is float32, like torch's.
  Case integral_atan2{.op = "atan2",
                      .label = "int64 [3,4] with [4]",
                      .inputs = {{{3, 4}, indices(-3, 4)}, {{4}, indices(1, 4)}},
                      .reference = [](const std::vector<RefTensor>& in, const Attrs&) {
                        return std::vector<RefTensor>{
                            binary(in[0], in[1], [](double a, double b) { return std::atan2(a, b); }, ember::kFloat32)};
                      }};
  cases.push_back(integral_atan2);
  return cases;
}

const CaseRegistration registration("math", math_cases);

TEST_CASE("conformance: inverse and hyperbolic trigonometry, log2, log10, exp2, erfc, atan2, fmod, remainder") {
  run_cases(math_cases());
}

}  // namespace
}  // namespace conformance::cases_math
